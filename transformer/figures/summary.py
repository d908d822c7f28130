"""A chart's text alternative, read off the figure itself: its title, then what each trace shows. A curve: its last
value and where it went from its first (down, up, unchanged); bars: the highest and the lowest; a heatmap: its size,
range and highest cell; points: how many; a diagram without data: its labels. Screen readers read it in place of
the chart (`st.plotly_chart(alt=...)`, and the report's `aria-label`).
"""

import html
import re
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ..i18n import N_, Translator
from . import ENGLISH

MOST_LABELS = 30  # a list names at most this many labels (the model's diagram has about 20)
TAGS = re.compile(r"<[^>]+>")


def plain(text: object) -> str:
    """Plotly text (HTML tags, entities, line breaks) as plain text on one line."""
    return " ".join(html.unescape(TAGS.sub(" ", str(text or ""))).split())


def _number(value: float, suffix: str = "") -> str:
    return f"{value:.3g}{suffix}"


def _axis(fig: go.Figure, ref: str | None, letter: str) -> dict:
    """The layout of a trace's axis ("x", "x2", ...) as a dict."""
    name = f"{letter}axis{(ref or letter)[1:]}"
    return fig.layout[name].to_plotly_json() if name in fig.layout else {}


def _label(axis: dict, value: object) -> str:
    """How the axis names a position: its tick text where it names integer positions, else the value itself."""
    ticks, texts = axis.get("tickvals"), axis.get("ticktext")
    if ticks is not None and texts is not None and value in list(ticks):
        return plain(texts[list(ticks).index(value)])
    if isinstance(value, float | np.floating):
        return str(round(value)) if float(value).is_integer() or abs(value) >= 1000 else f"{value:.3g}"
    return plain(value)


def _panel(fig: go.Figure, trace) -> str:
    """The name of the trace's panel in a figure of several: its y axis title, else its subplot's title."""
    axes = [name for name in fig.layout if name.startswith("xaxis")]
    if len(axes) < 2:
        return ""
    title = plain((_axis(fig, trace.yaxis, "y").get("title") or {}).get("text"))
    number = int((trace.xaxis or "x")[1:] or 1)
    if not title and len(fig.layout.annotations) >= len(axes):
        title = plain(fig.layout.annotations[number - 1].text)
    return title


def _curve(fig: go.Figure, trace, name: str, tr: Translator) -> str | None:
    y = np.asarray(trace.y if trace.y is not None else (), dtype=float)  # a gap (None) reads as NaN
    shown = np.flatnonzero(np.isfinite(y))
    if not len(shown) or trace.x is None:
        return tr.gettext(N_("{name}: no data yet."), name=name)
    x_axis, y_axis = _axis(fig, trace.xaxis, "x"), _axis(fig, trace.yaxis, "y")
    where = plain((x_axis.get("title") or {}).get("text")) or "x"
    suffix = y_axis.get("ticksuffix") or ""
    first, last, x = float(y[shown[0]]), float(y[shown[-1]]), trace.x[shown[-1]]
    values = dict(name=name, last=_number(last, suffix), axis=where, x=_label(x_axis, x), first=_number(first, suffix))
    if len(shown) == 1:
        return tr.gettext(N_("{name}: {last} at {axis} {x}."), **values)
    if _number(first) == _number(last):
        return tr.gettext(N_("{name}: {last} at {axis} {x}, as at the start."), **values)
    if last < first:
        return tr.gettext(N_("{name}: {last} at {axis} {x}, down from {first}."), **values)
    return tr.gettext(N_("{name}: {last} at {axis} {x}, up from {first}."), **values)


def _flat(trace) -> bool:
    """Whether `trace` is bars lying flat: its values on the x-axis, its labels on the y-axis."""
    return trace.type == "bar" and trace.orientation == "h"


def _bars(fig: go.Figure, trace, name: str, tr: Translator) -> str | None:
    heights, places = (trace.x, trace.y) if _flat(trace) else (trace.y, trace.x)
    values = [float(v) for v in heights if v is not None] if heights is not None else []
    if not values:
        return tr.gettext(N_("{name}: no data yet."), name=name)
    x_axis, y_axis = _axis(fig, trace.xaxis, "x"), _axis(fig, trace.yaxis, "y")
    label_axis, value_axis = (y_axis, x_axis) if _flat(trace) else (x_axis, y_axis)
    suffix = value_axis.get("ticksuffix") or ""
    high, low = int(np.argmax(values)), int(np.argmin(values))
    return tr.gettext(
        N_("{name}: highest {high} ({high_value}), lowest {low} ({low_value})."),
        name=name,
        high=_label(label_axis, places[high]),
        high_value=_number(values[high], suffix),
        low=_label(label_axis, places[low]),
        low_value=_number(values[low], suffix),
    )


