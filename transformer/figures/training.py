"""Figures of a training run: loss and accuracy against the step, from its metric rows, and the learning rate.

Rows are dicts as `transformer.training` writes them ("step", "train_loss", "val_loss", "token_acc",
"exact_match", ...). Long runs are thinned to `max_points` rows so a live chart stays cheap to send.
"""

from collections.abc import Sequence

import plotly.graph_objects as go

from ..live import downsample
from ..training import MetricRow, TrainConfig

FONT = dict(size=16)  # readable on a projector
TRAIN, VALID = "#1f5fbf", "#d9480f"
MARKER = "#555555"  # a line marking a step or a reference level


def loss_figure(rows: Sequence[MetricRow], max_points: int = 500, train_floor: float | None = None) -> go.Figure:
    """Training and held-out loss against the step, on a log axis (late progress stays visible).

    `train_floor`: the lowest loss the training objective allows (label smoothing), drawn as a dotted line.
    """
    fig = _curves(rows, max_points, [("train_loss", "training loss", TRAIN), ("val_loss", "held-out loss", VALID)])
    fig.update_yaxes(title="loss (log scale)", type="log", **log_ticks(rows, ("train_loss", "val_loss")))
    if train_floor:
        fig.add_hline(
            y=train_floor,
            line=dict(color=TRAIN, dash="dot", width=2),
            annotation_text="training loss floor",
            annotation_position="bottom left",
        )
    return line_chart_layout(fig, "Loss")


def lr_figure(config: TrainConfig, step: int, max_points: int = 400) -> go.Figure:
    """The learning rate `config` gives every step of its budget, with a dashed line at `step` (where a run is)."""
    steps = list(range(1, config.steps + 1, max(1, config.steps // max_points)))
    fig = go.Figure(
        go.Scatter(
            x=steps,
            y=[config.lr_at(s) for s in steps],
            mode="lines",
            showlegend=False,
            line=dict(color=TRAIN, width=3),
            hovertemplate="step %{x}: %{y:.2e}<extra></extra>",
        )
    )
    fig.add_vline(x=step, line=dict(color=MARKER, dash="dash", width=2), annotation_text=f"step {step}")
    fig.update_xaxes(title="training step", rangemode="tozero")
    fig.update_yaxes(title="learning rate", rangemode="tozero", exponentformat="e")
    return line_chart_layout(fig, "Learning rate")


def log_ticks(rows: Sequence[MetricRow], columns: Sequence[str] = ("train_loss",)) -> dict:
    """Tick labels at powers of ten only when the losses span more than one; else Plotly's 1-2-5 ticks, so a loss
    between 1 and 3 does not get a single label."""
    losses = [row[c] for row in rows for c in columns if row[c] and row[c] > 0]
    return dict(dtick=1) if losses and max(losses) > 10 * min(losses) else {}


def accuracy_figure(rows: Sequence[MetricRow], max_points: int = 500) -> go.Figure:
    """Held-out token accuracy (teacher forced) and exact-match (greedy decoding, whole sequence right), in %."""
    fig = _curves(
        rows,
        max_points,
        [("token_acc", "token accuracy", TRAIN), ("exact_match", "exact match (whole sequence)", VALID)],
        scale=100,
    )
    fig.update_yaxes(title="held-out accuracy (%)", range=[0, 101], ticksuffix="%")
    return line_chart_layout(fig, "Accuracy")


def _curves(
    rows: Sequence[MetricRow], max_points: int, series: list[tuple[str, str, str]], scale: float = 1
) -> go.Figure:
    """One line per (column, legend name, colour), against "step"."""
    rows = downsample(rows, max_points)
    steps = [row["step"] for row in rows]
    fig = go.Figure()
    for column, name, color in series:
        fig.add_trace(
            go.Scatter(
                x=steps,
                y=[row[column] * scale for row in rows],
                name=name,
                mode="lines+markers" if len(rows) < 40 else "lines",
                line=dict(color=color, width=3),
                hovertemplate="%{y:.4g}",
            )
        )
    fig.update_xaxes(title="training step", rangemode="tozero")
    return fig


def line_chart_layout(fig: go.Figure, title: str) -> go.Figure:
    """Title, projector-sized font, and the legend under the axis."""
    fig.update_layout(
        title=title,
        font=FONT,
        height=420,
        margin=dict(l=70, r=20, t=60, b=110),
        hovermode="x unified",
        # under the axis: in the page's two narrow columns a legend beside the title ran into it
        legend=dict(orientation="h", yanchor="top", y=-0.3, xanchor="left", x=0),
    )
    return fig
