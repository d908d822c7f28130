"""A run's metric rows for plots and tables: thinned to a few hundred points, or as a table in the training
module's columns."""

from collections.abc import Sequence

import pandas as pd
import torch

from .training import METRIC_COLUMNS, MetricRow


def downsample(rows: Sequence[MetricRow], max_points: int = 500) -> list[MetricRow]:
    """At most `max_points` rows, evenly spread, always keeping the first and the last."""
    if len(rows) <= max_points:
        return list(rows)
    if max_points < 2:
        raise ValueError("max_points must be at least 2")
    picks = torch.linspace(0, len(rows) - 1, max_points).round().long().unique().tolist()
    return [rows[i] for i in picks]


def metrics_table(rows: Sequence[MetricRow]) -> pd.DataFrame:
    """The metric rows as a table with the training module's columns, in its order."""
    return pd.DataFrame(list(rows), columns=list(METRIC_COLUMNS))