def _heatmap(fig: go.Figure, trace, name: str, tr: Translator) -> str | None:
    z = np.asarray(trace.z, dtype=float) if trace.z is not None else np.empty((0, 0))
    if z.ndim != 2 or not np.isfinite(z).any():
        return tr.gettext(N_("{name}: no data yet."), name=name)
    row, column = np.unravel_index(np.nanargmax(z), z.shape)
    x_axis, y_axis = _axis(fig, trace.xaxis, "x"), _axis(fig, trace.yaxis, "y")
    xs = list(trace.x) if trace.x is not None else list(range(z.shape[1]))
    ys = list(trace.y) if trace.y is not None else list(range(z.shape[0]))
    row_label, column_label = _label(y_axis, ys[row]), _label(x_axis, xs[column])
    cells = np.asarray(trace.customdata, dtype=object) if trace.customdata is not None else None
    if cells is not None and cells.shape == (*z.shape, 2):  # `hover_grid`: each cell's labels, where a crowded axis
        row_label, column_label = (plain(label) for label in cells[row, column])  # labels only every few keys
    return tr.gettext(
        N_("{name}: {rows} by {columns} cells, from {low} to {high}; highest at {row}, {column}."),
        name=name,
        rows=z.shape[0],
        columns=z.shape[1],
        low=_number(float(np.nanmin(z))),
        high=_number(float(np.nanmax(z))),
        row=row_label,
        column=column_label,
    )


def _points(trace, name: str, tr: Translator) -> str:
    n = len(trace.x) if trace.x is not None else 0
    texts = [plain(text) for text in trace.text or ()] if isinstance(trace.text, tuple) else []
    if not texts:
        return tr.ngettext("{name}: {n} point.", "{name}: {n} points.", n, name=name)
    return tr.ngettext(
        "{name} ({n} point): {labels}.", "{name} ({n} points): {labels}.", n, name=name, labels=_some(texts, tr)
    )


def _some(labels: Sequence[str], tr: Translator) -> str:
    """The first MOST_LABELS of `labels` as a list in `tr`'s language, and an ellipsis if there are more."""
    return tr.gettext(N_(", ")).join(labels[:MOST_LABELS]) + (" …" if len(labels) > MOST_LABELS else "")


def _trace(fig: go.Figure, trace, tr: Translator) -> str | None:
    """What one trace shows, in a sentence; None for a trace drawn only as context (no hover)."""
    if getattr(trace, "hoverinfo", None) == "skip" or trace.visible is False:
        return None
    values_axis = _axis(fig, trace.xaxis, "x") if _flat(trace) else _axis(fig, trace.yaxis, "y")
    name = plain(trace.name) or plain((values_axis.get("title") or {}).get("text"))
    if panel := _panel(fig, trace):
        name = f"{name} ({panel})" if name else panel
    name = name or tr.gettext(N_("values"))
    if trace.type == "heatmap":
        return _heatmap(fig, trace, name, tr)
    if trace.type == "bar":
        return _bars(fig, trace, name, tr)
    if trace.type == "scatter" and "lines" in (trace.mode or "lines"):
        return _curve(fig, trace, name, tr)
    if trace.type == "scatter":
        return _points(trace, name, tr)
    return None


def _sentences(parts: Sequence[str]) -> str:
    """Sentences as one text: a space after each, but none after a Chinese full stop."""
    return "".join(part if part.endswith("。") else f"{part} " for part in parts).strip()


def describe(fig: go.Figure, tr: Translator = ENGLISH) -> str:
    """The figure's text alternative in `tr`'s language: its title, then a sentence per trace that shows data, or
    the labels of a diagram that has none."""
    traces = [sentence for trace in fig.data if (sentence := _trace(fig, trace, tr))]
    labels = list(dict.fromkeys(text for a in fig.layout.annotations if (text := plain(a.text))))
    if not traces and labels:
        traces = [tr.gettext(N_("Labels: {labels}."), labels=_some(labels, tr))]
    title = plain(fig.layout.title.text) or tr.gettext(N_("Chart") if fig.data else N_("Diagram"))
    return _sentences([tr.gettext(N_("{title}."), title=title.rstrip(".。")), *traces])
