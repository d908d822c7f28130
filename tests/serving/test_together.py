"""Queued runs of one shape trained together by one training slot (`transformer.batched.train_together` in the
worker): each run is still the run its settings make, with its own controls, curve and end."""

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

import pytest
import torch

from tests.helpers import wait_until
from tests.helpers.serving import ENDLESS, alone, settings
from transformer.batched import train_together
from transformer.serving import RunRegistry, ServerSettings
from transformer.serving import worker as worker_module
from transformer.serving.registry import MIN_TOGETHER
from transformer.training import Trainer

pytestmark = pytest.mark.heavy  # each test trains groups of runs on a registry

TIMINGS = ("elapsed_s", "tokens_per_s")  # a metric row's clock readings: the only fields that differ


def make_registry(slots: int = 1, train_together: int = 8) -> RunRegistry:
    """A registry on server threads whose slots train up to `train_together` queued runs of one shape together."""
    server = ServerSettings(slots, 16, 3600, worker_processes=False, train_together=train_together)
    return RunRegistry(server)


@pytest.fixture
def group_sizes(monkeypatch) -> list[int]:
    """How many runs each StartRuns a worker took held."""
    sizes, train = [], worker_module.train_and_report

    def counted(conn, start):  # noqa: ANN001, ANN202
        sizes.append(len(start.runs))
        return train(conn, start)

    monkeypatch.setattr(worker_module, "train_and_report", counted)
    return sizes


@contextmanager
def in_float64() -> Iterator[None]:
    """Float64 and one torch thread for the server's and the test's runs alike: batched kernels sum in another order
    than one run's, which float32 rounding makes a run's steps to solve differ by; float64's does not
    (tests/test_batched.py)."""
    dtype, threads = torch.get_default_dtype(), torch.get_num_threads()
    torch.set_default_dtype(torch.float64)
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_default_dtype(dtype)
        torch.set_num_threads(threads)


def test_queued_runs_of_one_shape_train_together_each_streaming_its_own_run(group_sizes):
    registry = make_registry()
    try:
        with in_float64():
            blocker = registry.submit("teacher", *settings(seed=99, **ENDLESS))  # holds the one slot
            configs = [settings(seed, steps=400) for seed in range(MIN_TOGETHER + 1)]
            runs = [registry.submit(f"student {i}", *c) for i, c in enumerate(configs)]
            assert all(run.status == "queued" for run in runs)
            registry.leave("teacher", blocker)  # the slot frees, and takes the queue's five runs at once
            for i, run in enumerate(runs):
                assert run.wait_until_done(120), f"run {i} did not end"
            models = [run.model() for run in runs]  # built from the weights the worker sent, in float64
            expected = [Trainer(*c) for c in configs]  # the same runs trained together here
            rows = [[] for _ in configs]
            for i, row in train_together(expected, [None] * len(expected)):
                rows[i] += [] if row is None else [row]
            steps_alone = [alone(*c)[0].result.steps for c in configs]
    finally:
        registry.close()
    assert group_sizes == [1, MIN_TOGETHER + 1]
    assert [run.result.steps for run in runs] == steps_alone  # each solves in the steps it takes alone
    for run, model, trainer, its_rows in zip(runs, models, expected, rows):
        assert run.error is None and run.result.reason == trainer.result.reason == "solved"
        assert run.result.steps == trainer.result.steps == run.step
        assert run.losses == trainer.step_losses  # its own curve, every step, to its own page
        assert [untimed(row) for row in run.rows] == [untimed(row) for row in its_rows]
        assert all(torch.equal(w, trainer.model.state_dict()[k]) for k, w in model.state_dict().items())


def untimed(row: dict) -> dict:
    """A metric row less its clock readings, which no two runs share."""
    return {k: v for k, v in row.items() if k not in TIMINGS}


def test_fewer_queued_runs_of_one_shape_than_pay_train_one_by_one(group_sizes):
    registry = make_registry()
    try:
        blocker = registry.submit("teacher", *settings(seed=99, **ENDLESS))
        runs = [registry.submit(f"student {i}", *settings(i, steps=20)) for i in range(MIN_TOGETHER - 1)]
        registry.leave("teacher", blocker)
        assert all(run.wait_until_done(60) for run in runs)
    finally:
        registry.close()
    assert group_sizes == [1] * MIN_TOGETHER
    assert [run.result.steps for run in runs] == [20] * (MIN_TOGETHER - 1)


