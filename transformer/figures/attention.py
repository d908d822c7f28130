"""Figures of attention: a mask, the weights of each head, and an attention block's projection matrices."""

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ..i18n import Translator
from . import ENGLISH, top_margin, wrap_title
from .heatmaps import as_array, axis_ticks, build_figure, diverging_heatmap, hover_grid, subplot_grid
from .palette import BLOCKED, MAY_ATTEND
from .theme import FONT

HEAD_TITLE_LINE_PX = 24  # a line of a head's title over its panel, in the projector's font

ATTENTION_SCALE = "Blues"


def mask_heatmap(
    mask, row_labels: Sequence[str], col_labels: Sequence[str], title: str, tr: Translator = ENGLISH
) -> go.Figure:
    """A boolean (queries x keys) mask in two colours: "may attend" (True) and "blocked" (False)."""
    trace = dict(
        type="heatmap",
        z=as_array(mask),
        zmin=0,
        zmax=1,
        xgap=2,
        ygap=2,
        colorscale=[[0, BLOCKED], [0.5, BLOCKED], [0.5, MAY_ATTEND], [1, MAY_ATTEND]],
        # a key under the grid rather than beside it (the page shows two masks side by side, in narrow columns),
        # at the figure's foot: above the grid it would push the title up into the chart's toolbar
        colorbar=dict(
            tickvals=[0.25, 0.75],
            ticktext=[tr.gettext("blocked"), tr.gettext("may attend")],
            orientation="h",
            lenmode="pixels",
            len=180,
            thickness=14,
            x=0.5,
            y=0,
            yref="container",
            yanchor="bottom",
            ypad=8,
            ticks="",
            tickangle=0,
            tickfont=FONT,
        ),
        customdata=hover_grid(row_labels, col_labels),
        hovertemplate=_query_key(tr, "%{z}"),
    )
    layout = dict(
        xaxis=dict(title=tr.gettext("key"), **axis_ticks(col_labels)),
        yaxis=dict(title=tr.gettext("query"), autorange="reversed", **axis_ticks(row_labels)),
    )
    title = wrap_title(title, 30)  # the page shows two masks side by side, in narrow columns
    layout["margin"] = dict(l=60, r=20, t=top_margin(title), b=110)  # the key under the key axis's title
    return build_figure([trace], layout, title, height=220 + 32 * len(row_labels))


def _query_key(tr: Translator, value: str) -> str:
    """A hover template naming a cell of a (queries x keys) grid by its labels (customdata), then `value`."""
    cell = tr.gettext(
        "query {query} → key {key}: {value}", query="%{customdata[0]}", key="%{customdata[1]}", value=value
    )
    return f"{cell}<extra></extra>"


def attention_heatmaps(
    weights,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    title: str,
    per_row: int = 4,
    tr: Translator = ENGLISH,
    title_lines: int = 1,
) -> go.Figure:
    """Attention weights (H, T_query, T_key), one subplot per head on a shared 0..1 colour scale, each titled in
    `title_lines` lines: the rows of panels keep that much room, and their tick marks, between them."""
    w = as_array(weights)
    n_heads, n_cols = w.shape[0], min(w.shape[0], per_row)
    n_rows = -(-n_heads // n_cols)
    head_names = [tr.gettext("head {head}", head=h) for h in range(n_heads)]
    row_px, gap_px = 70 + 26 * len(row_labels), 20 + HEAD_TITLE_LINE_PX * title_lines
    plot_px = n_rows * row_px + (n_rows - 1) * gap_px
    layout, refs = subplot_grid(head_names, per_row, v_gap=gap_px / plot_px)
    hover = hover_grid(row_labels, col_labels)
    traces = []
    for h, ref in enumerate(refs):
        traces.append(
            dict(
                type="heatmap",
                z=w[h],
                zmin=0,
                zmax=1,
                colorscale=ATTENTION_SCALE,
                showscale=h == 0,
                colorbar=dict(title=tr.gettext("weight"), len=0.8, thickness=14),
                customdata=hover,
                **ref,
                hovertemplate=f"{head_names[h]}<br>{_query_key(tr, '%{z:.3f}')}",
            )
        )
        n = ref["xaxis"][1:]
        # Every head has the same queries and keys: label the keys under the bottom panel of each column and the
        # queries beside the first panel of each row, where they cannot run into a neighbouring panel.
        layout[f"xaxis{n}"].update(showticklabels=h + n_cols >= n_heads, **axis_ticks(col_labels))
        layout[f"yaxis{n}"].update(autorange="reversed", showticklabels=h % n_cols == 0, **axis_ticks(row_labels))
    return build_figure(traces, layout, title, height=120 + plot_px)


def projection_heatmaps(matrices: dict[str, object], n_heads: int, title: str, tr: Translator = ENGLISH) -> go.Figure:
    """The projection matrices of one attention block (name -> (d_out, d_in)), side by side on one diverging
    scale. Dashed lines split the rows of W_Q, W_K, W_V (and the columns of W_O) into the heads' d_k slices."""
    arrays = {name: as_array(m) for name, m in matrices.items()}
    bound = max(float(np.abs(a).max()) for a in arrays.values()) or 1.0
    layout, refs = subplot_grid(list(arrays), per_row=len(arrays), h_gap=0.07)
    traces, shapes = [], []
    for i, ((name, a), ref) in enumerate(zip(arrays.items(), refs)):
        traces.append(
            diverging_heatmap(
                a,
                bound,
                tr.gettext("weight"),
                f"{name}[%{{y}}, %{{x}}] = %{{z:.3f}}<extra></extra>",
                showscale=i == 0,
                **ref,
            )
        )
        n = ref["xaxis"][1:]
        layout[f"xaxis{n}"].update(title=tr.gettext("input"))  # a word that fits under a quarter of a phone's width
        layout[f"yaxis{n}"].update(autorange="reversed", showticklabels=i == 0)  # d_model rows in every panel
        d_k = a.shape[0] // n_heads
        line = dict(type="line", line=dict(color="black", dash="dash", width=1), xref=ref["xaxis"], yref=ref["yaxis"])
        for h in range(1, n_heads):
            edge = h * d_k - 0.5
            if name == "W_O":  # W_O mixes the concatenated heads: they are its input columns
                shapes.append(dict(line, x0=edge, x1=edge, y0=-0.5, y1=a.shape[0] - 0.5))
            else:  # each head's rows of W_Q, W_K, W_V
                shapes.append(dict(line, x0=-0.5, x1=a.shape[1] - 0.5, y0=edge, y1=edge))
    layout["yaxis"]["title"] = tr.gettext("output")
    return build_figure(traces, dict(layout, shapes=shapes), title, height=440)
