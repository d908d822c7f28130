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


def loss_figure(
    rows: Sequence[MetricRow],
    max_points: int = 500,
    train_floor: float | None = None,
    step_losses: Sequence[float] | None = None,
    height: int = 420,
) -> go.Figure:
    """Training and held-out loss against the step, on a log axis (late progress stays visible).

    `step_losses`: the training loss of every step, drawn step by step (as the mean of each run of consecutive
    steps past `max_points` steps, and labelled so) instead of the rows' means. `train_floor`: the lowest loss the
    training objective allows (label smoothing), drawn as a dotted line.
    """
    if step_losses is None:
        fig = _curves(rows, max_points, [("train_loss", "training loss", TRAIN), ("val_loss", "held-out loss", VALID)])
        spread = [row[c] for row in rows for c in ("train_loss", "val_loss")]
    else:
        fig = _curves(rows, max_points, [("val_loss", "held-out loss", VALID)])
        steps, means, per = step_means(step_losses, max_points)
        name = "training loss, every step" if per == 1 else f"training loss, mean of every {per} steps"
        fig.add_trace(
            go.Scatter(
                x=steps, y=means, name=name, mode="lines", line=dict(color=TRAIN, width=2), hovertemplate="%{y:.4g}"
            )
        )
        spread = [*means, *(row["val_loss"] for row in rows)]
    fig.update_yaxes(title="loss (log scale)", type="log", **loss_ticks(spread))
    if train_floor:
        fig.add_hline(
            y=train_floor,
            line=dict(color=TRAIN, dash="dot", width=2),
            annotation_text="training loss floor",
            annotation_position="bottom left",
        )
    return line_chart_layout(fig, "Loss", height)


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


def step_means(losses: Sequence[float], max_points: int) -> tuple[list[float], list[float], int]:
    """At most `max_points` points of a per-step series: each the mean of `per` consecutive steps, placed at the
    mean step of its run (steps count from 1). Returns (steps, means, per)."""
    per = max(1, -(-len(losses) // max_points))  # ceil
    steps, means = [], []
    for start in range(0, len(losses), per):
        chunk = losses[start : start + per]
        steps.append(start + (len(chunk) + 1) / 2)
        means.append(sum(chunk) / len(chunk))
    return steps, means, per


def log_ticks(rows: Sequence[MetricRow], columns: Sequence[str] = ("train_loss",)) -> dict:
    """`loss_ticks` of the rows' `columns`."""
    return loss_ticks([row[c] for row in rows for c in columns])


def loss_ticks(losses: Sequence[float]) -> dict:
    """Tick labels at powers of ten only when the losses span more than one; else Plotly's 1-2-5 ticks, so a loss
    between 1 and 3 does not get a single label."""
    losses = [x for x in losses if x and x > 0]
    return dict(dtick=1) if losses and max(losses) > 10 * min(losses) else {}


def accuracy_figure(rows: Sequence[MetricRow], max_points: int = 500, height: int = 420) -> go.Figure:
    """Held-out token accuracy (teacher forced) and exact-match (greedy decoding, whole sequence right), in %."""
    fig = _curves(
        rows,
        max_points,
        [("token_acc", "token accuracy", TRAIN), ("exact_match", "exact match (whole sequence)", VALID)],
        scale=100,
    )
    fig.update_yaxes(title="held-out accuracy (%)", range=[0, 101], ticksuffix="%")
    return line_chart_layout(fig, "Accuracy", height)


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


def line_chart_layout(fig: go.Figure, title: str, height: int = 420) -> go.Figure:
    """Title, projector-sized font, and the legend under the axis."""
    fig.update_layout(
        title=title,
        font=FONT,
        height=height,
        margin=dict(l=70, r=20, t=60, b=110),
        hovermode="x unified",
        # under the axis: in the page's two narrow columns a legend beside the title ran into it
        legend=dict(orientation="h", yanchor="top", y=-0.3, xanchor="left", x=0),
    )
    return fig
