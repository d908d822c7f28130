"""Figures of activation patching: how much of the clean answer each patched activation brings back into the
corrupted run. Input: the tables of a `transformer.patching.PatchingGrid`."""

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..i18n import Translator
from ..inspection import ATTENTION_KINDS
from . import ENGLISH, PHONE_CHART_PX, fit_title
from .heatmaps import (
    BUILT_TITLE_SIZE_PX,
    TICKS,
    axis_ticks,
    build_figure,
    colour_bar_px,
    hover_grid,
    number_px,
    row_labels_px,
    score_heatmap,
    stacked_panels,
)

RECOVERED_SCALE = "Greens"  # white: the patch brings nothing back; dark green: all of it


def _panels(
    panels: Sequence[tuple[str, np.ndarray, list[str], list[str], str]],
    site: str,
    title: str,
    tr: Translator,
    fit_px: int,
) -> go.Figure:
    """One heatmap of recovered fractions per (panel title, z (rows x columns), row labels, column labels, x title),
    one above the other on one 0..1 scale. `site` names a cell in the hover, from its row and column labels
    (customdata[0] and [1]). `fit_px`: how wide the chart is drawn where it is narrowest; the titles fit it, and each
    panel whose cells have room across it (`number_px`) shows their percents, at a size they read at."""
    left = row_labels_px([row for panel in panels for row in panel[2]])
    bar_px = colour_bar_px(TICKS)  # the right margin: the colour bar beside the panels
    panel_px = fit_px - left - bar_px
    titles = [p[0] for p in panels]
    layout, refs, plot_px = stacked_panels(titles, panel_px=50 * max(len(p[2]) for p in panels), title_px=panel_px)
    layout["margin"] = dict(l=left, r=bar_px)
    traces = []
    hover = tr.gettext("{site}: {share} recovered", site=site, share="%{z:.1%}") + "<extra></extra>"
    for i, ((_, z, rows, cols, x_title), ref) in enumerate(zip(panels, refs)):
        more = dict(showscale=i == 0, customdata=hover_grid(rows, cols), **ref)
        size = number_px(z.shape[1], panel_px)
        traces += score_heatmap(z, RECOVERED_SCALE, tr.gettext("recovered"), hover, size is not None, size=size, **more)
        n = ref["xaxis"][1:]
        layout[f"xaxis{n}"].update(title=x_title, **axis_ticks(cols))
        layout[f"yaxis{n}"].update(autorange="reversed", **axis_ticks(rows))
    title = fit_title(title, fit_px, BUILT_TITLE_SIZE_PX)
    return build_figure(traces, layout, title, height=130 + plot_px)


def head_patching_figure(heads: pd.DataFrame, tr: Translator = ENGLISH, fit_px: int = PHONE_CHART_PX) -> go.Figure:
    """One panel per attention kind, layer by head: the share of the clean answer's log-probability that patching
    that head's output brings back. `fit_px`: how wide the chart is drawn where it is narrowest (`_panels`)."""
    n_layers, n_heads = int(heads["layer"].max()) + 1, int(heads["head"].max()) + 1
    panels = []
    for kind, (name, _, _) in ATTENTION_KINDS.items():
        z = np.full((n_layers, n_heads), np.nan)
        rows = heads[heads["kind"] == kind]
        z[rows["layer"], rows["head"]] = rows["recovered"]
        layers = [tr.gettext("layer {layer}", layer=layer) for layer in range(n_layers)]
        panels.append((tr.gettext(name), z, layers, [str(h) for h in range(n_heads)], tr.gettext("head")))
    site = tr.gettext("{layer}, head {head}", layer="%{customdata[0]}", head="%{customdata[1]}")
    return _panels(panels, site, tr.gettext("Patching one head's output from the clean run"), tr, fit_px)


def stream_patching_figure(
    stream: pd.DataFrame,
    source: Sequence[str],
    answer: Sequence[str],
    tr: Translator = ENGLISH,
    fit_px: int = PHONE_CHART_PX,
) -> go.Figure:
    """Encoder above decoder, layer by position: the share of the clean answer's log-probability that
    patching the residual stream there brings back. Source positions are labelled by their clean token, decoder
    positions by the answer token they predict. `fit_px`: how wide the chart is drawn where it is narrowest
    (`_panels`)."""
    panels = []
    stacks = (
        ("encoder", tr.gettext("encoder residual stream"), source, tr.gettext("source token")),
        ("decoder", tr.gettext("decoder residual stream"), answer, tr.gettext("predicts")),
    )
    for stack, panel_title, labels, x_title in stacks:
        rows = stream[stream["stack"] == stack]
        layers = sorted(rows["layer"].unique())
        z = np.full((len(layers), len(labels)), np.nan)
        z[rows["layer"] - layers[0], rows["position"]] = rows["recovered"]
        names = [
            tr.gettext("embeddings") if layer == 0 else tr.gettext("after layer {layer}", layer=layer)
            for layer in layers
        ]
        panels.append((panel_title, z, names, list(labels), x_title))
    site = tr.gettext(
        "{layer}, position {position} ({token})", layer="%{customdata[0]}", position="%{x}", token="%{customdata[1]}"
    )
    title = tr.gettext("Patching the residual stream at one layer and position")
    return _panels(panels, site, title, tr, fit_px)
