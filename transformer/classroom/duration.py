"""How long a class's runs take on this server, for a teacher to plan a lesson by: the pace of an assignment's run,
measured here, and how long its students' runs then take on the server's training slots when each goes to its step
budget.

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


def class_time(assignment: Assignment, task: TaskPairs | None, students: int, slots: int, cap_s: float) -> ClassTime:
    """How long `students` runs of `assignment` (the class's own `task`, if it has one) take on `slots` training slots
    when each goes to its step budget, held to `cap_s` seconds by the server: its slowest group's run paced here
    (`step_seconds`)."""
    paced = []
    for group in assignment.groups or (None,):
        configs = run_configs(assignment.settings(group), pairs=task)
        train = configs[2]
        step_s, budget_s = step_seconds(configs), min(train.time_budget_s, cap_s)
        paced.append((min(train.steps * step_s, budget_s), step_s, train.steps, budget_s))
    run_s, step_s, steps, budget_s = max(paced)
    return ClassTime(step_s, steps, budget_s, run_s, math.ceil(students / slots) * run_s, students, slots)
