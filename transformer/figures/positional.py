"""Figures of positional encoding: its table, how alike two positions' encodings are, a few dimensions against
position, and what the first layer receives (the token embeddings before and after the encoding is added)."""

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ..i18n import Translator
from . import ENGLISH, PHONE_CHART_PX, fit_title
from .heatmaps import (
    BUILT_TITLE_SIZE_PX,
    DIVERGING_SCALE,
    as_array,
    axis_ticks,
    build_figure,
    diverging_heatmap,
    hover_grid,
    stacked_panels,
)
from .theme import colour_bar


def positional_heatmap(
    table, title: str | None = None, tr: Translator = ENGLISH, fit_px: int = PHONE_CHART_PX
) -> go.Figure:
    """A (positions, d_model) positional-encoding table: one row per position, one column per dimension. `fit_px`: how
    wide the chart is drawn where it is narrowest; the title fits it."""
    hover = tr.gettext(
        "position {position}, dimension {dimension}: {value}", position="%{y}", dimension="%{x}", value="%{z:.3f}"
    )
    trace = dict(
        type="heatmap",
        z=as_array(table),
        colorscale=DIVERGING_SCALE,
        zmid=0,
        colorbar=colour_bar(tr.gettext("value")),
        hovertemplate=f"{hover}<extra></extra>",
    )
    layout = dict(
        xaxis=dict(title=tr.gettext("dimension")), yaxis=dict(title=tr.gettext("position"), autorange="reversed")
    )
    title = fit_title(title or tr.gettext("Positional encoding"), fit_px, BUILT_TITLE_SIZE_PX)
    return build_figure([trace], layout, title, height=480)


def position_similarity_heatmap(similarity, trained: int | None, title: str, tr: Translator = ENGLISH) -> go.Figure:
    """A (positions, positions) cosine-similarity matrix; dashed lines close off the first `trained` positions,
    the ones training reached."""
    trace = dict(
        type="heatmap",
        z=as_array(similarity),
        zmin=-1,
        zmax=1,
        colorscale=DIVERGING_SCALE,
        colorbar=colour_bar(tr.gettext("cosine")),
        hovertemplate=tr.gettext(
            "positions {first} and {second}: {value}", first="%{y}", second="%{x}", value="%{z:.2f}"
        )
        + "<extra></extra>",
    )
    layout = dict(
        xaxis=dict(title=tr.gettext("position"), constrain="domain"),
        # square cells: the plot shrinks along whichever axis has room to spare, never showing positions past the
        # table's ("-20" to "80" for 64 positions on a phone, where the plot is taller than wide)
        yaxis=dict(title=tr.gettext("position"), autorange="reversed", scaleanchor="x", constrain="domain"),
    )
    if trained is not None:
        edge = trained - 0.5
        line = dict(type="line", line=dict(color="#111111", dash="dash", width=2), xref="x", yref="y")
        layout["shapes"] = [
            dict(line, x0=edge, x1=edge, y0=-0.5, y1=edge),
            dict(line, x0=-0.5, x1=edge, y0=edge, y1=edge),
        ]
    return build_figure([trace], layout, title, height=520)


def positional_curves(table, dims: Sequence[int], sinusoidal: bool = True, tr: Translator = ENGLISH) -> go.Figure:
    """One line per chosen dimension of a (positions, d_model) table, against position; with `sinusoidal`,
    even dimensions are named sine and odd ones cosine."""
    t = as_array(table)
    traces = []
    for d in dims:
        kind = (" (sin)" if d % 2 == 0 else " (cos)") if sinusoidal else ""
        name = tr.gettext("dim {dimension}", dimension=d) + kind
        traces.append(dict(type="scatter", x=np.arange(len(t)), y=t[:, d], mode="lines+markers", name=name))
    layout = dict(xaxis=dict(title=tr.gettext("position")), yaxis=dict(title=tr.gettext("value")))
    return build_figure(traces, layout, tr.gettext("Positional encoding of a few dimensions"), height=420)


def embedding_heatmap(
    panels: dict[str, object], token_labels: Sequence[str], title: str, tr: Translator = ENGLISH
) -> go.Figure:
    """(T, d_model) token vectors, one subplot per panel (e.g. before / after adding the positional encoding), one
    above the other on one diverging scale: a row per token, a column per dimension."""
    arrays = {name: as_array(v) for name, v in panels.items()}
    bound = max(float(np.abs(a).max()) for a in arrays.values()) or 1.0
    layout, refs, plot_px = stacked_panels(list(arrays), panel_px=30 * len(token_labels))
    traces = []
    cell = tr.gettext(
        "token {token}, dimension {dimension}: {value}", token="%{customdata[0]}", dimension="%{x}", value="%{z:.3f}"
    )
    for i, ((name, a), ref) in enumerate(zip(arrays.items(), refs)):
        traces.append(
            diverging_heatmap(
                a,
                bound,
                tr.gettext("value"),
                f"{name}<br>{cell}<extra></extra>",
                showscale=i == 0,
                customdata=hover_grid(token_labels, [str(d) for d in range(a.shape[1])]),
                **ref,
            )
        )
        n = ref["xaxis"][1:]
        layout[f"xaxis{n}"].update(title=tr.gettext("dimension"))
        layout[f"yaxis{n}"].update(autorange="reversed", **axis_ticks(token_labels))
    return build_figure(traces, layout, title, height=130 + plot_px)
