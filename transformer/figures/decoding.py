"""Figures for decoding one token at a time: next-token probabilities, a step's attention (over the source, or over
the output so far), the beam-search tree, and the teacher-forcing comparison table.

Inputs are arrays (numpy, nested lists, or torch tensors) and `DecodeStep` records from `transformer.decoding`.
"""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from pandas.io.formats.style import Styler

from ..decoding import DecodeStep
from ..i18n import Translator
from . import ENGLISH, LEGEND_AT_FOOT, PHONE_CHART_PX, fit_title
from .attention import ATTENTION_SCALE
from .heatmaps import (
    BUILT_TITLE_SIZE_PX,
    MARGIN,
    as_array,
    axis_ticks,
    build_figure,
    cell_numbers,
    escape_labels,
    hover_grid,
    number_px,
    row_labels_px,
)
from .palette import BEST_PATH, CHOSEN, EXTENDS, FINISHED, LIVE, OTHER
from .theme import colour_bar

MISMATCH = "background-color: #f8d0d0"
# probs_bar's and the step attention's columns on Decoding (`st.columns([2, 3])`) where they are narrowest, measured
# in Chromium: 191.6 px and 291.7 px in a 1280 px window at 150% zoom (853 CSS px), sidebar open; on a phone the
# columns stack, PHONE_CHART_PX wide
PROBS_COLUMN_PX, ATTENTION_COLUMN_PX = 191, 291


def probs_bar(
    probs,
    vocab_tokens: Sequence[str],
    chosen: int,
    top_k: int = 10,
    title: str | None = None,
    tr: Translator = ENGLISH,
) -> go.Figure:
    """The `top_k` most likely next tokens of a (V,) distribution, most likely first (at the top); the chosen token's
    bar is highlighted (and added at the end when it is not among the top k, e.g. an unlikely sample). The bars lie
    flat, a token's label on its own line: under upright bars a narrow column turned the labels on their side."""
    p, labels = as_array(probs), escape_labels(vocab_tokens)
    order = [int(i) for i in np.argsort(-p, kind="stable")[:top_k]]
    if chosen not in order:
        order.append(chosen)
    trace = dict(
        type="bar",
        orientation="h",
        y=[labels[i] for i in order],
        x=p[order],
        marker=dict(color=[CHOSEN if i == chosen else OTHER for i in order]),
        text=[f"{p[i]:.2f}" for i in order],
        textposition="outside",
        cliponaxis=False,
        hovertemplate="%{y}: p = %{x:.4f}<extra></extra>",
    )
    layout = dict(
        yaxis=dict(title=tr.gettext("next token"), type="category", autorange="reversed", automargin=True),
        xaxis=dict(title=tr.gettext("probability"), range=[0, 1.3]),  # room for "1.00" beside a whole bar
        uniformtext=dict(minsize=11, mode="hide"),
    )  # no unreadably small labels beside thin bars
    title = title or tr.gettext("Next-token probabilities")
    title = fit_title(title, PROBS_COLUMN_PX, BUILT_TITLE_SIZE_PX)
    return build_figure([trace], layout, title, height=400)


def step_attention_heatmap(
    weights,
    key_labels: Sequence[str],
    title: str,
    keys: str = "source",
    tr: Translator = ENGLISH,
    fit_px: int = PHONE_CHART_PX,
) -> go.Figure:
    """One decoding step's attention (H, T_k): a row per head, a column per key on a 0..1 scale. `keys` names
    them: "source" tokens (cross-attention) or the decoder's "input" so far (self-attention). `fit_px`: how wide the
    chart is drawn where it is narrowest; its cell numbers and title are fitted to it."""
    w = as_array(weights)
    head_labels = [tr.gettext("head {head}", head=h) for h in range(w.shape[0])]
    fields = dict(head="%{customdata[0]}", token="%{customdata[1]}", weight="%{z:.3f}")
    if keys == "source":
        x_title, cell = tr.gettext("source token"), tr.gettext("{head} → source {token}: {weight}", **fields)
    else:
        x_title, cell = tr.gettext("input token"), tr.gettext("{head} → input {token}: {weight}", **fields)
    hover = f"{cell}<extra></extra>"
    return _percent_heatmap(w, head_labels, key_labels, x_title, tr.gettext("weight"), hover, title, fit_px)


