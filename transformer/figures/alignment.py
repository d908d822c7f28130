"""Figures of the algorithm in the attention: the task's ideal cross-attention drawn over the learned one, and the
best head's alignment score over a training run. Scores and ideals come from `transformer.alignment`."""

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ..alignment import head_of, shown_score
from ..i18n import Translator
from . import ENGLISH, PHONE_CHART_PX, drawn_px, fit_title, title_layout, top_margin
from .attention import attention_heatmaps
from .heatmaps import as_array, escape_labels
from .palette import HIGHLIGHT
from .theme import FONT
from .training import CLEAR_OF_STEP_ZERO, MARKER, TRAIN, VALID

IDEAL = HIGHLIGHT  # the ideal cells' outline: stands out on the attention blues


def ideal_over_learned(
    weights,
    ideal,
    scores: Sequence[float],
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    title: str,
    per_row: int = 4,
    tr: Translator = ENGLISH,
    fit_px: int | None = None,
) -> go.Figure:
    """Attention weights (H, T_query, T_key), one panel per head (`per_row` to a row, or fewer to fit the key labels
    in a chart `fit_px` wide: `attention_heatmaps`) titled with its name and alignment score, with the cells of the
    ideal (T_query, T_key) alignment outlined."""
    fig = attention_heatmaps(weights, row_labels, col_labels, title, per_row, tr, title_lines=2, fit_px=fit_px)
    rows, cols = np.nonzero(as_array(ideal))
    marks = [
        dict(
            type="scatter",
            x=cols,
            y=rows,
            mode="markers",
            marker=dict(symbol="square-open", size=12, color=IDEAL, line=dict(width=2)),
            name=tr.gettext("ideal"),
            showlegend=False,  # the caption says what the outlines are: a legend would sit on the head titles
            hoverinfo="skip",
            xaxis=heatmap.xaxis,
            yaxis=heatmap.yaxis,
        )
        for h, heatmap in enumerate(fig.data)
    ]
    fig.add_traces(marks)
    # the score under the head's name: two short lines stay apart over four panels on a phone
    titles = [
        dict(a.to_plotly_json(), text=f"{tr.gettext('head {head}', head=h)}<br>{shown_score(s):.2f}")
        for h, (a, s) in enumerate(zip(fig.layout.annotations, scores))
    ]
    fig.update_layout(annotations=titles, margin_t=fig.layout.margin.t + 25)  # room for the second line
    return fig


LABEL_SPAN = 0.15  # a line's label, of the 0..1 axis of a best-head figure: a curve ending within it would cross it
NOTE_PX = 28  # a line's label drawn at the figure's 16 px font, in pixels of height
TITLE_PX = 18  # the best-head figure's title
TOP, BOTTOM_PX = 1.02, 60  # a best-head figure's axis top (a curve at 1 in view), and its margin under the plot
LEFT_PX, RIGHT_PX = 70, 20  # a best-head figure's left and right margins


def head_name(label: str, tr: Translator = ENGLISH) -> str:
    """A `head_label` in words, as the heatmaps and Knockout name heads ("layer 0, head 2"); any other text as it
    is."""
    where = head_of(label)
    return label if where is None else tr.gettext("layer {layer}, head {head}", layer=where[0], head=where[1])


