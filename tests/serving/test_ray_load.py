"""Load test (b) on both transports (benchmarks/ray_load_test.py), with the goals of training on a Ray cluster as
assertions: 30 students with a seed each, on a local two-node cluster as on the server's own workers, all finish;
the cluster's p95 from Start to finished is within 1.25 times the server's own, measured in the same run; and the
first chart point comes at most 1 s after Start. Slow (about 4 minutes): run with `pytest -m slow`."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
MAX_P95_RATIO = 1.25  # the cluster's p95 against the server's own workers'
MAX_FIRST_POINT_S = 1.0


def test_thirty_students_with_a_seed_each_train_on_a_cluster_about_as_fast_as_on_the_servers_own_workers(tmp_path):
    out = tmp_path / "ray_load_test.json"
    done = subprocess.run(
        [sys.executable, "benchmarks/ray_load_test.py", "--sessions", "30", "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert out.exists(), f"the load test wrote no summary (exit {done.returncode}):\n{done.stderr[-3000:]}"
    summaries = json.loads(out.read_text())
    for backend, summary in summaries.items():
        training = summary["training"]
        outcomes = [training[outcome] for outcome in ("completed", "refused", "lapsed", "failed")]
        assert summary["errors"] == 0 and outcomes == [30, 0, 0, 0], (backend, summary["failures"], outcomes)
    local, ray = (summaries[backend]["training"] for backend in ("local", "ray"))
    assert ray["start_to_finished_s"]["p95"] <= MAX_P95_RATIO * local["start_to_finished_s"]["p95"]
    assert ray["start_to_first_chart_point_s"] <= MAX_FIRST_POINT_S
