"""Figures for head knockout: a model's held-out score with each attention head removed alone.

Input: the `heads` table of a `transformer.knockout.KnockoutGrid` (kind, layer, head, exact_match, token_acc).
"""

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..i18n import N_, Translator
from ..inspection import ATTENTION_KINDS
from ..shares import cell_percent, shown_share
from . import ENGLISH, PHONE_CHART_PX, drawn_px, fit_title
from .heatmaps import (
    BUILT_TITLE_SIZE_PX,
    MARGIN,
    TICKS,
    axis_ticks,
    build_figure,
    colour_bar_px,
    number_px,
    score_heatmap,
    stacked_panels,
)

METRICS = {"exact_match": N_("exact match"), "token_acc": N_("token accuracy")}  # translated where shown
SCORE_SCALE = "Cividis"  # dark blue: the model fails without the head; yellow: it does not need it (CVD-safe)


# Three ticks and the title along the bar: Plotly's six automatic ticks with the title above them crowd a short bar.
def knockout_heatmaps(
    heads: pd.DataFrame,
    intact: float,
    metric: str = "exact_match",
    tr: Translator = ENGLISH,
    fit_px: int = PHONE_CHART_PX,
) -> go.Figure:
    """One panel per attention kind, one above the other, layer by head, of the held-out `metric` with that head
    removed alone, on a 0..1 scale; `intact` (the model's own score) is in the title. `fit_px`: how wide the chart
    is drawn where it is narrowest; the titles fit it, and the cells show their percents where they have room."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {', '.join(METRICS)}, got {metric!r:.20}")
    kinds = list(ATTENTION_KINDS)
    n_layers, n_heads = int(heads["layer"].max()) + 1, int(heads["head"].max()) + 1
    titles = [tr.gettext(ATTENTION_KINDS[kind][0]) for kind in kinds]
    bar_px = colour_bar_px(TICKS)  # the right margin: the score's colour bar beside the panels
    # each panel's title fits the panel where it is narrowest, the chart less the margins: over the bar's room it ran
    # into the bar ("cross-attention (decoder → encoder)")
    panel_px = fit_px - MARGIN["l"] - bar_px
    layout, refs, plot_px = stacked_panels(titles, panel_px=50 * n_layers, title_px=panel_px)
    layout["margin"] = dict(r=bar_px)
    measure = tr.gettext(METRICS[metric])
    hover = tr.gettext(
        "layer {layer}, head {head} removed: {measure} {score}",
        layer="%{y}",
        head="%{x}",
        measure=measure,
        score="%{text}",  # the cell's own words: 99.9%, never a hover's 100.0% beside it
    )
    # the cells' percents, where the panel has room for its widest two side by side, at a size they read at
    size = number_px(n_heads, panel_px, max(map(cell_percent, heads[metric]), key=drawn_px))
    traces = []
    for i, (kind, ref) in enumerate(zip(kinds, refs)):
        z = np.full((n_layers, n_heads), np.nan)
        rows = heads[heads["kind"] == kind]
        z[rows["layer"], rows["head"]] = rows[metric]
        cell = f"{hover}<extra></extra>"
        more = dict(showscale=i == 0, size=size, **ref)
        traces += score_heatmap(z, SCORE_SCALE, measure, cell, size is not None, cell_percent, **more)
        n = ref["xaxis"][1:]
        layout[f"xaxis{n}"].update(title=tr.gettext("head"), **axis_ticks([str(h) for h in range(n_heads)]))
        layout[f"yaxis{n}"].update(
            title=tr.gettext("layer"), autorange="reversed", **axis_ticks([str(layer) for layer in range(n_layers)])
        )
    said = N_("Held-out {measure} with one head removed (intact model: {intact:.1%})")
    title = tr.gettext(said, measure=measure, intact=shown_share(intact))
    title = fit_title(title, fit_px, BUILT_TITLE_SIZE_PX)
    return build_figure(traces, layout, title, height=130 + plot_px)
