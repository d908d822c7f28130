"""Figures of a training run: loss and accuracy against the step, from its metric rows, and the learning rate.

Rows are dicts as `transformer.training` writes them ("step", "train_loss", "val_loss", "token_acc",
"exact_match", ...). Long runs are thinned to `max_points` rows so a live chart stays cheap to send.
"""

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ..curves import downsample
from ..i18n import Translator
from ..training import MetricRow, TrainConfig
from . import ENGLISH, LEGEND_AT_FOOT, fit_legend, fit_title, title_layout, top_margin
from .palette import MARKER, TRAIN, VALID, dash_of
from .theme import FONT


def loss_figure(
    rows: Sequence[MetricRow],
    max_points: int = 500,
    train_floor: float | None = None,
    step_losses: Sequence[float] | None = None,
    height: int = 420,
    tr: Translator = ENGLISH,
    fit_px: float | None = None,
) -> go.Figure:
    """Training and held-out loss against the step, on a log axis (late progress stays visible).

    `step_losses`: the training loss of every step, drawn step by step (as the mean of each run of consecutive
    steps past `max_points` steps, and labelled so) instead of the rows' means. `train_floor`: the lowest loss the
    training objective allows (label smoothing), drawn as a dotted line. `fit_px`: the chart's narrowest width, which
    its legend's names fit.
    """
    if step_losses is None:
        series = [("train_loss", tr.gettext("training loss"), TRAIN), ("val_loss", tr.gettext("held-out loss"), VALID)]
        traces = _curves(rows, max_points, series)
        spread = [row[c] for row in rows for c in ("train_loss", "val_loss")]
    else:
        traces = _curves(rows, max_points, [("val_loss", tr.gettext("held-out loss"), VALID)])
        steps, means, per = step_means(step_losses, max_points)
        name = (
            tr.gettext("training loss, every step")
            if per == 1
            else tr.gettext("training loss, mean of every {per} steps", per=per)
        )
        traces.append(_line(steps, means, name, TRAIN, width=2, markers=False))
        spread = [*means, *(row["val_loss"] for row in rows)]
    layout = dict(yaxis=loss_axis(spread, tr.gettext("loss (log scale)")))
    if train_floor:
        layout |= dict(
            shapes=[
                dict(
                    type="line",
                    xref="x domain",
                    x0=0,
                    x1=1,
                    yref="y",
                    y0=train_floor,
                    y1=train_floor,
                    line=dict(color=TRAIN, dash="dot", width=2),
                )
            ],
            # on a log axis an annotation's y is the log10 of its value (a shape's is the value itself)
            annotations=[
                dict(
                    text=tr.gettext("training loss floor"),
                    xref="x domain",
                    x=0,
                    xanchor="left",
                    yref="y",
                    y=math.log10(train_floor),
                    yanchor="top",
                    showarrow=False,
                )
            ],
        )
    return _line_chart(traces, tr.gettext("Loss"), tr, height, fit_px, **layout)


