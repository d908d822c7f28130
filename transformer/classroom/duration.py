"""How long a class's runs take on this server, for a teacher to plan a lesson by: the pace of an assignment's run,
measured here, and how long its students' runs then take on the server's training slots when each goes to its step
budget, and, for a task's default run, at the steps such runs take on average.

A run stops once it solves its task, so most end sooner; on the gallery's heavier tasks (add, count) many go to their
budget, and the figure is what a class takes. The pace is read on the clock a run's time budget is
(`training_clock`: on a CPU, the training thread's own time): a server whose cores other work holds (a browser on
the same machine, another class) takes longer by the wall clock, but its runs reach the same steps within their
budgets. A class of 30 on a heavy task can need more than a lesson, and the teacher then knows before the students
press Start.
"""

import math
from dataclasses import dataclass, replace

from ..pairs import TaskPairs
from ..run_configs import Configs, run_configs
from ..settings import Value, default_run
from ..tasks import get_task
from ..training import Trainer, TrainingDiverged
from .assignment import Assignment

CLASS_SIZE = 30  # the class a lesson is planned for, unless more have joined
PACE_STEPS = 25  # steps timed for the pace: one metric row's worth, its scoring included ...
PACE_MOST_S = 1.0  # ... or fewer, once they have taken this much CPU time (a large model's steps)


@dataclass(frozen=True)
class ClassTime:
    """How long a class takes when each run goes to its step budget, at the pace of the slowest group's run."""

    step_s: float  # one training step of the slowest group's run, measured here
    steps: int  # that run's step budget
    budget_s: float  # that run's time budget, within the server's cap on one run
    run_s: float  # one run's step budget at that pace, within `budget_s`
    class_s: float  # `students` such runs, `slots` at a time
    students: int
    slots: int
    usual_steps: int | None = None  # where every group trains its task's default run: the slowest's mean steps
    usual_class_s: float | None = None  # ... and the class at that many steps a run

    @property
    def steps_in_time(self) -> int | None:
        """The steps a run reaches at this pace before its time runs out, when that is short of its step budget;
        None when its step budget comes first."""
        return None if self.steps * self.step_s <= self.budget_s else round(self.budget_s / self.step_s)


def step_seconds(configs: Configs) -> float:
    """Seconds of one training step of a run with `configs`: the mean over up to PACE_STEPS steps (fewer once they
    take PACE_MOST_S, or once the loss diverges), with what the run does besides (a metric row), on the clock its
    time budget is read on (`training_clock`)."""
    model, data, train = configs
    trainer = Trainer(model, data, replace(train, steps=PACE_STEPS, early_stop=False, record_attention=False))
    clock = trainer.clock
    start = clock()
    trainer.begin()
    try:
        while trainer.may_step(lambda: trainer.step > 0 and clock() - start > PACE_MOST_S):
            batch, lr = trainer.next_batch()
            loss, logits = trainer.forward_backward(batch)
            trainer.apply_update(lr)
            if trainer.after_step(batch, lr, loss, logits) is not None:
                trainer.row_taken()
    except TrainingDiverged:  # the pace of the steps taken: the class's runs end as soon, with an error that says why
        pass
    return (clock() - start) / trainer.step


# Settings a run may change and stay its task's default run for `usual_steps`: the seed, where it trains, and its
# budgets (which stop a run, but do not change the steps it takes to solve its task)
BESIDE_THE_RUN = ("seed", "device", "steps", "time_budget_s")


def usual_steps(settings: dict[str, Value], task: TaskPairs | None) -> int | None:
    """The mean steps a run of `settings` trains, where it is its task's default run (`Task.usual_steps`, measured
    over the class load test's 30 seeds) but for BESIDE_THE_RUN; None for any other run, or a class's own `task`."""
    if task is not None or (steps := get_task(settings["task"]).usual_steps) is None:
        return None
    default = default_run(settings["task"])
    return steps if all(settings[k] == v for k, v in default.items() if k not in BESIDE_THE_RUN) else None


def class_time(assignment: Assignment, task: TaskPairs | None, students: int, slots: int, cap_s: float) -> ClassTime:
    """How long `students` runs of `assignment` (the class's own `task`, if it has one) take on `slots` training slots
    when each goes to its step budget, held to `cap_s` seconds by the server: its slowest group's run paced here
    (`step_seconds`); and where each group trains its task's default run, how long at the steps such runs take on
    average (`usual_steps`)."""
    paced, usual = [], []
    for group in assignment.groups or (None,):
        settings = assignment.settings(group)
        configs = run_configs(settings, pairs=task)
        train = configs[2]
        step_s, budget_s = step_seconds(configs), min(train.time_budget_s, cap_s)
        run_s = min(train.steps * step_s, budget_s)
        paced.append((run_s, step_s, train.steps, budget_s))
        steps = usual_steps(settings, task)
        usual.append(None if steps is None else (min(steps * step_s, run_s), steps))
    run_s, step_s, steps, budget_s = max(paced)
    rounds = math.ceil(students / slots)
    bound = ClassTime(step_s, steps, budget_s, run_s, rounds * run_s, students, slots)
    if None in usual:
        return bound
    usual_s, usual_n = max(usual)
    return replace(bound, usual_steps=usual_n, usual_class_s=rounds * usual_s)
