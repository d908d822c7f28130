"""Figures of attention: a mask, the weights of each head, and an attention block's projection matrices."""

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import plotly.graph_objects as go

from ..i18n import Translator
from . import COLUMN_PX, ENGLISH, PHONE_CHART_PX, fit_title, top_margin
from .heatmaps import (
    BUILT_TITLE_SIZE_PX,
    PANEL_TITLE_LINE_PX,
    UPRIGHT_LABEL_PX,
    as_array,
    axis_ticks,
    build_figure,
    colour_bar_px,
    diverging_heatmap,
    hover_grid,
    label_px,
    row_labels_px,
    subplot_grid,
)
from .palette import BLOCKED, MAY_ATTEND
from .theme import FONT, colour_bar

HEADS_LEFT_PX = 60  # the heads' left margin, wider where the query labels beside the first panels need it
WEIGHT_TICKS = (0, 0.5, 1)  # the heads' colour bar's labels
HEADS_RIGHT_PX = colour_bar_px(list(map(str, WEIGHT_TICKS)))  # the heads' right margin: their colour bar's
HEADS_H_GAP = 0.06  # between two panels side by side, of the plot's width
KEY_GAP_PX = 8  # at least between two key labels under a panel: half the type, where 3 px read "9 6 3 0" as "9630"

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
    title = fit_title(title, COLUMN_PX, BUILT_TITLE_SIZE_PX)  # the page shows two masks side by side
    layout["margin"] = dict(l=60, r=20, t=top_margin(title), b=110)  # the key under the key axis's title
    return build_figure([trace], layout, title, height=220 + 32 * len(row_labels))


def _query_key(tr: Translator, value: str) -> str:
    """A hover template naming a cell of a (queries x keys) grid by its labels (customdata), then `value`."""
    cell = tr.gettext(
        "query {query} → key {key}: {value}", query="%{customdata[0]}", key="%{customdata[1]}", value=value
    )
    return f"{cell}<extra></extra>"


class KeyLabels(NamedTuple):
    """How a figure of heads keeps its key labels apart: panels a row, a label every `step` keys (the first key
    labelled) at `angle` degrees, and the left margin, beside the first panels."""

    per_row: int
    step: int
    angle: int
    left_px: int

    def ticks(self, col_labels: Sequence[str]) -> dict:
        """The key axis's ticks: one a key, every `step`-th labelled, at `angle`."""
        shown = [label if k % self.step == 0 else "" for k, label in enumerate(col_labels)]
        return dict(axis_ticks(shown), tickangle=self.angle)

    def height_px(self, col_labels: Sequence[str]) -> float:
        """How tall the key labels are under a panel: a line flat, the longest label upright."""
        return UPRIGHT_LABEL_PX if self.angle == 0 else label_px(col_labels)


def key_labels(
    n_heads: int,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    per_row: int,
    chart_px: int,
    titles: Sequence[str] = (),
) -> KeyLabels:
    """The most panels a row, up to `per_row`, that give each key label of `col_labels` room under its own column
    of cells in a chart `chart_px` wide, and each panel's title (its widest of `titles`) room over it: each label flat
    where its column is wider than the label, else upright, where it is as wide as a line is tall; and where even one
    panel a row is too narrow for that, a label every few keys. So a label never reaches past its panel into the next
    one, nor runs into its neighbours (Plotly turns crowded labels 30 degrees, over the next panel, or upright, over
    each other), and two titles side by side never run together ("head 0head 1")."""
    left = row_labels_px(row_labels, HEADS_LEFT_PX)  # the query labels and their tick marks
    plot_px = max(chart_px - left - HEADS_RIGHT_PX, 1)  # query labels wider than the chart leave it a sliver
    flat, upright = label_px(col_labels) + KEY_GAP_PX, UPRIGHT_LABEL_PX + KEY_GAP_PX
    n_cols = min(n_heads, per_row)
    while True:
        panel_px = plot_px * (1 - HEADS_H_GAP * (n_cols - 1)) / n_cols
        key_px = panel_px / max(len(col_labels), 1)
        titled = n_cols == 1 or panel_px + plot_px * HEADS_H_GAP >= label_px(titles) + KEY_GAP_PX  # centres apart
        if (key_px >= min(flat, upright) and titled) or n_cols == 1:
            break
        n_cols -= 1
    step = math.ceil(min(flat, upright) / key_px)
    return KeyLabels(n_cols, step, 0 if step * key_px >= flat else 90, left)


