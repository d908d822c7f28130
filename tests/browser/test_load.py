"""The 30-student load test (tests/load_test.py) with its goals as assertions. Slow: run with `pytest -m slow`."""

import json
import subprocess
import sys

import pytest
from conftest import ARTIFACTS, ROOT, requires_chromium

pytestmark = [pytest.mark.slow, pytest.mark.browser, requires_chromium]

MAX_RSS_MB = 2.5 * 1024


def test_thirty_students_at_once():
    out = ARTIFACTS / "load_test.json"
    out.unlink(missing_ok=True)
    done = subprocess.run(
        [sys.executable, "tests/load_test.py", "--sessions", "30", "--trainers", "10", "--json", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert out.exists(), f"the load test wrote no summary (exit {done.returncode}):\n{done.stderr[-3000:]}"
    summary = json.loads(out.read_text())
    training = summary["training"]
    assert summary["served"] == 30, summary["failures"]
    assert summary["errors"] == 0, summary["failures"]
    assert training["started"] == 10
    assert training["completed"] + training["refused"] == 10, training
    assert training["completed"] >= 1, training
    assert summary["peak_rss_mb"] < MAX_RSS_MB, summary["peak_rss_mb"]
    assert done.returncode == 0, done.stdout[-3000:]
