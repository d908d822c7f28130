"""The server's run registry: identical runs are one run, distinct runs queue for the slots, watchers come and go."""

import threading
import time

import pytest
import torch
from polling import wait_until

from transformer import runs
from transformer.model import ModelConfig
from transformer.runs import AlreadyTraining, QueueFull, RunRegistry, run_key
from transformer.tasks import DataConfig
from transformer.training import TrainConfig, Trainer

ENDLESS = dict(steps=10**6, early_stop=False)


def settings(seed: int = 0, **train) -> tuple[ModelConfig, DataConfig, TrainConfig]:
    return ModelConfig(), DataConfig(task="copy", min_len=4, max_len=4, seed=seed), TrainConfig(seed=seed, **train)


@pytest.fixture
def registry():
    registry = RunRegistry(slots=1, max_queue=2, idle_timeout_s=30.0)
    yield registry
    for job in list(registry._runs.values()):  # leave nothing training behind a failed test
        job.stop(wait_s=5)


def test_the_same_settings_are_one_run_and_a_joined_run_ends_as_one_trained_alone(registry):
    # a distinct run trains beside it in the same process the whole time
    other = RunRegistry(slots=1, max_queue=0, idle_timeout_s=30.0).start("c", *settings(seed=9, **ENDLESS))
    try:
        first = registry.start("a", *settings(steps=60, early_stop=False))
        second = registry.start("b", *settings(steps=60, early_stop=False))
        assert second is first and sorted(first.watchers()) == ["a", "b"]
        wait_until(lambda: first.done)
    finally:
        other.stop(wait_s=5)
    alone = Trainer(*settings(steps=60, early_stop=False))
    alone.run()
    joined, expected = first.trainer.network.state_dict(), alone.network.state_dict()
    assert all(torch.equal(joined[k], expected[k]) for k in expected)
    assert registry.start("late", *settings(steps=60, early_stop=False)) is first  # finished on its own terms: joinable


def test_runs_that_differ_in_any_setting_are_never_joined(registry):
    model, data, train = settings(**ENDLESS)
    keys = {
        run_key(model, data, train),
        run_key(ModelConfig(dropout=0.1), data, train),
        run_key(model, DataConfig(task="copy", min_len=4, max_len=4, seed=1), train),
        run_key(model, data, TrainConfig(seed=1, **ENDLESS)),
        run_key(model, data, TrainConfig(lr=1e-3, **ENDLESS)),
    }
    assert len(keys) == 5
    assert run_key(model, data, TrainConfig(device="auto", **ENDLESS)) == run_key(
        model, data, TrainConfig(device="cpu", **ENDLESS)
    )  # on a CPU-only machine "auto" is the CPU


def test_distinct_runs_queue_first_come_first_served_and_start_on_their_own(registry):
    first = registry.start("a", *settings(seed=0, steps=30, early_stop=False))
    second = registry.start("b", *settings(seed=1, steps=30, early_stop=False))
    third = registry.start("c", *settings(seed=2, steps=30, early_stop=False))
    assert first.status != "queued" and second.status == third.status == "queued"
    assert registry.place(second).position == 1 and registry.place(third).position == 2
    assert registry.place(third).wait_s >= registry.place(second).wait_s > 0
    assert registry.place(first) is None
    with pytest.raises(QueueFull):
        registry.start("d", *settings(seed=3))
    wait_until(lambda: third.done)  # each started when the one before it ended
    assert first.result.steps == second.result.steps == third.result.steps == 30
    assert first.started_at < second.started_at < third.started_at
    assert registry.counts() == {"training": 0, "queued": 0, "finished": 3}


def test_one_watcher_has_one_run_at_a_time(registry):
    registry.start("a", *settings(seed=0, **ENDLESS))
    with pytest.raises(AlreadyTraining):
        registry.start("a", *settings(seed=1))
    assert registry.start("a", *settings(seed=0, **ENDLESS)).watchers() == ["a"]  # the same run again: joined


