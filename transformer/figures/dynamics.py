"""Figures of how training reshapes a model, from its `transformer.dynamics` records: the symbols' embeddings on
the run's fixed 2-D axes at one row, and each layer's gradient norm at every row."""

import math
from collections.abc import Callable, Sequence
from functools import partial

import plotly.graph_objects as go

from ..i18n import Translator
from . import ENGLISH, drawn_px, fit_title, title_layout, top_margin, wrap_lines
from .heatmaps import ROW_LABEL_GAP_PX, escape_labels
from .palette import BLUE
from .theme import FONT, colour_bar

# In a narrow chart the colour bar lies under the plot, at the figure's foot: beside it, it and the layers' names
# left the cells a tenth of a half-page column
FOOT_BAR = dict(orientation="h", thickness=14, y=0, yref="container", yanchor="bottom", ypad=8, tickangle=0)
FOOT_BAR_PX = 90  # the room it takes under the step axis: its title, labels and bar
SIDE_PX = 10  # the gradient chart's margins, beside the layers' names and the plot
LABEL_LINE_PX = 20  # a colour bar label's height in the page's font
TICK_GAP_PX = 8  # at least between two of the foot bar's labels: half the type ("−0.8−0.6" read as one)
MANTISSAS = ((1, 2, 5), (1,))  # the norms a colour bar labels, each times a power of ten: the most that fit

TRAIL = "#bbbbbb"  # where the symbols were at earlier rows
POINT = BLUE


def embedding_figure(
    records: Sequence[dict],
    index: int,
    symbols: Sequence[str],
    height: int = 420,
    tr: Translator = ENGLISH,
    fit_px: int | None = None,
) -> go.Figure:
    """The symbols' embeddings at row `index`, with the path each took from the first row to there; its title in
    lines that fit a chart `fit_px` wide, where given.

    The axes' ranges cover every row, so moving from row to row moves the points, never the axes.
    """
    points = [record["embeddings"] for record in records]  # (rows, symbols, 2)
    labels = escape_labels(symbols)
    paths = [[row[s] for row in points[: index + 1]] + [(None, None)] for s in range(len(labels))]  # None: a break
    trails = go.Scatter(
        x=[x for path in paths for x, _ in path],
        y=[y for path in paths for _, y in path],
        mode="lines",
        line=dict(color=TRAIL, width=1),
        hoverinfo="skip",
        name=tr.gettext("path so far"),
    )
    now = go.Scatter(
        x=[x for x, _ in points[index]],
        y=[y for _, y in points[index]],
        mode="markers+text",
        text=labels,
        textposition="top center",
        marker=dict(color=POINT, size=10),
        hovertemplate="%{text}: (%{x:.2f}, %{y:.2f})<extra></extra>",
        name=tr.gettext("step {step}", step=records[index]["step"]),
    )
    x_range, y_range = _span([point for row in points for point in row])
    title = _fitted(tr.gettext("Symbol embeddings at step {step}", step=records[index]["step"]), fit_px)
    fig = go.Figure([trails, now])
    fig.update_layout(
        height=height,
        font=FONT,
        margin=dict(l=10, r=10, t=top_margin(title), b=10),
        title=title_layout(title),
        xaxis=dict(title=tr.gettext("first principal axis"), range=x_range, zeroline=False),
        yaxis=dict(title=tr.gettext("second principal axis"), range=y_range, zeroline=False),
        showlegend=False,
    )
    return fig


def _span(points: Sequence[Sequence[float]]) -> tuple[list[float], list[float]]:
    """x and y ranges holding every point, with a margin (and a width of at least 1 where all coincide)."""
    ranges = []
    for axis in (0, 1):
        low, high = min(p[axis] for p in points), max(p[axis] for p in points)
        pad = max(high - low, 1.0) * 0.1
        ranges.append([low - pad, high + pad])
    return ranges[0], ranges[1]


