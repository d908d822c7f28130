"""Figures of activation patching: how much of the clean answer each patched activation brings back into the
corrupted run. Input: the tables of a `transformer.patching.PatchingGrid`."""

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..i18n import Translator
from ..inspection import ATTENTION_KINDS
from . import ENGLISH
from .heatmaps import axis_ticks, build_figure, hover_grid, score_heatmap, stacked_panels

RECOVERED_SCALE = "Greens"  # white: the patch brings nothing back; dark green: all of it


def _panels(
    panels: Sequence[tuple[str, np.ndarray, list[str], list[str], str]], site: str, title: str, tr: Translator
) -> go.Figure:
    """One heatmap of recovered fractions per (panel title, z (rows x columns), row labels, column labels, x title),
    one above the other on one 0..1 scale, each cell labelled in percent. `site` names a cell in the hover, from its
    row and column labels (customdata[0] and [1])."""
    layout, refs, plot_px = stacked_panels([p[0] for p in panels], panel_px=50 * max(len(p[2]) for p in panels))
    traces = []
    hover = tr.gettext("{site}: {share} recovered", site=site, share="%{z:.1%}") + "<extra></extra>"
    for i, ((_, z, rows, cols, x_title), ref) in enumerate(zip(panels, refs)):
        more = dict(showscale=i == 0, customdata=hover_grid(rows, cols), **ref)
        traces += score_heatmap(z, RECOVERED_SCALE, tr.gettext("recovered"), hover, z.shape[1] <= 12, **more)
        n = ref["xaxis"][1:]
        layout[f"xaxis{n}"].update(title=x_title, **axis_ticks(cols))
        layout[f"yaxis{n}"].update(autorange="reversed", **axis_ticks(rows))
    return build_figure(traces, layout, title, height=130 + plot_px)


def head_patching_figure(heads: pd.DataFrame, tr: Translator = ENGLISH) -> go.Figure:
    """One panel per attention kind, layer by head: the share of the clean answer's log-probability that patching
    that head's output brings back."""
    n_layers, n_heads = int(heads["layer"].max()) + 1, int(heads["head"].max()) + 1
    panels = []
    for kind, (name, _, _) in ATTENTION_KINDS.items():
        z = np.full((n_layers, n_heads), np.nan)
        rows = heads[heads["kind"] == kind]
        z[rows["layer"], rows["head"]] = rows["recovered"]
        layers = [tr.gettext("layer {layer}", layer=layer) for layer in range(n_layers)]
        panels.append((tr.gettext(name), z, layers, [str(h) for h in range(n_heads)], tr.gettext("head")))
    site = tr.gettext("{layer}, head {head}", layer="%{customdata[0]}", head="%{customdata[1]}")
    return _panels(panels, site, tr.gettext("Patching one head's output from the clean run"), tr)


def stream_patching_figure(
    stream: pd.DataFrame, source: Sequence[str], answer: Sequence[str], tr: Translator = ENGLISH
) -> go.Figure:
    """Encoder above decoder, layer by position: the share of the clean answer's log-probability that
    patching the residual stream there brings back. Source positions are labelled by their clean token, decoder
    positions by the answer token they predict."""
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
    return _panels(panels, site, title, tr)
