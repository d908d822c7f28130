"""Decoding steps to draw: a vocabulary of tokens and a beam search's kept hypotheses over three steps; how wide a
figure's title is drawn; and where a figure of heads side by side would crowd its key labels at a given width."""

from collections.abc import Callable
from typing import NamedTuple

import plotly.graph_objects as go
import torch

from transformer.decoding import Beam, DecodeStep
from transformer.figures import TITLE_INSET_PX, TITLE_SIZE_PX, drawn_px

TOKENS = ["PAD", "BOS", "EOS", "a", "<b>", "c", "d"]
UPRIGHT_PX = 21  # a tick label turned upright, as wide as its line is tall: Chromium's box of a 16 px Source Sans line
COLORBAR_PX = 100  # the right margin Plotly makes for the heads' colour bar, labels and title (measured in Chromium)
SCORE_BAR_PX = 111  # the right margin Plotly makes for a score's colour bar (0%, 50%, 100%) and its title, likewise


def decode_step(step: int, beams: list[Beam]) -> DecodeStep:
    """A decoding step of a beam search that kept `beams`, the first extended by its last token."""
    return DecodeStep(step, [1], torch.zeros(len(TOKENS)), beams[0].tokens[-1], [], [], beams)


def beam_steps() -> list[DecodeStep]:
    """Three steps of a beam search of width 2 over TOKENS, one hypothesis finishing early (EOS at step 1)."""
    return [
        decode_step(0, [Beam([1, 3], -0.1, 0, False), Beam([1, 4], -1.0, 0, False)]),
        decode_step(
            1, [Beam([1, 3, 5], -0.3, 0, False), Beam([1, 4, 6], -1.2, 1, False), Beam([1, 3, 2], -2.0, 0, True)]
        ),
        decode_step(2, [Beam([1, 3, 5, 2], -0.4, 0, True), Beam([1, 4, 6, 2], -1.5, 1, True)]),
    ]


def title_overflow(figure: go.Figure, chart_px: float) -> list[str]:
    """The lines of `figure`'s title wider than a chart `chart_px` wide leaves them (less TITLE_INSET_PX at each side),
    measured as drawn at the title's own size (Plotly's, TITLE_SIZE_PX, where the figure sets none)."""
    title = figure.layout.title
    size = title.font.size or TITLE_SIZE_PX
    return [line for line in title.text.split("<br>") if drawn_px(line, size) > chart_px - 2 * TITLE_INSET_PX]


class Label(NamedTuple):
    axis: str
    row: float  # the bottom of its panel, of the plot's height: panels side by side share it
    text: str
    left: float
    right: float


def key_label_clashes(figure: dict, chart_px: float, drawn_px: Callable[[str], float]) -> list[str]:
    """Where the key labels under a figure of heads side by side (`attention_heatmaps`, as a JSON dict) would clash in
    a chart `chart_px` wide, their widths as `drawn_px` gives them: two labels of an axis less than Plotly's 2 px
    apart, or a label reaching under another panel of its row or over that panel's labels. Read off the layout as
    Plotly draws it: the plot is the chart less its left and right margins (the right one at least as wide as the
    colour bar), each panel its x axis's domain of it, each key the same share of its panel with its label centred
    under it, as wide as its text flat and as its line is tall upright."""
    layout = figure["layout"]
    colour_bar = COLORBAR_PX if any(t.get("showscale") for t in figure["data"]) else 0
    plot_px = chart_px - layout["margin"]["l"] - max(layout["margin"]["r"], colour_bar)
    panels, labels = [], []
    for name, axis in sorted((n, a) for n, a in layout.items() if n.startswith("xaxis")):
        left, right = (d * plot_px for d in axis["domain"])
        row = layout[f"yaxis{name[5:]}"]["domain"][0]
        panels.append(Label(name, row, "", left, right))
        if axis.get("showticklabels") is False:
            continue
        key_px = (right - left) / len(axis["tickvals"])
        for k, text in zip(axis["tickvals"], axis["ticktext"]):
            if text:
                half = (drawn_px(text) if axis.get("tickangle", 0) == 0 else UPRIGHT_PX) / 2
                middle = left + (k + 0.5) * key_px
                labels.append(Label(name, row, text, middle - half, middle + half))
    clashes = [
        f"{a.axis}: {a.text!r} and {b.text!r} less than 2 px apart"
        for a, b in zip(labels, labels[1:])
        if a.axis == b.axis and a.right + 2 > b.left
    ]
    for label in labels:
        for other in [*panels, *labels]:
            beside = other.axis != label.axis and other.row == label.row
            if beside and label.left < other.right and label.right > other.left:
                what = f"{other.text!r} under" if other.text else "the panel of"
                clashes.append(f"{label.axis}: {label.text!r} reaches {what} {other.axis}")
    return clashes