def gradient_figure(
    records: Sequence[dict], height: int = 300, tr: Translator = ENGLISH, fit_px: int | None = None
) -> go.Figure:
    """Each layer's gradient norm at each row (before clipping), as a heatmap on a log colour scale: rows read at
    no step of their own (a run that ended between two rows) are left out. Its title in lines that fit a chart
    `fit_px` wide, where given, and its layers' names beside it whole."""
    read = [r for r in records if r["grad_norms"] is not None]
    layers = [tr.gettext(layer) for layer in (records[-1]["layers"] if records else [])]
    if fit_px is not None:  # "encoder layer 0" in two lines: whole, the names left the cells a sliver of the column
        width = partial(drawn_px, size=FONT["size"])
        widest_word = max((width(word) for name in layers for word in name.split()), default=0.0)
        layers = ["<br>".join(wrap_lines(name, widest_word, width)) for name in layers]
    z = [[math.log10(max(r["grad_norms"][i], 1e-12)) for r in read] for i in range(len(layers))]  # (layers, rows)
    norms = [[r["grad_norms"][i] for r in read] for i in range(len(layers))]
    logs, title = [v for row in z for v in row], _fitted(tr.gettext("Gradient norm of each layer"), fit_px)
    if fit_px is None:  # a bar beside the plot, as tall as it, its labels a line each
        ticks = norm_ticks(logs, height - top_margin(title) - SIDE_PX, lambda _: LABEL_LINE_PX)
    else:  # a bar under the plot, as wide as it, its labels side by side
        ticks = norm_ticks(logs, fit_px - 2 * SIDE_PX - widest_word - ROW_LABEL_GAP_PX, width)
    fig = go.Figure(
        go.Heatmap(
            x=[str(r["step"]) for r in read],
            y=layers,
            z=z,
            customdata=norms,
            colorscale="Viridis",
            colorbar=colour_bar(tr.gettext("norm (log scale)"), **ticks)
            if fit_px is None
            else FOOT_BAR | ticks | dict(title=dict(text=tr.gettext("norm (log scale)"), side="bottom")),
            hovertemplate=tr.gettext(
                "{layer}, step {step}: {norm}", layer="%{y}", step="%{x}", norm="%{customdata:.3g}"
            )
            + "<extra></extra>",
        )
    )
    fig.update_layout(
        height=height if fit_px is None else height + FOOT_BAR_PX,
        font=FONT,
        margin=dict(l=SIDE_PX, r=SIDE_PX, t=top_margin(title), b=SIDE_PX if fit_px is None else FOOT_BAR_PX),
        title=title_layout(title),
        xaxis=dict(title=tr.gettext("step"), type="category"),
        yaxis=dict(autorange="reversed", automargin=True),  # the margin grows to hold "encoder layer 0"
    )
    return fig


def norm_ticks(logs: Sequence[float], bar_px: float, label_px: Callable[[str], float]) -> dict:
    """A log₁₀ colour bar's ticks over the values `logs`, labelled as the norms they are: each 1, 2 and 5 times a
    power of ten in their range, else each power of ten, the first whose neighbours' labels (each `label_px` long
    along the bar) stay TICK_GAP_PX apart along a bar `bar_px` long; the range's two ends where fewer than two
    such norms lie in it, its first and last power of ten where neither fits."""
    if not logs:
        return {}
    low, high = min(logs), max(logs)
    for mantissas in MANTISSAS:
        norms = [m * 10.0**k for k in range(math.floor(low), math.ceil(high) + 1) for m in mantissas]
        vals = [math.log10(n) for n in norms if low <= math.log10(n) <= high]
        at = [(v - low) / (high - low) * bar_px for v in vals] if len(vals) >= 2 else []
        sizes = [label_px(_norm_label(v)) for v in vals]
        if at and all(at[i + 1] - at[i] >= (sizes[i] + sizes[i + 1]) / 2 + TICK_GAP_PX for i in range(len(at) - 1)):
            break
    else:
        vals = sorted({low, high}) if len(vals) < 2 else [vals[0], vals[-1]]
    return dict(tickvals=vals, ticktext=[_norm_label(v) for v in vals])


def _norm_label(log: float) -> str:
    """The norm 10**`log` in two figures, whole from 100 up ("500", not "5e+02")."""
    norm = 10**log
    return f"{norm:,.0f}" if norm >= 100 else f"{norm:.2g}"


def _fitted(title: str, fit_px: int | None) -> str:
    """`title` in lines that fit a chart `fit_px` wide, drawn at Plotly's title size; as it is where None."""
    return title if fit_px is None else fit_title(title, fit_px)