def lr_figure(config: TrainConfig, step: int, max_points: int = 400, tr: Translator = ENGLISH) -> go.Figure:
    """The learning rate `config` gives every step of its budget, with a dashed line at `step` (where a run is)."""
    steps = list(range(1, config.steps + 1, max(1, config.steps // max_points)))
    rates = [config.lr_at(s) for s in steps]
    curve = _line(steps, rates, tr.gettext("learning rate"), TRAIN, markers=False)
    hover = tr.gettext("step {step}: {value}", step="%{x}", value="%{y:.2e}")
    curve |= dict(showlegend=False, hovertemplate=f"{hover}<extra></extra>")
    return _line_chart(
        [curve],
        tr.gettext("Learning rate"),
        tr,
        # headroom over the peak for the step's label, which hangs from the plot's top
        yaxis=dict(
            title=tr.gettext("learning rate"), range=[0, 1.2 * max(rates)], exponentformat="e", **CLEAR_OF_STEP_ZERO
        ),
        shapes=[
            dict(
                type="line",
                xref="x",
                x0=step,
                x1=step,
                yref="y domain",
                y0=0,
                y1=1,
                line=dict(color=MARKER, dash="dash", width=2),
            )
        ],
        annotations=[
            dict(
                text=tr.gettext("step {step}", step=step),
                xref="x",
                x=step,
                xanchor="left",
                yref="y domain",
                y=1,
                yanchor="top",
                showarrow=False,
                xshift=4,  # clear of the dashed line's top dash ("|step 141")
                bgcolor="white",  # a grid line under it does not cross it
            )
        ],
    )


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


def loss_axis(losses: Sequence[float | None], title: str | None = None) -> dict:
    """The one axis every chart of a loss draws it on: a log scale (late progress stays visible), ticked by
    `loss_ticks`, small losses as powers of ten (10⁻⁶, not Plotly's SI prefix "1µ"), titled `title` (None: a panel
    whose title names it)."""
    title = {} if title is None else {"title": title}
    return dict(type="log", exponentformat="power", **loss_ticks(losses), **title)


MANTISSAS = (
    (1, 2, 5),
    (1, 1.5, 2, 3, 5, 7),
    (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8),
    tuple(range(10, 100)),
    tuple(range(100, 1000, 2)),
    tuple(range(100, 1000)),
)


MOST_POWER_LABELS = 5  # labels of powers of ten on a loss axis: more overlap on a short chart (a phone's, 130 px)


def loss_ticks(losses: Sequence[float]) -> dict:
    """Tick labels at powers of ten where two or more lie between the lowest loss and the highest (every one, or every
    second, third ... so that at most MOST_POWER_LABELS lie there: a loss from 10 to 10⁻⁹); else at 1, 2 and 5
    times a power of ten, each written whole ("0.3", "2"), so a loss between 0.3 and 3.7 gets several labels, and
    never Plotly's own there, the leading digit alone (3, 2, 1, 9, 8 ... for 0.3 to 3, which reads as a loss rising to
    9). Where fewer than two of those fall between the lowest and the highest (1.6 to 2.6: only 2), finer ones
    (MANTISSAS), down to steps of 0.01 (two groups' losses at 1.46 and 1.56 on a teacher's board); narrower still,
    Plotly's own."""
    losses = [x for x in losses if x and x > 0]
    if not losses:
        return {}
    low, high = min(losses), max(losses)
    powers = sum(low <= 10.0**e <= high for e in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1))
    if powers >= 2:
        return dict(dtick=math.ceil(powers / MOST_POWER_LABELS))
    powers = range(math.floor(math.log10(low)) - 1, math.floor(math.log10(high)) + 2)
    reach = min(2.5, high / low)  # labels this far beyond the losses: the axis's margins, never hundreds of 0.01 steps
    for mantissas in MANTISSAS:
        scale = 10 ** -math.floor(math.log10(mantissas[-1]))  # 1..99 as 1.0..9.9
        candidates = [round(m * scale * 10.0**e, 12) for e in powers for m in mantissas]
        values = [v for v in candidates if low / reach <= v <= high * reach]
        if sum(low <= v <= high for v in values) >= 2:
            return dict(tickmode="array", tickvals=values, ticktext=[f"{v:.3g}" for v in values])
    return {}


# A y axis whose lowest label ("0%", "0") sits level with a step axis's "0": its labels set this far left of the axis,
# clear of that "0", which is centred on the axis (drawn against the axis, the two met at the origin on a phone)
CLEAR_OF_STEP_ZERO = dict(ticklabelstandoff=8)


def accuracy_figure(
    rows: Sequence[MetricRow],
    max_points: int = 500,
    height: int = 420,
    tr: Translator = ENGLISH,
    fit_px: float | None = None,
) -> go.Figure:
    """Held-out token accuracy (teacher forced) and exact-match (greedy decoding, whole sequence right), in %;
    `fit_px` as `loss_figure`'s."""
    series = [
        ("token_acc", tr.gettext("token accuracy"), TRAIN),
        ("exact_match", tr.gettext("exact match (whole sequence)"), VALID),
    ]
    traces = _curves(rows, max_points, series, scale=100)
    yaxis = dict(title=tr.gettext("held-out accuracy (%)"), range=[0, 101], ticksuffix="%", **CLEAR_OF_STEP_ZERO)
    return _line_chart(traces, tr.gettext("Accuracy"), tr, height, fit_px, yaxis=yaxis)


def _curves(
    rows: Sequence[MetricRow], max_points: int, series: list[tuple[str, str, str]], scale: float = 1
) -> list[dict]:
    """One line per (column, legend name, colour), against "step"."""
    rows = downsample(rows, max_points)
    steps = [row["step"] for row in rows]
    return [
        _line(steps, [row[column] * scale for row in rows], name, color, markers=len(rows) < 40)
        for column, name, color in series
    ]


def _line(x: Sequence[float], y: Sequence[float], name: str, color: str, width: int = 3, markers: bool = True) -> dict:
    """A line trace; numpy arrays, which Plotly checks and sends at once rather than value by value."""
    return dict(
        type="scatter",
        x=np.asarray(x),
        y=np.asarray(y, dtype=float),
        name=name,
        mode="lines+markers" if markers else "lines",
        line=dict(color=color, width=width, dash=dash_of(color)),
        hovertemplate="%{y:.4g}",
    )


LINE_CHART = dict(
    font=FONT,
    margin=dict(l=70, r=20, t=60, b=110),
    hovermode="x unified",
    legend=LEGEND_AT_FOOT,  # in the page's two narrow columns a legend beside the title ran into it
)  # the layout every line chart of a run shares


def line_chart_layout(fig: go.Figure, title: str, height: int = 420, fit_px: float | None = None) -> go.Figure:
    """`fig` with a title (in lines that fit a chart `fit_px` wide, if given) and LINE_CHART's projector-sized font
    and legend under the axis."""
    title = title if fit_px is None else fit_title(title, fit_px)
    return fig.update_layout(title=title_layout(title), height=height, **_line_chart_frame(title))


def _line_chart_frame(title: str) -> dict:
    """LINE_CHART with a top margin that holds the toolbar and `title`."""
    return {**LINE_CHART, "margin": {**LINE_CHART["margin"], "t": top_margin(title, LINE_CHART["margin"]["t"])}}


def _line_chart(
    traces: list[dict], title: str, tr: Translator, height: int = 420, fit_px: float | None = None, **layout
) -> go.Figure:
    """Traces against the training step, laid out as `line_chart_layout` does, built in one go: each `update_*`
    call on a Figure checks its arguments anew, at many times the cost of this. Their names fit `fit_px`, if given."""
    if fit_px is not None:
        traces = [trace | dict(name=fit_legend(trace["name"], fit_px)) for trace in traces]
    xaxis = dict(title=tr.gettext("training step"), rangemode="tozero")
    frame = _line_chart_frame(title)
    return go.Figure(
        dict(data=traces, layout=dict(title=title_layout(title), height=height, xaxis=xaxis, **frame, **layout))
    )
