"""A run's measured outcome, read from its result and metric rows only (never from a sampled decode), and the
median and spread of a group's outcomes."""

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from ..i18n import N_, Message
from .records import RunState


@dataclass(frozen=True)
class Outcome:
    """What a finished run measured: whether it solved the task (every held-out sequence right under greedy
    decoding), the steps it took, its exact match at the end and its last training loss, and whether the time
    budget ended it before it solved the task (it ran out of time: not a failure to learn within its steps)."""

    solved: bool
    steps: int
    exact_match: float
    train_loss: float | None
    timed_out: bool = False


def measured(run: RunState | None) -> Outcome | None:
    """The outcome of a run that ended on its own (solved, or out of steps or time); None for a run that has not
    ended, failed, or was stopped by its student."""
    if run is None or run.status != "finished" or run.result is None:
        return None
    result = run.result
    if result.get("reason") not in ("solved", "step budget", "time budget") or result.get("steps") is None:
        return None
    losses = [row["train_loss"] for row in run.rows if row.get("train_loss") is not None]
    return Outcome(
        solved=result["reason"] == "solved",
        steps=int(result["steps"]),
        exact_match=result.get("exact_match") or 0.0,
        train_loss=losses[-1] if losses else None,
        timed_out=result["reason"] == "time budget",
    )


def steps_to_solve(outcomes: Sequence[Outcome]) -> list[int]:
    """The steps each solved run took, in order."""
    return [o.steps for o in outcomes if o.solved]


def spread(values: Sequence[float]) -> Message | str:
    """'median 450 (range 300-700)', '450' for one value, or '' for none."""
    if not values:
        return ""
    if len(values) == 1:
        return f"{values[0]:g}"
    median = N_("median {median:g} (range {low:g}-{high:g})")
    return Message(median, median=statistics.median(values), low=min(values), high=max(values))
