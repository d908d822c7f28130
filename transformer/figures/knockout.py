"""Figures for head knockout: a model's held-out score with each attention head removed alone.

Input: the `heads` table of a `transformer.knockout.KnockoutGrid` (kind, layer, head, exact_match, token_acc).
"""

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..inspection import ATTENTION_KINDS
from .attention import _figure, _grid, _ticks

METRICS = {"exact_match": "exact match", "token_acc": "token accuracy"}
SCORE_SCALE = "RdYlGn"  # red: the model fails without the head; green: it does not need it
# Three ticks and the title along the bar: a one-layer grid's bar is about 120 px tall, too short for Plotly's six
# automatic ticks with the title above them.
COLORBAR = dict(len=1, thickness=14, tickvals=[0, 0.5, 1], ticktext=["0%", "50%", "100%"])


def knockout_heatmaps(heads: pd.DataFrame, intact: float, metric: str = "exact_match") -> go.Figure:
    """One panel per attention kind, layer by head, of the held-out `metric` with that head removed alone, on a
    0..1 scale; `intact` (the model's own score) is in the title."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {', '.join(METRICS)}, got {metric!r:.20}")
    kinds = list(ATTENTION_KINDS)
    layout, refs = _grid([ATTENTION_KINDS[kind][0] for kind in kinds], per_row=3, h_gap=0.08)
    n_layers, n_heads = int(heads["layer"].max()) + 1, int(heads["head"].max()) + 1
    traces = []
    for i, (kind, ref) in enumerate(zip(kinds, refs)):
        z = np.full((n_layers, n_heads), np.nan)
        rows = heads[heads["kind"] == kind]
        z[rows["layer"], rows["head"]] = rows[metric]
        traces.append(
            dict(
                type="heatmap",
                z=z,
                zmin=0,
                zmax=1,
                colorscale=SCORE_SCALE,
                showscale=i == 0,
                colorbar=COLORBAR | dict(title=dict(text=METRICS[metric], side="right")),
                xgap=2,
                ygap=2,
                text=[[f"{100 * x:.0f}%" for x in row] for row in z],
                texttemplate="%{text}" if n_heads <= 8 else None,
                hovertemplate=f"layer %{{y}}, head %{{x}} removed: {METRICS[metric]} %{{z:.1%}}<extra></extra>",
                **ref,
            )
        )
        n = ref["xaxis"][1:]
        layout[f"xaxis{n}"].update(title="head", **_ticks([str(h) for h in range(n_heads)]))
        layout[f"yaxis{n}"].update(
            title="layer" if i == 0 else None, autorange="reversed", **_ticks([str(layer) for layer in range(n_layers)])
        )
    title = f"Held-out {METRICS[metric]} with one head removed (intact model: {intact:.1%})"
    return _figure(traces, layout, title, height=200 + 50 * n_layers)
