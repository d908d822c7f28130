"""Runs that train in worker processes: the same run as on a thread, controlled the same way, nothing left behind
when a worker dies, falls silent, or the registry closes, and a run's end crossing the pipe in words a page
translates."""

import signal
import subprocess
import sys
import threading
from dataclasses import replace
from multiprocessing import Pipe
from pathlib import Path

import pytest

from tests.helpers import wait_until
from tests.helpers.serving import ENDLESS, ZH, alone, moving, pause_step_and_resume, same_weights, settings
from transformer.i18n import N_, Message
from transformer.serving import RunRegistry, ServerSettings
from transformer.serving import worker_link as worker_link_module
from transformer.serving.protocol import RunEnded, receive, send
from transformer.serving.worker import glibc, portable

pytestmark = pytest.mark.heavy  # each test trains in worker processes
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def registry():
    registry = RunRegistry(ServerSettings(training_slots=2, max_queue=4, worker_processes=True))
    wait_until(lambda: all(worker is not None for worker in registry.workers), timeout=60.0)
    yield registry
    registry.close()


def worker_of(registry: RunRegistry, run) -> worker_link_module.WorkerLink:
    slot = next(i for i, runs in enumerate(registry._slots) if run in runs)
    return registry.workers[slot]


def test_a_run_in_a_worker_is_the_run_its_settings_make_alone_with_another_run_beside_it(registry):
    other = registry.submit("b", *settings(seed=9, **ENDLESS))
    try:
        run = registry.submit("a", *settings(steps=60, early_stop=False, record_attention=True))
        assert moving(run, 30.0) and worker_of(registry, run).process is not None  # a process
        assert run.wait_until_done(60.0)
    finally:
        registry.leave("b", other)
    reference, rows = alone(*settings(steps=60, early_stop=False, record_attention=True))
    assert run.error is None and replace(run.result, seconds=0) == replace(reference.result, seconds=0)
    assert same_weights(run.model(), reference.model)
    assert run.losses == reference.step_losses
    assert [{k: v for k, v in row.items() if k not in ("tokens_per_s", "elapsed_s")} for row in run.rows] == [
        {k: v for k, v in row.items() if k not in ("tokens_per_s", "elapsed_s")} for row in rows
    ]
    assert [s["step"] for s in run.attention] == [s["step"] for s in reference.attention_snapshots]
    assert other.wait_until_done(30.0)


def test_pause_step_and_resume_in_a_worker_end_with_the_weights_of_an_unpaused_run(registry):
    configs = settings(seed=1, steps=150, early_stop=False)
    run = registry.submit("a", *configs)
    pause_step_and_resume(run)
    assert run.wait_until_done(60.0)
    assert run.error is None and run.result.steps == 150
    assert same_weights(run.model(), alone(*configs)[0].model)


def test_stop_reaches_a_worker_asked_before_it_started_or_while_it_trains(registry):
    blockers = [registry.submit(f"x{seed}", *settings(seed=seed, **ENDLESS)) for seed in (20, 21)]
    early = registry.submit("a", *settings(seed=2, **ENDLESS))
    assert early.status == "queued"
    early.stop()  # asked while queued: sent as a worker takes it
    for i, blocker in enumerate(blockers):
        registry.leave(f"x{20 + i}", blocker)
    assert early.wait_until_done(30.0) and early.error is None and early.result.reason == "stopped"
    running = registry.submit("b", *settings(seed=3, **ENDLESS))
    wait_until(lambda: running.status != "queued")
    assert moving(running, 30.0)
    worker = worker_of(registry, running)
    registry.leave("b", running)
    assert running.wait_until_done(10.0) and running.result.reason == "stopped" and running.result.steps > 0
    assert worker.process.poll() is None  # a clean end: the worker waits for the next run


def test_a_worker_that_dies_mid_run_leaves_its_last_snapshot_in_hand_and_is_replaced(registry):
    run = registry.submit("a", *settings(seed=4, **ENDLESS, eval_every=5))
    wait_until(lambda: len(run.rows) >= 2, timeout=60.0)
    worker_of(registry, run).process.kill()
    assert run.wait_until_done(30.0) and run.error is None and run.result.reason == "stopped"
    kept = int(run.rows[-1]["step"])
    assert run.result.steps == kept and run.result.exact_match == run.rows[-1]["exact_match"]
    assert run.notice.startswith("the training process ended unexpectedly at step ")
    assert run.notice.endswith(f"; the model kept is its snapshot of step {kept}")
    assert ZH(run.notice).startswith("训练进程意外结束（在第 ") and ZH(run.notice).endswith(f"第 {kept} 步的快照")
    assert same_weights(run.model(), alone(*settings(seed=4, steps=kept, early_stop=False, eval_every=5))[0].model)
    after = registry.submit("b", *settings(seed=5, steps=30, early_stop=False))  # a fresh worker takes its place
    assert after.wait_until_done(60.0) and after.error is None and after.result.steps == 30


def test_a_worker_that_dies_before_a_first_snapshot_ends_its_run_with_a_message(registry):
    run = registry.submit("a", *settings(seed=8, **ENDLESS, eval_every=10**6))  # no metric row before the end
    wait_until(lambda: run.status != "queued")
    assert moving(run, 30.0)
    worker_of(registry, run).process.kill()
    assert run.wait_until_done(30.0) and run.result is None and run.model() is None
    assert run.error == "the training process ended unexpectedly" and ZH(run.error) == "训练进程意外结束"


