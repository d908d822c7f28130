"""Figures of several panels keep their labels apart on a phone: panels with long titles stand one above the other,
labels repeated over panels side by side are short enough for a phone's width, and heads side by side leave each
source token's label room under its own column, up to the longest input the Train form allows.

A phone's plot area: a 390 px screen, less Streamlit's 16 px padding each side, the figures' 60 + 20 px margins and
about 60 px of colour bar, is about 220 px wide. A character of the 16 px font is taken as 0.55 em wide, the average
letter and digit of Open Sans, Plotly's default font.
"""

import numpy as np
import pandas as pd
import pytest
import torch

from tests.helpers.figures import key_label_clashes
from transformer import settings
from transformer.figures import PHONE_CHART_PX
from transformer.figures.alignment import ideal_over_learned
from transformer.figures.attention import key_labels, projection_heatmaps
from transformer.figures.heatmaps import PANEL_GAP_PX, PANEL_TITLE_LINE_PX
from transformer.figures.knockout import knockout_heatmaps
from transformer.figures.patching import head_patching_figure, stream_patching_figure
from transformer.figures.positional import embedding_heatmap
from transformer.inspection import ATTENTION_KINDS

PHONE_PLOT_PX = 220
CHAR_EM = 0.55


def text_px(text: str, font_px: float) -> float:
    """The width of the longest line of a Plotly label, estimated."""
    return max(len(line) for line in text.split("<br>")) * CHAR_EM * font_px


def heads_table(n_layers: int, column: str) -> pd.DataFrame:
    rows = [(k, layer, h, 0.5) for k in ATTENTION_KINDS for layer in range(n_layers) for h in range(4)]
    return pd.DataFrame(rows, columns=["kind", "layer", "head", column])


def stream_table() -> pd.DataFrame:
    rows = [(s, layer, p, 0.5) for s in ("encoder", "decoder") for layer in range(3) for p in range(4)]
    return pd.DataFrame(rows, columns=["stack", "layer", "position", "recovered"])


STACKED = {
    "knockout": lambda: knockout_heatmaps(heads_table(2, "exact_match"), 0.9),
    "head patching": lambda: head_patching_figure(heads_table(2, "recovered")),
    "stream patching": lambda: stream_patching_figure(stream_table(), list("abcd"), list("dcba")),
    "embeddings": lambda: embedding_heatmap(
        {"token embedding × √d_model": torch.ones(4, 8), "+ positional encoding": torch.zeros(4, 8)}, list("abab"), "e"
    ),
}


@pytest.mark.parametrize("name", STACKED)
def test_panels_with_long_titles_stand_one_above_the_other_with_room_between(name):
    layout = STACKED[name]().layout
    xs = [layout[a].domain for a in layout if a.startswith("xaxis")]
    ys = sorted((layout[a].domain for a in layout if a.startswith("yaxis")), reverse=True)
    assert len(xs) >= 2 and all(tuple(x) == (0, 1) for x in xs)  # each panel the full width: its title has it all
    plot_px = layout.height - layout.margin.t - layout.margin.b
    lines = {round(a.y, 6): a.text.count("<br>") for a in layout.annotations}  # each title's lines past the first
    for upper, lower in zip(ys, ys[1:]):  # tick labels, axis title and the next panel's title fit between
        # domains are rounded to 6 decimals: under 0.01 px on a plot under 10,000 px tall
        room = PANEL_GAP_PX + PANEL_TITLE_LINE_PX * lines[lower[1]]
        assert (upper[0] - lower[1]) * plot_px == pytest.approx(room, abs=0.01)


def projections_x_titles() -> tuple:
    figure = projection_heatmaps({name: np.zeros((8, 8)) for name in ("W_Q", "W_K", "W_V", "W_O")}, 2, "W")
    return figure, [figure.layout[f"xaxis{n}"].title.text for n in ("", "2", "3", "4")]


def alignment_titles() -> tuple:
    labels = list("abc")
    figure = ideal_over_learned(np.full((4, 3, 3), 1 / 3), np.eye(3), [0.53, 0.51, 0.25, 0.49], labels, labels, "a")
    return figure, [a.text for a in figure.layout.annotations]


@pytest.mark.parametrize("labelled", [projections_x_titles, alignment_titles], ids=["projections", "alignment"])
def test_labels_repeated_over_four_panels_side_by_side_fit_a_phone(labelled):
    figure, labels = labelled()
    between_px = (figure.layout.xaxis2.domain[0] - figure.layout.xaxis.domain[0]) * PHONE_PLOT_PX  # centre to centre
    assert len(labels) == 4 and all(text_px(label, figure.layout.font.size) <= between_px for label in labels), labels