LABEL_STANDOFF_PX = 8  # between a percent heatmap's row labels and its cells, where no tick mark stands


def _percent_heatmap(
    z: np.ndarray,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    x_title: str,
    value_name: str,
    hovertemplate: str,
    title: str,
    fit_px: int,
) -> go.Figure:
    """Values in 0..1 (rows x columns) on the attention colour scale, row 0 at the top. Where the cells have room
    across a chart `fit_px` wide (where it is drawn narrowest), each shows its value in percent (blank under 1%) at a
    size it reads at (`number_px`), and no colour bar (titled `value_name`) is needed; the title's lines fit it too."""
    left = row_labels_px(row_labels)
    size = number_px(len(col_labels), fit_px - left - MARGIN["r"])
    trace = dict(
        type="heatmap",
        z=z,
        zmin=0,
        zmax=1,
        colorscale=ATTENTION_SCALE,
        xgap=2,
        ygap=2,
        showscale=size is None,
        colorbar=colour_bar(value_name),
        text=[[f"{100 * x:.0f}%" if x >= 0.005 else "" for x in row] for row in z],
        customdata=hover_grid(row_labels, col_labels),
        hovertemplate=hovertemplate,
    )
    layout = dict(
        xaxis=dict(title=x_title, **axis_ticks(col_labels)),
        # no tick marks beside the rows, but their room: one touched a first cell's number, and "100%" read "-100%"
        yaxis=dict(autorange="reversed", ticks="", ticklabelstandoff=LABEL_STANDOFF_PX, **axis_ticks(row_labels)),
        margin=dict(l=left),
    )
    traces = [trace] if size is None else [trace, cell_numbers(trace, size)]
    title = fit_title(title, fit_px, BUILT_TITLE_SIZE_PX)
    return build_figure(traces, layout, title, height=170 + 45 * len(row_labels))


@dataclass
class _Tree:
    """The beam-search tree's nodes (the root first), each with its place, label and state, and its edges."""

    xs: list[int]
    ys: list[int]
    texts: list[str]
    finished: list[bool]
    on_best: list[bool]
    edges: list[tuple[int, int]]  # (parent node, child node)


def _beam_nodes(steps: Sequence[DecodeStep], labels: Sequence[str], best: Sequence[int] | None) -> _Tree:
    """The BOS root, then a node per hypothesis kept at each step (x: its step, y: its rank), an edge from each to
    the hypothesis it extends; `on_best`: the node lies on the path of `best`."""
    tree = _Tree([0], [0], [labels[steps[0].prefix[0]]], [False], [best is not None], [])
    previous = [0]  # node of each hypothesis kept at the step before (the root before step 0)
    for step in steps:
        nodes = []
        for rank, beam in enumerate(step.beams):
            nodes.append(len(tree.xs))
            tree.edges.append((previous[beam.parent], len(tree.xs)))
            tree.xs.append(step.step + 1)
            tree.ys.append(rank)
            # one decimal, so neighbours stay apart; + 0.0 turns a score that rounds to -0.0 into 0.0
            tree.texts.append(f"{labels[beam.tokens[-1]]}<br>{round(beam.score, 1) + 0.0:.1f}")
            tree.finished.append(beam.finished)
            tree.on_best.append(best is not None and list(best[: len(beam.tokens)]) == beam.tokens)
        previous = nodes
    return tree


def _edge_lines(tree: _Tree, pairs: list[tuple[int, int]], name: str, colour: str, width: float) -> dict:
    """One scatter trace drawing every (parent, child) segment, separated by gaps."""
    x = [v for a, b in pairs for v in (tree.xs[a], tree.xs[b], None)]
    y = [v for a, b in pairs for v in (tree.ys[a], tree.ys[b], None)]
    return dict(
        type="scatter", x=x, y=y, mode="lines", name=name, line=dict(color=colour, width=width), hoverinfo="skip"
    )


def _node_markers(tree: _Tree, name: str, done: bool, colour: str, symbol: str) -> dict:
    """One scatter trace of the nodes that are finished (`done`) or live, each labelled with its text."""
    nodes = [n for n in range(len(tree.xs)) if tree.finished[n] == done]
    return dict(
        type="scatter",
        x=[tree.xs[n] for n in nodes],
        y=[tree.ys[n] for n in nodes],
        text=[tree.texts[n] for n in nodes],
        name=name,
        mode="markers+text",
        textposition="top center",
        marker=dict(size=16, color=colour, symbol=symbol),
        hovertemplate="%{text}<extra></extra>",
    )


