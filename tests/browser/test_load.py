"""The 30-student load tests (benchmarks/load_test.py, its three scenarios in browsers, and
benchmarks/protocol_load_test.py, two of them with protocol clients) with their goals as assertions.
Slow: run with `pytest -m slow`.

The browsers share the server's 2 cores, and 30 Chromium pages want about as much CPU as the server's training:
whichever has priority leaves the other short. A timing goal is about the server, so (a) runs with the browsers at
the lowest priority; seeing one's queue place is about the pages, so (b) runs with the browsers at the server's
own priority (docs/classroom.md has both scenarios at both priorities). A class (c) runs the server on one CPU and
the 31 browsers on the other: sharing the server's CPUs, starved browsers lost their connections (docs/classroom.md)."""

import json
import subprocess
import sys

import pytest
from conftest import requires_chromium

from harness.paths import ARTIFACTS, ROOT

pytestmark = [pytest.mark.slow, requires_chromium]

MAX_RSS_MB = 2 * 1024  # the goal; Community Cloud allows 2.7 GB
MAX_SLOTS = 2  # training slots on a 2-core server: the runs that start without queueing


@pytest.mark.parametrize(
    "scenario, browser_nice, server_cpus", [("defaults", 19, 0), ("seeds", 0, 0), ("class", 19, 1)]
)
def test_thirty_students_press_start_together(scenario, browser_nice, server_cpus):
    out = ARTIFACTS / f"load_test-{scenario}.json"
    out.unlink(missing_ok=True)
    done = subprocess.run(
        [
            sys.executable,
            "benchmarks/load_test.py",
            "--sessions",
            "30",
            "--trainers",
            "30",
            "--scenario",
            scenario,
            "--browser-nice",
            str(browser_nice),
            "--server-cpus",
            str(server_cpus),
            "--json",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    assert out.exists(), f"the load test wrote no summary (exit {done.returncode}):\n{done.stderr[-3000:]}"
    summary = json.loads(out.read_text())
    training = summary["training"]
    assert summary["served"] == 30, summary["failures"]
    assert summary["errors"] == 0, summary["failures"]
    outcomes = [training[outcome] for outcome in ("started", "completed", "refused", "lapsed", "failed")]
    assert outcomes == [30, 30, 0, 0, 0], training
    if scenario == "defaults":  # one run, joined by everyone
        assert training["start_to_finished_s"]["p95"] <= 20, training
    elif scenario == "class":  # the teacher's board saw the whole class finish, and never failed
        assert summary["class"]["board_texts"][-1] == "30 students · 30 finished", summary["class"]
        assert not summary["class"]["board_errors"], summary["class"]
    else:  # distinct runs: whoever waited was sent their place and saw it
        assert training["sent_queue_place"] >= 30 - MAX_SLOTS, training
        assert training["saw_queue_place"] >= 30 - MAX_SLOTS, training
    assert summary["peak_rss_mb"] < MAX_RSS_MB, summary["peak_rss_mb"]
    assert done.returncode == 0, done.stdout[-3000:]


@pytest.mark.parametrize("scenario", ["defaults", "seeds"])
def test_thirty_protocol_clients_press_start_together(scenario):
    """benchmarks/protocol_load_test.py: 30 sessions without browsers, so the server has its cores to itself."""
    out = ARTIFACTS / f"protocol_load_test-{scenario}.json"
    out.unlink(missing_ok=True)
    command = [sys.executable, "benchmarks/protocol_load_test.py", "--scenario", scenario, "--json", str(out)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=1200, check=False)
    assert out.exists(), f"the load test wrote no summary (exit {done.returncode}):\n{done.stderr[-3000:]}"
    summary = json.loads(out.read_text())
    training = summary["training"]
    assert summary["served"] == 30 and summary["errors"] == 0, summary["failures"]
    outcomes = [training[outcome] for outcome in ("completed", "refused", "lapsed", "failed")]
    assert outcomes == [30, 0, 0, 0], training
    if scenario == "defaults":  # one run, joined by everyone: every student but its first is told so
        assert summary["runs_on_server"]["runs"] == 1 and training["saw_shared_line"] >= 29, summary
    else:  # distinct runs: every one trained, and whoever waited was sent their place
        assert summary["runs_on_server"]["runs"] == 30 and training["received_queue_place"] >= 30 - MAX_SLOTS, summary
    assert summary["peak_rss_mb"] < MAX_RSS_MB, summary["peak_rss_mb"]
    assert done.returncode == 0, done.stdout[-3000:]