def test_the_projections_label_the_first_and_last_input_under_the_first_panel_alone():
    """Four panels of d_model columns side by side: Plotly's 0 10 20 30 under each ran into the next panel's on a
    phone. The other panels' labels are blank, a line tall, so their titles stand in line with the first's."""
    figure, _ = projections_x_titles()
    axes = [figure.layout[f"xaxis{n}"] for n in ("", "2", "3", "4")]
    assert all(list(axis.tickvals) == [0, 7] and axis.tickangle == 0 for axis in axes)
    assert list(axes[0].ticktext) == ["0", "7"] and all(list(a.ticktext) == ["\u2007"] * 2 for a in axes[1:])


def test_a_cell_s_percent_never_reads_minus_zero():
    """A patch that brings back a hair less than nothing (-0.1%) reads 0%, as one that brings back a hair more."""
    from transformer.figures.heatmaps import score_heatmap

    trace, numbers = score_heatmap(np.array([[-0.001, 0.004, np.nan, 0.996]]), "Greens", "recovered", "", True)
    assert trace["text"] == [["0%", "0%", "", "100%"]] and numbers["text"] == ["0%", "0%", "100%"]


PHONE_CHART = 356  # a chart across a phone's page: 390 px less Streamlit's padding (measured in Chromium)
# How wide Chromium draws tokens in the lab's 16 px Source Sans (measured): a digit 8 px, and some of translate's words.
DRAWN_PX = {"sees": 29.3, "likes": 30.3, "chases": 45.4, "mouse": 45.3, "chazo": 39.4}
TOKENS = {
    "digits": [str(s % 10) for s in range(64)],  # reverse, copy, sort...: symbols 0 to 9
    "numbers": [str(10 + s % 20) for s in range(64)],  # up to 30 symbols: 10 to 29
    "words": list(DRAWN_PX) * 13,  # translate
}


def drawn_px(text: str) -> float:
    return DRAWN_PX.get(text, 8.0 * len(text))


@pytest.mark.parametrize("tokens", TOKENS)
@pytest.mark.parametrize("n_heads", [1, 2, 4, 8])
def test_each_source_token_s_label_has_room_under_its_column_on_a_phone_up_to_the_longest_input(tokens, n_heads):
    """The Train page's heads, two a row at most, fitted to a phone's chart: at every input length the form allows,
    no key label runs into the next one or under the next panel."""
    for length in range(1, settings.setting("max_len").bounds[1] + 1):
        source, queries = TOKENS[tokens][:length], ["BOS", *TOKENS[tokens][:length]]
        weights, ideal = np.full((n_heads, length + 1, length), 1 / length), np.eye(length + 1, length)
        figure = ideal_over_learned(
            weights, ideal, [0.5] * n_heads, queries, source, "t", per_row=2, fit_px=PHONE_CHART_PX
        )
        clashes = key_label_clashes(figure.to_plotly_json(), PHONE_CHART, drawn_px)
        assert not clashes, (length, clashes)


@pytest.mark.parametrize("tokens", ["digits", "words"])
def test_heads_stacked_on_a_phone_label_the_keys_under_each_panel_with_room_below_it(tokens):
    """Stacked one a row, four heads at length 12 stand a screen or more apart on a phone: each panel's keys are
    labelled under it, and the gap to the next panel holds its labels and the next head's two-line title."""
    length, n_heads = 12, 4
    source, queries = TOKENS[tokens][:length], ["BOS", *TOKENS[tokens][:length]]
    weights, ideal = np.full((n_heads, length + 1, length), 1 / length), np.eye(length + 1, length)
    layout = ideal_over_learned(weights, ideal, [0.5] * n_heads, queries, source, "t", 2, fit_px=PHONE_CHART_PX).layout
    xs = [layout[a] for a in layout if a.startswith("xaxis")]
    assert len(xs) == n_heads and all(tuple(x.domain) == (0, 1) and x.showticklabels for x in xs)
    labels_px = 21 if xs[0].tickangle == 0 else max(drawn_px(t) for t in source)  # a line flat; upright, the longest
    ys = sorted((layout[a].domain for a in layout if a.startswith("yaxis")), reverse=True)
    plot_px = layout.height - 120  # the figure's height less the margins it reserves (attention_heatmaps)
    for upper, lower in zip(ys, ys[1:]):
        assert (upper[0] - lower[1]) * plot_px >= labels_px + 2 * PANEL_TITLE_LINE_PX


def test_query_labels_wider_than_a_phone_s_chart_still_give_the_keys_a_label_every_few():
    """A label is at most MAX_SYMBOL_CHARS long on the pages, yet a wider one (in a test, a report of any file) leaves
    the panels no width: the keys are then labelled sparsely, never by a step of zero or less."""
    wide = ["W" * 40] * 3
    keys = key_labels(4, wide, wide, 4, PHONE_CHART_PX)
    assert keys.per_row == 1 and keys.step >= 1