def attention_heatmaps(
    weights,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    title: str,
    per_row: int = 4,
    tr: Translator = ENGLISH,
    title_lines: int = 1,
    fit_px: int | None = None,
) -> go.Figure:
    """Attention weights (H, T_query, T_key), one subplot per head on a shared 0..1 colour scale, `per_row` to a
    row, each titled in `title_lines` lines: the rows of panels keep that much room, and their tick marks, between
    them. `fit_px`: the narrowest width the chart is drawn at; then at most `per_row` to a row, fewer where the keys'
    labels would not fit under the panels there (`key_labels`)."""
    w = as_array(weights)
    n_heads = w.shape[0]
    head_names = [tr.gettext("head {head}", head=h) for h in range(n_heads)]
    keys = None if fit_px is None else key_labels(n_heads, row_labels, col_labels, per_row, fit_px, head_names)
    n_cols = min(n_heads, per_row) if keys is None else keys.per_row
    n_rows = -(-n_heads // n_cols)
    stacked = keys is not None and n_cols == 1  # one a row on a narrow page: each panel's keys labelled under it
    row_px, gap_px = 70 + 26 * len(row_labels), 20 + PANEL_TITLE_LINE_PX * title_lines
    if stacked:
        gap_px += keys.height_px(col_labels)
    plot_px = n_rows * row_px + (n_rows - 1) * gap_px
    layout, refs = subplot_grid(head_names, n_cols, h_gap=HEADS_H_GAP, v_gap=gap_px / plot_px)
    key_ticks = axis_ticks(col_labels) if keys is None else keys.ticks(col_labels)
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
                colorbar=colour_bar(tr.gettext("weight"), len=0.8, tickvals=list(WEIGHT_TICKS)),
                customdata=hover,
                **ref,
                hovertemplate=f"{head_names[h]}<br>{_query_key(tr, '%{z:.3f}')}",
            )
        )
        n = ref["xaxis"][1:]
        # Every head has the same queries and keys: label the keys under the bottom panel of each column (under each
        # panel where they stack, a screen apart on a phone) and the queries beside the first panel of each row, where
        # they cannot run into a neighbouring panel.
        layout[f"xaxis{n}"].update(showticklabels=stacked or h + n_cols >= n_heads, **key_ticks)
        layout[f"yaxis{n}"].update(autorange="reversed", showticklabels=h % n_cols == 0, **axis_ticks(row_labels))
    if keys is not None:  # margins of known widths: the panels' widths at `fit_px` are known too
        layout["margin"] = dict(l=keys.left_px, r=HEADS_RIGHT_PX)
        title = fit_title(title, fit_px, BUILT_TITLE_SIZE_PX)
    return build_figure(traces, layout, title, height=120 + plot_px)


def projection_heatmaps(
    matrices: dict[str, object], n_heads: int, title: str, tr: Translator = ENGLISH, fit_px: int = PHONE_CHART_PX
) -> go.Figure:
    """The projection matrices of one attention block (name -> (d_out, d_in)), side by side on one diverging
    scale. Dashed lines split the rows of W_Q, W_K, W_V (and the columns of W_O) into the heads' d_k slices. `fit_px`:
    how wide the chart is drawn where it is narrowest; the title fits it."""
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
        # Under each panel "input" (a word that fits under a quarter of a phone's width) and the first and last
        # input's ticks, numbered under the first panel only, as the rows are: more labels ran into the next panel's
        # on a phone. The others' labels are a figure space, a line tall, which keeps every title in line.
        first_last = [0, a.shape[1] - 1]
        shown = [str(v) if i == 0 else "\u2007" for v in first_last]
        layout[f"xaxis{n}"].update(title=tr.gettext("input"), tickvals=first_last, ticktext=shown, tickangle=0)
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
    title = fit_title(title, fit_px, BUILT_TITLE_SIZE_PX)
    return build_figure(traces, dict(layout, shapes=shapes), title, height=440)
