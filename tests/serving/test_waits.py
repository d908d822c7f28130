"""A queued run's expected wait: the slots free as their runs end, at the step their kind's runs ended at and the
pace each run shows, within their budgets, and each run ahead takes the first slot to free for its kind's length."""

from itertools import pairwise
from types import SimpleNamespace

import pytest

from transformer.serving.waits import RunLengths, expected_wait_s, first_free_s, length_s, remaining_s

NOW = 1000.0


def training(held_s: float, step: int, steps: int = 1000, time_budget_s: float = 60.0) -> SimpleNamespace:
    """A run that has held its slot for `held_s` and is at `step` of its `steps`."""
    return SimpleNamespace(
        started_at=NOW - held_s, step=step, train_config=SimpleNamespace(steps=steps, time_budget_s=time_budget_s)
    )


@pytest.mark.parametrize(
    "position, expected",
    [(1, 10.0), (2, 15.0), (3, 20.0), (4, 25.0), (5, 30.0), (6, 30.0), (7, 35.0)],  # at 30 both slots free
)
def test_each_run_ahead_takes_the_first_slot_to_free_for_its_length(position, expected):
    assert first_free_s([30.0, 10.0], [5.0] * (position - 1)) == expected


def test_a_free_slot_is_no_wait_for_the_first_in_the_queue():
    assert first_free_s([0.0, 12.0], []) == 0.0


def test_a_run_yet_to_step_is_expected_to_end_when_a_typical_one_would():
    assert remaining_s(training(held_s=2.0, step=0), [], typical_s=5.0, cap_s=600.0, now=NOW) == 3.0


def test_a_run_is_expected_to_end_at_the_median_step_of_its_kind_at_its_own_pace():
    # 0.1 s a step so far; its kind's runs ended at steps 300, 400 and 500: 300 steps more, 30 s
    assert remaining_s(training(held_s=10.0, step=100), [300, 400, 500], typical_s=5.0, cap_s=600.0, now=NOW) == 30.0


def test_a_run_past_its_kinds_median_step_goes_on_as_the_runs_that_got_as_far_did_then_to_its_step_budget():
    ends = [300, 400, 500]
    # past 400: of the runs that got this far, one ended at 500
    assert remaining_s(training(held_s=45.0, step=450), ends, typical_s=5.0, cap_s=600.0, now=NOW) == 5.0
    # past them all: its step budget, 1000, at its pace
    assert remaining_s(training(held_s=55.0, step=550, time_budget_s=600.0), ends, 5.0, 600.0, NOW) == 45.0


def test_a_run_never_holds_its_slot_past_its_time_budget_or_the_slots_cap():
    # 30 s held, a quarter of its steps done: 90 s more at its pace, but its 60 s time budget leaves 30 s
    assert remaining_s(training(held_s=30.0, step=250), [], typical_s=5.0, cap_s=600.0, now=NOW) == 30.0
    # the slot's cap ends it before either budget
    assert remaining_s(training(held_s=30.0, step=100), [], typical_s=5.0, cap_s=40.0, now=NOW) == 10.0
    # 4 of its 5 s budget gone: 1 s left, though a typical run takes 20
    assert remaining_s(training(held_s=4.0, step=0, time_budget_s=5.0), [], 20.0, 600.0, NOW) == 1.0


def test_a_run_past_its_budgets_is_expected_to_end_now():
    assert remaining_s(training(held_s=70.0, step=900), [], typical_s=5.0, cap_s=600.0, now=NOW) == 0.0


def test_a_kind_of_run_is_estimated_from_its_own_recent_runs_at_their_recent_pace_else_from_any():
    """A class training one task for minutes is not told it waits seconds because quick runs finished before it."""
    lengths = RunLengths(per_kind=4, kinds=2)
    assert lengths.typical("reverse", default=10.0) == 10.0  # nothing finished yet
    for steps, seconds in ((100, 1.0), (200, 2.0), (150, 1.5)):  # 0.01 s a step
        lengths.add("reverse", steps, seconds)
    assert lengths.typical("add", default=10.0) == 1.5  # no add has finished: any recent run
    assert lengths.knows("reverse") and not lengths.knows("add")
    assert lengths.ends("reverse") == [100, 200, 150] and lengths.ends("add") == []
    assert lengths.typical("reverse", default=10.0) == pytest.approx(1.5)  # 150 steps at 0.01 s
    lengths.add("reverse", 150, 4.5)  # a busier server: 0.03 s a step
    lengths.add("reverse", 150, 4.5)
    assert lengths.typical("reverse", default=10.0) == pytest.approx(4.5)  # the last three's median pace: 0.03 s
    lengths.add("add", 50, 25.0)
    lengths.add("count", 10, 28.0)  # a third kind: the kind that finished a run longest ago is let go
    assert not lengths.knows("reverse") and lengths.typical("reverse", default=10.0) == 14.75  # any: 4.5, 4.5, 25, 28


def test_a_queued_run_expects_its_kind_to_take_at_least_as_long_as_one_training_now():
    lengths = RunLengths()
    lengths.add("sort", 400, 20.0)
    assert length_s("sort", [], lengths, default_s=10.0, now=NOW) == 20.0
    # one of its kind has held its slot 30 s, past the step its kind's runs ended at: at least that
    assert length_s("sort", [("sort", training(30.0, 600)), ("copy", training(60.0, 10))], lengths, 10.0, NOW) == 30.0
    # one of its kind is at step 40 after 10 s: 400 steps take 100 s at its pace
    assert length_s("sort", [("sort", training(10.0, 40))], lengths, 10.0, NOW) == 100.0
    # a kind never finished: the guess, or as long as one of it has trained
    assert length_s("copy", [("copy", training(60.0, 10))], lengths, 10.0, NOW) == 60.0


STEPS, PACE = 400, 0.25  # the step every run of the kind ends at, and its seconds a step on the server now


def test_a_queue_of_slow_runs_is_told_its_true_wait_and_the_wait_only_counts_down():
    """Two slots train runs of a kind five times slower than its runs that finished before (a busier server), and
    five more of the kind wait; a fake clock moves a second at a time, each run steps at PACE and ends at STEPS, and
    the next in the queue takes its slot. The last one is told its true wait from the first second on, and it never
    counts down to nothing while the slots' runs go on and then jumps back up."""
    lengths = RunLengths()
    for _ in range(3):
        lengths.add("sort", STEPS, 20.0)  # before: 0.05 s a step
    slots = [started(-60.0), started(-20.0)]  # 240 and 80 steps in
    queue, waits, now = list(range(5)), [], 0
    while 4 in queue:  # the last queued run
        for i, run in enumerate(slots):
            run.step = min(STEPS, int((now - run.started_at) / PACE))
            if run.step == STEPS:
                lengths.add("sort", STEPS, now - run.started_at)
                queue.pop(0)
                slots[i] = started(now)
        if 4 in queue:
            ahead = ["sort"] * queue.index(4)
            waits.append(expected_wait_s(ahead, [[("sort", run)] for run in slots], lengths, 10.0, 600.0, now))
        now += 1
    # the slots free at 40 and 80 s; each run takes STEPS * PACE = 100 s; the last starts when the third ends
    assert now - 1 == 240 == 40 + 2 * 100
    assert waits == pytest.approx([240.0 - t for t in range(240)])
    assert all(later <= earlier for earlier, later in pairwise(waits))


def started(at: float) -> SimpleNamespace:
    """A run of the kind that a slot took at `at`, yet to step."""
    return SimpleNamespace(started_at=at, step=0, train_config=SimpleNamespace(steps=1000, time_budget_s=300.0))
