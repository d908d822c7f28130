"""A queued run's expected wait: the slots free as their runs end, by a typical run's length or by what the runs'
own budgets leave them, and each run ahead takes the first slot to free."""

from types import SimpleNamespace

import pytest

from transformer.serving.waits import RunLengths, expected_wait_s, remaining_s

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
def test_each_run_ahead_takes_the_first_slot_to_free_for_a_typical_runs_length(position, expected):
    assert expected_wait_s(position, [30.0, 10.0], typical_s=5.0) == expected


def test_a_free_slot_is_no_wait_for_the_first_in_the_queue():
    assert expected_wait_s(1, [0.0, 12.0], typical_s=5.0) == 0.0


def test_a_run_younger_than_a_typical_one_is_expected_to_end_when_a_typical_one_would():
    assert remaining_s(training(held_s=2.0, step=100), typical_s=5.0, cap_s=600.0, now=NOW) == 3.0


def test_a_run_older_than_a_typical_one_holds_its_slot_as_long_as_its_budgets_leave_it():
    # 30 s held, half its steps done: 30 s more at its pace, and its 60 s time budget leaves 30 s too
    assert remaining_s(training(held_s=30.0, step=500), typical_s=5.0, cap_s=600.0, now=NOW) == 30.0
    # a quarter of its steps in 30 s: its time budget ends it first, 30 s from now
    assert remaining_s(training(held_s=30.0, step=250), typical_s=5.0, cap_s=600.0, now=NOW) == 30.0
    # the slot's cap ends it before either budget
    assert remaining_s(training(held_s=30.0, step=100), typical_s=5.0, cap_s=40.0, now=NOW) == 10.0


def test_a_typical_length_never_outlasts_what_the_budgets_leave():
    # 4 of its 5 s budget gone: 1 s left, though a typical run takes 20
    assert remaining_s(training(held_s=4.0, step=10, time_budget_s=5.0), typical_s=20.0, cap_s=600.0, now=NOW) == 1.0


def test_a_run_past_its_budgets_is_expected_to_end_now():
    assert remaining_s(training(held_s=70.0, step=900), typical_s=5.0, cap_s=600.0, now=NOW) == 0.0


def test_a_kind_of_run_is_estimated_from_its_own_recent_runs_else_from_any():
    """A class training one task for minutes is not told it waits seconds because quick runs finished before it."""
    lengths = RunLengths(per_kind=3, kinds=2)
    assert lengths.typical("reverse", default=10.0) == 10.0  # nothing finished yet
    for seconds in (1.0, 2.0, 1.5):
        lengths.add("reverse", seconds)
    assert lengths.typical("add", default=10.0) == 1.5  # no add has finished: any recent run
    assert lengths.typical("add", default=10.0, at_least=12.0) == 12.0  # but an add has trained for 12 s already
    assert lengths.knows("reverse") and not lengths.knows("add")
    assert lengths.typical("reverse", default=10.0, at_least=12.0) == 1.5  # its own runs know better
    lengths.add("add", 25.0)
    assert lengths.typical("add", default=10.0) == 25.0 and lengths.typical("reverse", default=10.0) == 1.5
    lengths.add("count", 28.0)  # a third kind: the kind that finished a run longest ago is let go
    assert lengths.typical("reverse", default=10.0) == 25.0  # the last per_kind runs of any kind: 1.5, 25, 28
