"""How far a run is: its step, the fraction of its budget done, its rate and the time left, from its metric rows."""

from collections.abc import Sequence
from dataclasses import dataclass

from .training import MetricRow, TrainConfig


@dataclass
class Progress:
    step: int  # steps done, as of the latest metric row
    fraction: float  # of the step budget, 0..1
    steps_per_s: float  # 0 before the first row
    eta_s: float | None  # seconds left at most (early stopping may end sooner); None before the first row


def progress(rows: Sequence[MetricRow], train_config: TrainConfig) -> Progress:
    """How far a run is, from its metric rows: the step and time budgets bound the ETA."""
    if not rows:
        return Progress(0, 0.0, 0.0, None)
    step, elapsed = int(rows[-1]["step"]), rows[-1]["elapsed_s"]
    rate = step / elapsed if elapsed > 0 else 0.0
    by_steps = (train_config.steps - step) / rate if rate else float("inf")
    eta = max(0.0, min(by_steps, train_config.time_budget_s - elapsed))
    return Progress(step, min(step / train_config.steps, 1.0), rate, eta)