def test_a_worker_holding_more_memory_than_allowed_after_a_run_restarts_and_the_queue_goes_on():
    registry = RunRegistry(ServerSettings(training_slots=1, max_queue=2, worker_processes=True, worker_max_mb=100))
    try:
        wait_until(lambda: registry.workers[0] is not None, timeout=60.0)
        first_worker = registry.workers[0]
        assert first_worker.resident_mb() > 100  # torch alone takes more
        first = registry.submit("a", *settings(seed=10, steps=20, early_stop=False))
        queued = registry.submit("b", *settings(seed=11, steps=20, early_stop=False))
        assert queued.status == "queued"
        assert first.wait_until_done(60.0) and queued.wait_until_done(120.0)
        assert first.error is None and queued.error is None and queued.result.steps == 20
        assert first_worker.process.poll() is not None and registry.workers[0] is not first_worker
    finally:
        registry.close()


def test_a_worker_under_the_memory_threshold_after_a_run_trains_the_next_one(registry):
    wait_until(lambda: all(worker is not None for worker in registry.workers), timeout=60.0)
    workers = list(registry.workers)
    run = registry.submit("a", *settings(seed=12, steps=20, early_stop=False))
    assert run.wait_until_done(60.0) and run.error is None
    assert registry.workers == workers  # under LAB_WORKER_MAX_MB: kept
    assert all(worker.process.poll() is None for worker in workers)


def test_a_worker_that_stops_answering_is_closed_and_its_run_ends_with_a_message(registry, monkeypatch):
    monkeypatch.setattr(worker_link_module, "SILENCE_LIMIT_S", 1.0)
    run = registry.submit("a", *settings(seed=6, **ENDLESS, eval_every=10**6))  # no snapshot to keep
    wait_until(lambda: run.status != "queued")
    assert moving(run, 30.0)
    worker = worker_of(registry, run)
    worker.process.send_signal(signal.SIGSTOP)  # hung: alive, but silent
    assert run.wait_until_done(30.0) and run.error == "the training process stopped answering"
    assert ZH(run.error) == "训练进程不再响应"
    wait_until(lambda: worker.process.poll() is not None, timeout=10.0)  # closed, not handed the next run


def test_closing_the_registry_leaves_no_worker_process():
    registry = RunRegistry(ServerSettings(training_slots=2, worker_processes=True))
    wait_until(lambda: all(worker is not None for worker in registry.workers), timeout=60.0)
    workers = list(registry.workers)
    run = registry.submit("a", *settings(steps=20, early_stop=False))
    assert run.wait_until_done(60.0)
    registry.close()
    assert all(worker.process.poll() is not None for worker in workers)


def test_a_run_s_error_and_notice_cross_the_pipe_as_messages_a_page_translates():
    error = Message(N_("training failed: {error}"), error="RuntimeError('boom')")
    notice = Message(N_("a pause lasted over {limit:g} s, the longest one pause may last"), limit=120.0)
    ours, theirs = Pipe()
    send(theirs, RunEnded(0, None, portable(error), None, notice))
    ended = receive(ours)
    assert (ended.error.template, ended.error.params) == (error.template, error.params) and ended.error == error
    assert ZH(ended.error) == "训练失败：RuntimeError('boom')"
    assert ZH(ended.notice) == "一次暂停超过了 120 秒，这是单次暂停的最长时限"


def test_an_error_whose_parameters_do_not_pickle_crosses_as_its_english_text():
    lock = threading.Lock()
    error = Message(N_("training failed: {error}"), error=lock)
    crossing = portable(error)
    assert type(crossing) is str and crossing == f"training failed: {lock}"
    ours, theirs = Pipe()
    send(theirs, RunEnded(0, None, crossing, None, None))
    assert receive(ours).error == crossing
    assert portable(None) is None and portable("plain English") == "plain English"


# The Train page's default run for 100 steps in a fresh process, after a first one to warm up: the page faults it
# takes, a step (its metric rows, every 25 steps, score 256 held-out sequences).
RUN_FAULTS = """
import resource, sys
from dataclasses import replace
import torch
from transformer.run_configs import default_configs
from transformer.serving.worker import keep_freed_memory
from transformer.training import Trainer
torch.set_num_threads(1)
if sys.argv[1] == "tuned":
    keep_freed_memory()
model, data, train = default_configs(0, device="cpu")
Trainer(model, data, replace(train, steps=30, early_stop=False)).run()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
Trainer(model, data, replace(train, steps=100, early_stop=False)).run()
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 100)
"""


@pytest.mark.skipif(glibc() is None, reason="the worker tunes glibc's allocator only")
def test_a_worker_s_run_reuses_the_memory_it_freed_instead_of_faulting_it_in_again():
    """glibc's defaults map a run's larger tensors (a metric row's scoring) afresh and give them back, so each row
    faults their pages in again; with the worker's settings the run reuses what it freed."""

    def faults(arm: str) -> float:
        done = subprocess.run([sys.executable, "-c", RUN_FAULTS, arm], capture_output=True, text=True, cwd=ROOT)
        assert done.returncode == 0, done.stderr
        return float(done.stdout)

    default, tuned = faults("default"), faults("tuned")
    assert tuned * 4 < default, (tuned, default)