def beam_tree(
    steps: Sequence[DecodeStep],
    vocab_tokens: Sequence[str],
    best: Sequence[int] | None = None,
    tr: Translator = ENGLISH,
) -> go.Figure:
    """The beam-search tree so far: the BOS root, then one node per hypothesis kept at each step (labelled with
    its last token and cumulative log-probability), an edge from each to the hypothesis it extends. Finished
    hypotheses (ending with EOS) are squares, live ones circles. `best` (BOS + tokens) draws that hypothesis's path
    thick.
    `steps` must not be empty."""
    tree = _beam_nodes(steps, escape_labels(vocab_tokens), best)
    on_best = [(a, b) for a, b in tree.edges if tree.on_best[b]]
    traces = [
        _edge_lines(tree, tree.edges, tr.gettext("extends"), EXTENDS, 1.5),
        _edge_lines(tree, on_best, tr.gettext("best hypothesis"), BEST_PATH, 4),
        _node_markers(tree, tr.gettext("live"), False, LIVE, "circle"),
        _node_markers(tree, tr.gettext("finished (EOS)"), True, FINISHED, "square"),
    ]
    n_steps, width = len(steps), max(len(step.beams) for step in steps)
    layout = dict(
        xaxis=dict(
            title=tr.gettext("step"),
            range=[-0.4, n_steps + 0.4],
            **axis_ticks([tr.gettext("start"), *map(str, range(1, n_steps + 1))]),
        ),
        yaxis=dict(visible=False, range=[width - 0.5, -0.6]),
        legend=LEGEND_AT_FOOT,
        margin=dict(l=60, r=20, t=80, b=100),
    )
    title = tr.gettext("Beam search: kept hypotheses (token, summed log-probability)")
    return build_figure(traces, layout, title, height=290 + 70 * width)


def teacher_forcing_table(
    target: Sequence[str], forced: Sequence[str], free: Sequence[str], tr: Translator = ENGLISH
) -> Styler:
    """Position by position: the true target token, the teacher-forced prediction and the free-running one;
    predictions that differ from the target are highlighted. Missing positions are left blank."""
    n = max(len(target), len(forced), len(free))

    def column(tokens: Sequence[str]) -> list[str]:
        return [*tokens, *[""] * (n - len(tokens))]

    true = tr.gettext("true target")
    predictions = [tr.gettext("teacher-forced prediction"), tr.gettext("free-running prediction")]
    table = pd.DataFrame(
        {
            tr.gettext("position"): range(1, n + 1),
            true: column(target),
            predictions[0]: column(forced),
            predictions[1]: column(free),
        }
    )
    return table.style.apply(
        lambda col: [MISMATCH if v != t else "" for v, t in zip(col, table[true])], subset=predictions
    )


def logit_lens_heatmap(
    probs,
    vocab_tokens: Sequence[str],
    top_k: int = 5,
    title: str | None = None,
    tr: Translator = ENGLISH,
    fit_px: int = PHONE_CHART_PX,
) -> go.Figure:
    """Each decoder layer's next-token distribution (n_layers, V), a row per layer (the last one is the model's
    output): a column for each token among some layer's `top_k`, ordered by the output's probability. `fit_px`: how
    wide the chart is drawn where it is narrowest; its cell numbers and title are fitted to it."""
    p = as_array(probs)
    shown = {int(i) for row in p for i in np.argsort(-row, kind="stable")[:top_k]}
    columns = sorted(shown, key=lambda i: -p[-1, i])
    tokens = [vocab_tokens[i] for i in columns]
    layer_labels = [tr.gettext("layer {layer}", layer=i) for i in range(len(p) - 1)]
    layer_labels.append(tr.gettext("layer {layer} (output)", layer=len(p) - 1))
    hover = "%{customdata[0]}: p(%{customdata[1]}) = %{z:.3f}<extra></extra>"
    x_title, value = tr.gettext("next token"), tr.gettext("probability")
    title = title or tr.gettext("Logit lens")
    return _percent_heatmap(p[:, columns], layer_labels, tokens, x_title, value, hover, title, fit_px)
