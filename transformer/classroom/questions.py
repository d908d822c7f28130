"""The built-in questions a class may predict before training. Each is about one group of an assignment whose
groups differ in the question's setting, and its right choice follows from measured outcomes only: the runs of
that group against the runs of the other groups.

A student in the question's group is graded on their own run against the other groups; a student of another group
on the question's group against the rest of the class. A run the time budget ended before it solved the task
measured neither how soon its group solves the task nor how far it learns: it counts for no grade, and a grade that
rests only on such runs reads OUT_OF_TIME (ungraded).

A question that names a task names the one the class trains (`question_text`): its own task from examples, or the
built-in or gallery task its assignment names.
"""

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .. import settings as spec
from ..i18n import N_, Message
from .assignment import Assignment, Value
from .outcomes import Outcome, measured, steps_to_solve
from .records import ClassInfo, Snapshot

Grade = Callable[[Sequence[Outcome], Sequence[Outcome]], str | None]  # (the group's, the others') -> right choice
# A choice is kept in the class database as these English words (a prediction, a measured answer); pages show it
# translated.
SOLVE_CHOICES = (N_("sooner"), N_("later"), N_("not within the step budget"))
SOLVE_CAPTION = N_(
    "Graded on what the runs measured, not on decoded outputs: 'not within the step budget' when fewer than half of "
    "the runs the question asks about solved the task; otherwise 'sooner' when their median steps to solve is below "
    "the median of the other groups' solved runs (or none of those solved), else 'later'. A run the time budget "
    "stopped before it solved the task counts for neither side: it ran out of time. Nor does a run its student "
    "stopped: it measured nothing."
)
COMPARE_CHOICES = (N_("higher"), N_("about the same"), N_("lower"))
OUT_OF_TIME = N_("ran out of time")  # the grade of a prediction whose runs all ran out of time: ungraded


def is_graded(measured: str | None) -> bool:
    """Whether a measured answer of `right_choices` grades a prediction: not while unmeasured, nor OUT_OF_TIME."""
    return measured is not None and measured != OUT_OF_TIME


def solved_sooner(arm: Sequence[Outcome], rest: Sequence[Outcome]) -> str | None:
    """A SOLVE_CHOICES choice for `arm` against `rest` (see SOLVE_CAPTION); None until both have outcomes."""
    if not arm or not rest:
        return None
    solved, others = steps_to_solve(arm), steps_to_solve(rest)
    if 2 * len(solved) < len(arm):
        return SOLVE_CHOICES[2]
    return SOLVE_CHOICES[0] if not others or statistics.median(solved) < statistics.median(others) else SOLVE_CHOICES[1]


def compared(metric: str, tolerance: float) -> Grade:
    """A COMPARE_CHOICES grade: the median of `metric` over `arm` against the median over `rest`, 'about the same'
    within `tolerance`."""

    def grade(arm: Sequence[Outcome], rest: Sequence[Outcome]) -> str | None:
        ours = [v for o in arm if (v := getattr(o, metric)) is not None]
        theirs = [v for o in rest if (v := getattr(o, metric)) is not None]
        if not ours or not theirs:
            return None
        difference = statistics.median(ours) - statistics.median(theirs)
        return COMPARE_CHOICES[1] if abs(difference) <= tolerance else COMPARE_CHOICES[0 if difference > 0 else 2]

    return grade


@dataclass(frozen=True)
class Question:
    """A multiple-choice prediction about the group whose `setting` is `value`."""

    text: str
    caption: str
    setting: str
    value: Value
    choices: tuple[str, ...]
    grade: Grade
    names_task: bool = False  # `text` names the class's task: {task}

    def unfit(self, assignment: Assignment | None) -> Message | None:
        """Why this question does not fit `assignment`, or None when it does."""
        values = [(type(g.value), g.value) for g in assignment.groups] if assignment else []
        if assignment is None or assignment.setting != self.setting or (type(self.value), self.value) not in values:
            setting = spec.setting(self.setting)
            why = N_("it needs groups that differ in “{setting}”, one of them “{value}”")
            return Message(why, setting=Message(setting.label), value=Message(setting.word(self.value)))
        if self.names_task and "task" in assignment.open:
            return Message(N_("it names the class's task, and students may change the task"))
        return None