def best_head_figure(
    steps: Sequence[int],
    best: Sequence[tuple[str, float]],
    chance: float,
    threshold: float,
    height: int = 320,
    tr: Translator = ENGLISH,
    fit_px: int | None = None,
) -> go.Figure:
    """The best-aligned head's score at each step (its name in the hover), with `threshold` dashed and uniform
    attention's score (`chance`) dotted; its title in lines that fit a chart `fit_px` wide, where given. The
    threshold's label sits away from the curve: above its line while the curve ends below it, under it once the curve
    ends above it, at whichever end of the line the curve does not pass through the label (`_label_end`). Uniform
    attention's label sits above its line, but below it where a curve that stayed near uniform (a model without
    positional encoding) ends just above, and would strike it through."""
    trace = dict(
        type="scatter",
        x=np.asarray(steps),
        y=np.asarray([score for _, score in best], dtype=float),
        customdata=[
            [name, f"{shown_score(s):.2f}"]
            for name, (_, s) in zip(escape_labels([head_name(h, tr) for h, _ in best]), best)
        ],
        mode="lines+markers" if len(steps) < 40 else "lines",
        line=dict(color=TRAIN, width=3),
        name=tr.gettext("best head"),
        hovertemplate=tr.gettext(
            "step {step}: {head} {score}", step="%{x}", head="%{customdata[0]}", score="%{customdata[1]}"
        )
        + "<extra></extra>",
    )
    level = dict(type="line", xref="x domain", x0=0, x1=1, yref="y")
    note = dict(xref="x domain", yanchor="bottom", showarrow=False)
    title = tr.gettext("Alignment of the best cross-attention head")
    title = title if fit_px is None else fit_title(title, fit_px, TITLE_PX)
    below = bool(best) and chance <= best[-1][1] < chance + LABEL_SPAN  # uniform attention's label under its line
    room = NOTE_PX / (height - top_margin(title) - BOTTOM_PX)  # the label's height, a share of the plot's
    low = min(0.0, (chance - room * TOP) / (1 - room)) if below else 0.0  # room for it above the x axis's ticks
    found = tr.gettext("found: {threshold:g}", threshold=threshold)
    under = bool(best) and best[-1][1] >= threshold
    label_y = (threshold - room * (TOP - low), threshold) if under else (threshold, threshold + room * (TOP - low))
    line_px = max((fit_px or PHONE_CHART_PX) - LEFT_PX - RIGHT_PX, 1)  # the line's length where the chart is narrowest
    share = drawn_px(found, FONT["size"]) / line_px
    end = _label_end(steps, [score for _, score in best], share, label_y)
    layout = dict(
        title=title_layout(title, dict(FONT, size=TITLE_PX)),
        font=FONT,
        height=height,
        margin=dict(l=LEFT_PX, r=RIGHT_PX, t=top_margin(title), b=BOTTOM_PX),
        showlegend=False,
        xaxis=dict(title=tr.gettext("training step"), rangemode="tozero"),
        yaxis=dict(title=tr.gettext("attention on the ideal token"), range=[low, TOP], **CLEAR_OF_STEP_ZERO),
        shapes=[
            dict(level, y0=threshold, y1=threshold, line=dict(color=VALID, dash="dash", width=2)),
            dict(level, y0=chance, y1=chance, line=dict(color=MARKER, dash="dot", width=2)),
        ],
        annotations=[
            dict(
                note,
                x=end,
                xanchor=("left", "right")[end],
                yanchor="top" if under else "bottom",
                y=threshold,
                text=found,
            ),
            dict(
                note,
                x=1,
                y=chance,
                xanchor="right",
                yanchor="top" if below else "bottom",
                text=tr.gettext("uniform attention"),
            ),
        ],
    )
    return go.Figure(data=[trace], layout=layout)


def _label_end(steps: Sequence[int], scores: Sequence[float], share: float, label_y: tuple[float, float]) -> int:
    """Which end of a level line (0: left, 1: right) can hold a label `share` of the line's length and `label_y`
    (low, high) tall without the curve through (steps, scores) passing through it: the right end where both can,
    since a curve starts near uniform attention; where neither can, the end the curve passes through least."""
    last = max(steps[-1], 1) if len(steps) else 1  # the step axis runs from 0 to the last step
    spans = ((0.0, share * last), ((1 - share) * last, float(last)))
    crossed = [_crosses(steps, scores, span, label_y) for span in spans]
    return 1 if crossed[1] <= crossed[0] else 0


def _crosses(
    steps: Sequence[int], scores: Sequence[float], span: tuple[float, float], band: tuple[float, float]
) -> int:
    """How many of the curve's segments (a lone point as one) pass through the box `span` (steps) by `band`
    (scores)."""
    points = list(zip(steps, scores))
    segments = list(zip(points, points[1:])) or [(p, p) for p in points]
    n = 0
    for (x0, y0), (x1, y1) in segments:
        lo, hi = max(x0, span[0]), min(x1, span[1])
        if lo > hi:
            continue  # the segment lies beside the box
        at = [y0 if x1 == x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0) for x in (lo, hi)]
        n += min(at) <= band[1] and max(at) >= band[0]
    return n
