"""Figures of a length test (`transformer.lengths`): accuracy and output length against the input length, with the
lengths the model trained on shaded."""

from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go

from ..i18n import Translator
from . import ENGLISH
from .training import MARKER, TRAIN, VALID, line_chart_layout

TRAINED_SHADE = "rgba(0, 114, 178, 0.10)"  # palette.BLUE, faint


MOST_TICKS = 12  # length labels on a chart's axis


def length_accuracy_figure(scores: pd.DataFrame, tr: Translator = ENGLISH) -> go.Figure:
    """Exact match (bars) and symbols in the right place (line), in %, per input length."""
    of_inputs = tr.gettext("{share}% of {n} inputs", share="%{y:.1f}", n="%{customdata}")
    fig = go.Figure(
        [
            go.Bar(
                x=scores["length"],
                y=100 * scores["exact_match"],
                name=tr.gettext("exact match (whole output)"),
                marker_color=VALID,
                customdata=scores["n"],
                hovertemplate=f"{of_inputs}<extra></extra>",
            ),
            go.Scatter(
                x=scores["length"],
                y=100 * scores["symbols_right"],
                name=tr.gettext("symbols in the right place"),
                mode="lines+markers",
                line=dict(color=TRAIN, width=3),
                hovertemplate="%{y:.1f}%<extra></extra>",
            ),
        ]
    )
    fig.update_yaxes(title=tr.gettext("unseen inputs (%)"), **PERCENT_AXIS)
    return _length_axis(fig, scores, tr.gettext("Accuracy by input length"), tr)


def output_length_figure(scores: pd.DataFrame, tr: Translator = ENGLISH) -> go.Figure:
    """Mean output length against the input length, beside the expected (target) length: dashed, drawn over the
    output's line, so that both show where they agree (count's outputs are always as long as its alphabet)."""
    fig = go.Figure(
        [
            go.Scatter(
                x=scores["length"],
                y=scores["output_len"],
                name=tr.gettext("model's output (mean)"),
                mode="lines+markers",
                line=dict(color=TRAIN, width=3),
                hovertemplate=tr.gettext("{n} symbols", n="%{y:.1f}") + "<extra></extra>",
            ),
            go.Scatter(
                x=scores["length"],
                y=scores["target_len"],
                name=tr.gettext("expected"),
                mode="lines",
                line=dict(color=MARKER, dash="dash", width=2),
                hovertemplate="%{y:.1f}<extra></extra>",
            ),
        ]
    )
    top = max(scores["output_len"].max(), scores["target_len"].max(), 1)
    # headroom above the longest for the "trained lengths" label, as on the accuracy chart
    fig.update_yaxes(title=tr.gettext("symbols before EOS"), range=[0, 1.25 * top])
    return _length_axis(fig, scores, tr.gettext("Output length"), tr)


def _length_axis(fig: go.Figure, scores: pd.DataFrame, title: str, tr: Translator) -> go.Figure:
    """Shade the trained lengths and label the length axis."""
    shade_trained(fig, scores.loc[scores["trained"], "length"].tolist(), tr)
    fig.update_xaxes(title=tr.gettext("input length"), dtick=length_step(len(scores)))
    return line_chart_layout(fig, title)


def length_step(n_lengths: int) -> int | None:
    """The length axis's tick step: every length up to MOST_TICKS of them (a chart is half the page wide, and more
    labels run together), every other up to twice that, else Plotly's own."""
    return next((step for step in (1, 2) if n_lengths <= step * MOST_TICKS), None)


# A percentage axis under `shade_trained`'s label: headroom above 100%, so that the label is clear of a curve at 100%
PERCENT_AXIS = dict(range=[0, 115], tickvals=list(range(0, 101, 20)), ticktext=[f"{v}%" for v in range(0, 101, 20)])


LABEL_INSET_PX = 4  # the span's label, in from the span's left edge


def shade_trained(fig: go.Figure, trained: Sequence[int], tr: Translator = ENGLISH) -> None:
    """Shade the span of the lengths a model trained on (nothing when there are none)."""
    if len(trained):
        fig.add_vrect(
            x0=min(trained) - 0.5,
            x1=max(trained) + 0.5,
            fillcolor=TRAINED_SHADE,
            line_width=0,
            layer="below",
            annotation_text=tr.gettext("trained lengths"),
            annotation_position="top left",
            annotation_xshift=LABEL_INSET_PX,  # off the axis line where the span starts at the chart's left edge
        )