def test_leaving_a_shared_run_leaves_it_training_until_the_last_watcher_leaves(registry):
    job = registry.start("a", *settings(**ENDLESS))
    registry.start("b", *settings(**ENDLESS))
    registry.leave("a", job)
    time.sleep(0.3)
    assert job.running and job.watchers() == ["b"]
    registry.leave("b", job)
    wait_until(lambda: job.done)
    assert job.result.reason == "stopped" and not job._thread.is_alive()
    assert registry.counts()["training"] == 0  # its slot came back
    fresh = registry.start("c", *settings(**ENDLESS))  # a stopped run is not joined: it ended on someone's say
    assert fresh is not job


def test_leaving_the_queue_and_going_idle_both_free_the_place(registry, monkeypatch):
    registry.start("a", *settings(seed=0, **ENDLESS))
    left = registry.start("b", *settings(seed=1))
    gone = registry.start("c", *settings(seed=2))
    registry.leave("b", left)
    assert registry.place(left) is None and registry.place(gone).position == 1
    registry.idle_timeout_s = gone.idle_timeout_s = 0.2  # nobody polls "c" any more
    time.sleep(0.3)
    assert registry.place(gone) is None and registry.counts()["queued"] == 0
    for job in (left, gone):  # ended without a thread, never started, and each says why
        assert job.status == "done" and job.done and not job.running and job.started_at is None
    assert left.withdrawn == "everyone watching it left the queue"
    assert gone.withdrawn.startswith("no page checked on it for 0 s")


def test_a_queued_run_keeps_its_place_while_its_page_is_connected(registry):
    registry.start("a", *settings(seed=0, **ENDLESS))
    slow, closed = registry.start("slow", *settings(seed=1)), registry.start("closed", *settings(seed=2))
    connected = {"slow": True, "closed": False}
    for job, who in ((slow, "slow"), (closed, "closed")):
        job.touch(who, lambda who=who: connected[who])  # as the Train page polls
    registry.idle_timeout_s = slow.idle_timeout_s = closed.idle_timeout_s = 0.3
    time.sleep(0.5)  # neither page polled for longer than the idle timeout
    assert registry.place(slow).position == 1 and registry.place(closed) is None
    assert closed.withdrawn.startswith("no page checked on it for 0 s after its connection dropped")
    connected["slow"] = False
    assert registry.place(slow) is None and registry.counts()["queued"] == 0


def test_no_thread_is_left_behind_when_every_watcher_has_gone():
    registry = RunRegistry(slots=2, max_queue=4, idle_timeout_s=0.5)
    before = threading.active_count()
    jobs = [registry.start(str(seed), *settings(seed=seed, **ENDLESS)) for seed in range(4)]
    wait_until(lambda: all(job.status == "training" for job in jobs[:2]))
    wait_until(lambda: all(not job.running for job in jobs), timeout=15)  # nobody touches them: idle
    assert threading.active_count() == before
    assert registry.counts() == {"training": 0, "queued": 0, "finished": 0}
    assert all(job.withdrawn and job.started_at is None for job in jobs[2:])  # left the queue, never started


def test_outside_jobs_take_slots_only_after_the_queue(registry):
    assert registry.acquire() and not registry.acquire()  # the one slot: taken by an outside job
    queued = registry.start("a", *settings(steps=20, early_stop=False))
    assert queued.status == "queued"
    registry.release()  # the outside job ends: the queued run takes the slot, not the next outside job
    assert not registry.acquire()
    wait_until(lambda: queued.done)
    assert registry.acquire()
    registry.release()


def test_finished_runs_kept_for_joining_are_bounded(monkeypatch):
    monkeypatch.setattr(runs, "MAX_FINISHED_WEIGHTS", 10**9)
    registry = RunRegistry(slots=1, max_queue=8, idle_timeout_s=30.0, keep_finished=2)
    jobs = [registry.start("a", *settings(seed=seed, steps=5, early_stop=False)) for seed in range(1)]
    for seed in range(1, 4):
        wait_until(lambda: jobs[-1].done)
        jobs.append(registry.start("a", *settings(seed=seed, steps=5, early_stop=False)))
    wait_until(lambda: jobs[-1].done)
    assert registry.counts()["finished"] == 2
    assert registry.start("b", *settings(seed=3, steps=5, early_stop=False)) is jobs[3]
    again = registry.start("b", *settings(seed=0, steps=5, early_stop=False))
    assert again is not jobs[0]  # forgotten: trained anew
    wait_until(lambda: again.done)
