"""How long a class's runs take on this server, at most: the slowest group's pace, each run at its step budget within
its time budget and the server's cap, the runs taking the slots in turns."""

import math

import pytest

import transformer.classroom.duration as duration
from transformer.classroom import Assignment
from transformer.classroom.assignment import split_groups
from transformer.classroom.duration import class_time, step_seconds
from transformer.run_configs import run_configs
from transformer.task_file import read_task_table
from transformer.tasks import get_task


@pytest.fixture
def paced(monkeypatch):
    """Each run's step paced at 1 ms per unit of d_model, so that the bound's arithmetic is known."""
    monkeypatch.setattr(duration, "step_seconds", lambda configs: configs[0].d_model / 1000)


def test_a_class_takes_its_runs_in_turns_on_the_slots_each_at_its_step_budget(paced):
    bound = class_time(Assignment({"steps": 300}), None, students=30, slots=2, cap_s=600)
    assert bound.step_s == 32 / 1000 and bound.steps == 300
    assert bound.run_s == pytest.approx(300 * 32 / 1000)
    assert bound.class_s == pytest.approx(15 * bound.run_s)  # 30 runs, 2 at a time
    assert class_time(Assignment({"steps": 300}), None, 31, 2, 600).class_s == pytest.approx(16 * bound.run_s)


def test_a_run_is_held_to_its_time_budget_and_to_the_server_s_cap(paced):
    timed = class_time(Assignment({"steps": 2000, "time_budget_s": 20}), None, 30, 2, 600)
    assert timed.run_s == timed.budget_s == 20 and timed.steps_in_time == 625  # 20 s at 32 ms a step
    capped = class_time(Assignment({"steps": 2000}), None, 30, 2, 5.0)
    assert capped.run_s == capped.budget_s == 5.0 and capped.steps_in_time == 156
    assert class_time(Assignment({"steps": 300}), None, 30, 2, 600).steps_in_time is None  # 9.6 s: its steps first


def test_groups_are_paced_each_and_the_slowest_bounds_the_class(monkeypatch):
    monkeypatch.setattr(duration, "step_seconds", lambda configs: 0.002 if configs[0].positional == "none" else 0.001)
    assignment = Assignment({"steps": 100}, setting="positional", groups=split_groups("positional"))
    bound = class_time(assignment, None, 30, 3, 600)
    assert (bound.step_s, bound.run_s) == (0.002, pytest.approx(0.2))  # the group without positional encoding


def test_a_class_on_a_task_s_default_run_also_plans_by_its_measured_mean_steps(paced):
    bound = class_time(Assignment({"steps": 3000, "seed": 7}), None, 30, 2, 600)  # reverse's, a longer budget
    assert bound.usual_steps == get_task("reverse").usual_steps == 163
    assert bound.usual_class_s == pytest.approx(15 * 163 * 32 / 1000)  # 30 runs of 163 steps, 2 at a time
    short = class_time(Assignment({"steps": 100}), None, 30, 2, 600)
    assert short.usual_class_s == pytest.approx(short.class_s)  # a budget below the mean: the budget's
    add = class_time(Assignment({"task": "add", **get_task("add").defaults}), None, 30, 2, 600)
    assert add.usual_steps == 1531 and add.usual_class_s < add.class_s


@pytest.mark.parametrize(
    "assignment, pairs",
    [
        (Assignment({"lr": 0.01}), None),  # another run than the task's default
        (Assignment({"task": "count", **get_task("count").defaults, "d_model": 32}), None),
        (Assignment({}, setting="positional", groups=split_groups("positional")), None),  # a group without PE
        (Assignment({}), read_task_table([{"source": f"{i} {i}", "target": str(i)} for i in range(9)], "own")),
    ],
)
def test_any_other_run_has_no_usual_figure_only_its_bound(paced, assignment, pairs):
    bound = class_time(assignment, pairs, 30, 2, 600)
    assert bound.usual_steps is None and bound.usual_class_s is None and bound.class_s > 0


def test_the_pace_is_measured_on_a_real_run_and_stops_at_its_cpu_time(monkeypatch):
    configs = run_configs({})
    assert 0 < step_seconds(configs) < math.inf
    taken = []
    forward_backward = duration.Trainer.forward_backward
    monkeypatch.setattr(duration.Trainer, "forward_backward", lambda t, b: taken.append(1) or forward_backward(t, b))
    monkeypatch.setattr(duration, "PACE_MOST_S", 0.0)
    step_seconds(configs)
    assert len(taken) == 1  # past its CPU time after the first step: no second
    monkeypatch.setattr(duration, "PACE_MOST_S", 1e9)
    taken.clear()
    step_seconds(configs)
    assert len(taken) == duration.PACE_STEPS


def test_a_run_that_diverges_is_paced_by_the_steps_it_took(monkeypatch):
    taken = []

    def diverges_at_the_third(trainer, batch):
        taken.append(1)
        if len(taken) == 3:
            trainer.check_finite(float("nan"))
        return forward_backward(trainer, batch)

    forward_backward = duration.Trainer.forward_backward
    monkeypatch.setattr(duration.Trainer, "forward_backward", diverges_at_the_third)
    monkeypatch.setattr(duration, "PACE_MOST_S", math.inf)  # a busy machine's slow first steps never end it sooner
    assert 0 < step_seconds(run_configs({})) < math.inf and len(taken) == 3