def test_a_slot_takes_its_share_of_a_queue_of_one_shape_and_by_default_every_run_trains_alone(group_sizes):
    registry = make_registry(slots=2)
    try:
        blockers = [registry.submit(f"teacher {i}", *settings(90 + i, **ENDLESS)) for i in range(2)]
        runs = [registry.submit(f"student {i}", *settings(i, steps=20)) for i in range(2 * MIN_TOGETHER)]
        registry.leave("teacher 0", blockers[0])  # one slot frees: it takes half the queue, not all of it
        wait_until(lambda: [run.status == "queued" for run in runs] == [False] * 4 + [True] * 4, timeout=30.0)
        registry.leave("teacher 1", blockers[1])  # then half of four is too few to train together
        assert all(run.wait_until_done(60) for run in runs)
    finally:
        registry.close()
    assert group_sizes == [1, 1, MIN_TOGETHER, 1, 1, 1, 1]
    group_sizes.clear()
    registry = RunRegistry(ServerSettings(1, 16, 3600, worker_processes=False))  # the default: each run alone
    try:
        blocker = registry.submit("teacher", *settings(seed=99, **ENDLESS))
        runs = [registry.submit(f"student {i}", *settings(i, steps=20)) for i in range(MIN_TOGETHER)]
        registry.leave("teacher", blocker)
        assert all(run.wait_until_done(60) for run in runs)
    finally:
        registry.close()
    assert group_sizes == [1] * (MIN_TOGETHER + 1)


def test_each_run_of_a_group_keeps_its_own_pause_step_stop_and_watchers(group_sizes):
    registry = make_registry()
    try:
        blocker = registry.submit("teacher", *settings(seed=99, **ENDLESS))
        runs = [registry.submit(f"student {i}", *settings(i, **ENDLESS)) for i in range(MIN_TOGETHER)]
        registry.leave("teacher", blocker)
        wait_until(lambda: all(run.status == "training" and run.step > 0 for run in runs), timeout=60.0)
        paused, stopped, left, going = runs
        paused.pause()
        wait_until(lambda: paused.status == "paused", timeout=30.0)
        held, before = paused.step, going.step
        wait_until(lambda: going.step >= before + 20, timeout=60.0)  # the others train on while one is held
        assert paused.step == held and paused.status == "paused"
        paused.step_row()  # one metric row further, then held again
        every = paused.train_config.eval_every
        wait_until(lambda: paused.status == "paused" and paused.step == (held // every + 1) * every, timeout=30.0)
        stopped.stop()
        assert stopped.wait_until_done(30) and stopped.result.reason == "stopped"
        registry.leave("student 2", left)  # its last watcher leaves: it stops alone
        assert left.wait_until_done(30) and left.result.reason == "stopped"
        assert not going.done and not paused.done
        paused.resume()
        wait_until(lambda: paused.step > held + every, timeout=30.0)
        going.stop()
        paused.stop()
        assert going.wait_until_done(30) and paused.wait_until_done(30)
        assert all(run.model() is not None and run.error is None for run in runs)  # each kept its own model
    finally:
        registry.close()
    assert group_sizes == [1, MIN_TOGETHER]


def test_a_run_of_a_group_whose_settings_make_no_trainer_ends_at_once_and_the_others_train_on(group_sizes):
    registry = make_registry()
    try:
        blocker = registry.submit("teacher", *settings(seed=99, **ENDLESS))
        model, data, train = settings(0, **ENDLESS)
        too_long = replace(data, min_len=model.longest_sequence + 1, max_len=model.longest_sequence + 1)
        bad = registry.submit("student 0", model, too_long, train)
        runs = [registry.submit(f"student {i}", *settings(i, **ENDLESS)) for i in range(1, MIN_TOGETHER)]
        registry.leave("teacher", blocker)
        assert bad.wait_until_done(30) and bad.error and bad.result is None  # while the others still train
        assert not any(run.done for run in runs)
        bad.step_row()  # a control after its end reaches nothing
        wait_until(lambda: all(run.step > 10 for run in runs), timeout=60.0)
        for run in runs:
            run.stop()
        assert all(run.wait_until_done(30) and run.result.reason == "stopped" for run in runs)
    finally:
        registry.close()
    assert group_sizes == [1, MIN_TOGETHER]