def class_task_name(info: ClassInfo) -> str:
    """The name of the task a class trains: its own task's (the teacher's literal text), else its assignment's."""
    if info.task is not None:
        return info.task.name
    return (info.assignment or Assignment()).settings(None)["task"]


def question_text(key: str, info: ClassInfo, task: str | None = None) -> Message:
    """The class's question `key` as its students read it, naming the task the class trains (`task`, the name a
    teacher has picked but not yet saved, in place of its assignment's)."""
    return Message(QUESTIONS[key].text, task=class_task_name(info) if task is None or info.task else task)


QUESTIONS: dict[str, Question] = {
    "positional-none": Question(
        N_("Without positional encoding, {task} will be solved:"),
        SOLVE_CAPTION,
        "positional",
        "none",
        SOLVE_CHOICES,
        solved_sooner,
        names_task=True,
    ),
    "causal-mask-off": Question(
        N_("Without the causal mask, the held-out exact match at the end will be:"),
        N_(
            "Measured: the median exact match on the whole held-out set when the runs without the mask ended, "
            "against the other groups' median; 'about the same' within 5 percentage points. A run its student "
            "stopped counts for neither side."
        ),
        "causal_mask",
        False,
        COMPARE_CHOICES,
        compared("exact_match", 0.05),
    ),
    "unscaled-scores": Question(
        N_("Without scaling the attention scores by 1/√d_k, the task will be solved:"),
        SOLVE_CAPTION,
        "scale_scores",
        False,
        SOLVE_CHOICES,
        solved_sooner,
    ),
    "pre-norm": Question(
        N_("With pre-norm instead of post-norm, the task will be solved:"),
        SOLVE_CAPTION,
        "norm_first",
        True,
        SOLVE_CHOICES,
        solved_sooner,
    ),
    "label-smoothing": Question(
        N_("With label smoothing 0.1, the training loss at the end will be:"),
        N_(
            "Measured: the median training loss of the last metric row of runs with smoothing 0.1 against the other "
            "groups' median; 'about the same' within 0.05."
        ),
        "label_smoothing",
        0.1,
        COMPARE_CHOICES,
        compared("train_loss", 0.05),
    ),
}


def right_choices(key: str, snapshot: Snapshot) -> dict[int, str | None]:
    """The choice the measurements make right, per student id: None until the student's own run and a run on each
    side have measured outcomes."""
    question, assignment = QUESTIONS[key], snapshot.info.assignment
    if assignment is None or question.unfit(assignment):
        return {student.id: None for student in snapshot.students}
    labels = {g.label for g in assignment.groups if (type(g.value), g.value) == (type(question.value), question.value)}
    outcomes = {student.id: measured(snapshot.runs.get(student.id)) for student in snapshot.students}
    in_arm = {student.id: student.group in labels for student in snapshot.students}
    arm = [o for sid, o in outcomes.items() if o and in_arm[sid]]
    rest = [o for sid, o in outcomes.items() if o and not in_arm[sid]]

    def grade(ours: list[Outcome], theirs: list[Outcome]) -> str | None:
        """The question's grade on the runs that did not run out of time; OUT_OF_TIME when every run of a side
        did."""
        if any(side and all(o.timed_out for o in side) for side in (ours, theirs)):
            return OUT_OF_TIME
        return question.grade([o for o in ours if not o.timed_out], [o for o in theirs if not o.timed_out])

    return {
        sid: None if own is None else grade([own], rest) if in_arm[sid] else grade(arm, rest)
        for sid, own in outcomes.items()
    }
