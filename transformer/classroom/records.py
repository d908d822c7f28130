"""What a class records, as plain values: its students, their runs' states, their predictions, and a snapshot of
the whole class for the board. `bounded` cuts a run's state to the size the store accepts."""

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal, get_args

from ..limits import MAX_ERROR_CHARS, MAX_RUN_ROWS, MAX_STUDENTS
from ..pairs import TaskPairs
from ..settings import RUN_LIMITS
from ..training import METRIC_COLUMNS
from .assignment import Assignment

Status = Literal["not started", "queued", "training", "paused", "finished", "failed", "stopped", "lost"]
STATUSES: tuple[Status, ...] = get_args(Status)
IN_FLIGHT: tuple[Status, ...] = ("queued", "training", "paused")  # a server holds it: lost if none is heard from
# TrainResult.reason, else why a run stopped other than by a person's Stop: "page closed" (no page watched it any more,
# its tab closed), "ended by the server" (a limit of the server's, a pause too long, or its worker lost)
REASONS = ("solved", "step budget", "time budget", "stopped", "page closed", "ended by the server")
RESULT_NUMBERS = ("steps", "seconds", "exact_match", "token_acc")  # TrainResult's numbers
MAX_QUEUE_PLACE = 10 * MAX_STUDENTS


@dataclass(frozen=True)
class Caller:
    """Who asks the store for something: their network address (None when the server cannot tell) and their
    browser's id. The rate limits count what each one does."""

    address: str | None
    browser: str


@dataclass(frozen=True)
class Student:
    """A student of a class: their display name, join order (from 0), group label and seed, and when they joined,
    which tells them from a later student given the same id (SQLite gives a removed student's id to the next)."""

    id: int
    name: str
    position: int
    group: str | None
    seed: int
    joined_at: datetime


@dataclass(frozen=True)
class RunState:
    """A student's run as it stands: status, step reached, place in the queue, metric rows so far (dicts with the
    keys of training.METRIC_COLUMNS), the result once it ended (TrainResult's fields) and a failed run's message."""

    status: Status = "not started"
    step: int = 0
    queue_place: int | None = None
    rows: tuple[Mapping[str, float | None], ...] = ()
    result: Mapping[str, Any] | None = None
    error: str | None = None


def started(run: RunState) -> bool:
    """Whether a run holds what its settings trained, or will: it trained a step, or a server holds it."""
    return run.step > 0 or run.status in IN_FLIGHT


@dataclass(frozen=True)
class Prediction:
    """A student's answer to the class's question, given before their run started."""

    question: str
    choice: str


@dataclass(frozen=True)
class ClassInfo:
    """A class as its students see it."""

    code: str
    title: str
    created_at: datetime
    expires_at: datetime
    assignment: Assignment | None
    question: str | None  # a key of questions.QUESTIONS
    task: TaskPairs | None = None  # the class's own task from examples, which its runs learn in place of the form's
    joins_closed: bool = False  # its teacher closed it to new students: only those who joined may come back


@dataclass(frozen=True)
class Snapshot:
    """A whole class for its board: students in join order, and each one's run and prediction by student id."""

    info: ClassInfo
    students: tuple[Student, ...]
    runs: Mapping[int, RunState] = field(default_factory=dict)
    predictions: Mapping[int, Prediction] = field(default_factory=dict)


def thin(rows: Sequence, keep: int) -> list:
    """At most `keep` (>= 2) of `rows`, evenly spaced, the first and the last always among them."""
    if len(rows) <= keep:
        return list(rows)
    return [rows[round(i * (len(rows) - 1) / (keep - 1))] for i in range(keep)]


def _number(value: Any) -> float | None:
    """`value` as a finite float, or None."""
    if type(value) not in (int, float) or not math.isfinite(value):
        return None
    return float(value)


def bounded(state: RunState) -> RunState:
    """`state` as the store keeps it: rows thinned to MAX_RUN_ROWS with only the metric columns as finite numbers
    (else None), the result's known fields, the error cut to MAX_ERROR_CHARS; ValueError on a bad status, step or
    queue place."""
    if state.status not in STATUSES:
        raise ValueError(f"a run's status is one of {', '.join(STATUSES)}")
    if type(state.step) is not int or not 0 <= state.step <= RUN_LIMITS["steps"][1]:
        raise ValueError(f"a run's step is a whole number in 0..{RUN_LIMITS['steps'][1]}")
    if state.queue_place is not None and (
        type(state.queue_place) is not int or not 0 <= state.queue_place <= MAX_QUEUE_PLACE
    ):
        raise ValueError(f"a queue place is a whole number in 0..{MAX_QUEUE_PLACE}")
    rows = tuple({name: _number(row.get(name)) for name in METRIC_COLUMNS} for row in thin(state.rows, MAX_RUN_ROWS))
    result = None
    if state.result is not None:
        reason = state.result.get("reason")
        result = {name: _number(state.result.get(name)) for name in RESULT_NUMBERS}
        result["reason"] = reason if reason in REASONS else None
    error = None if state.error is None else str(state.error)[:MAX_ERROR_CHARS]
    return replace(state, rows=rows, result=result, error=error)
