"""The knockout figure: its colour bar's labels fit the bar on the smallest grid, one layer; its cells read what was
scored; its title, and each panel's, fits a phone's chart."""

import pandas as pd
import pytest

from tests.helpers.figures import SCORE_BAR_PX, title_overflow
from transformer.figures import PAGE_PX, PHONE_CHART_PX, drawn_px
from transformer.figures.knockout import knockout_heatmaps
from transformer.i18n import translator
from transformer.inspection import ATTENTION_KINDS


@pytest.mark.parametrize("metric", ["exact_match", "token_acc"])
def test_colour_bar_labels_fit_a_one_layer_grid(metric):
    heads = pd.DataFrame(
        [(kind, 0, h, 0.5, 0.5) for kind in ATTENTION_KINDS for h in range(4)],
        columns=["kind", "layer", "head", "exact_match", "token_acc"],
    )
    figure = knockout_heatmaps(heads, 0.9, metric)
    bar = figure.data[0].colorbar
    layout = figure.layout
    bar_px = bar.len * (layout.height - layout.margin.t - layout.margin.b)  # len is a fraction of the plot area
    assert bar.tickvals is not None, "Plotly's automatic ticks may crowd a short bar"
    font_px = layout.font.size
    assert len(bar.tickvals) * 2 * font_px <= bar_px  # each label and a gap as tall as it
    assert bar.title.side == "right"  # the title runs along the bar, beside the labels, never on top of them
    heatmaps = [t for t in figure.data if t.type == "heatmap"]
    assert [t.showscale for t in heatmaps] == [True] + [False] * (len(heatmaps) - 1)


def test_a_cell_reads_100_percent_only_when_every_sequence_is_right():
    scores = [1.0, 0.998, 0.9996, 0.5, 0.004, 0.0004, 0.0]
    heads = pd.DataFrame(
        [(kind, 0, h, score, score) for kind in ATTENTION_KINDS for h, score in enumerate(scores)],
        columns=["kind", "layer", "head", "exact_match", "token_acc"],
    )
    trace = knockout_heatmaps(heads, 1.0).data[0]
    assert list(trace.text[0]) == ["100%", "99.8%", "99.9%", "50%", "0.4%", "0.1%", "0%"]
    assert "%{text}" in trace.hovertemplate and "%{z" not in trace.hovertemplate  # the hover says what the cell says


@pytest.mark.parametrize("language", ["en", "zh-CN"])
@pytest.mark.parametrize("metric", ["exact_match", "token_acc"])
def test_the_title_fits_a_phones_chart(language, metric):
    """The chart spans the page, narrowest on a phone."""
    heads = pd.DataFrame(
        [(kind, 0, h, 0.5, 0.5) for kind in ATTENTION_KINDS for h in range(4)],
        columns=["kind", "layer", "head", "exact_match", "token_acc"],
    )
    figure = knockout_heatmaps(heads, 0.999, metric, tr=translator(language))
    assert not title_overflow(figure, PHONE_CHART_PX), figure.layout.title.text


@pytest.mark.parametrize("language", ["en", "zh-CN"])
def test_each_panel_s_title_fits_its_panel_on_a_phone_clear_of_the_colour_bar(language):
    """ "cross-attention (decoder → encoder)" on one line, centred over a panel 185 px wide, ran into the colour bar:
    every line of a panel's title is as wide as the panel at most, the panel being the chart less the left margin and
    the room of the colour bar (as Plotly makes it, or the margin the figure sets, whichever is wider)."""
    heads = pd.DataFrame(
        [(kind, 0, h, 0.5, 0.5) for kind in ATTENTION_KINDS for h in range(4)],
        columns=["kind", "layer", "head", "exact_match", "token_acc"],
    )
    layout = knockout_heatmaps(heads, 0.9, tr=translator(language)).layout
    plot_px = PHONE_CHART_PX - layout.margin.l - max(layout.margin.r, SCORE_BAR_PX)
    for title in layout.annotations:
        assert title.font.size in (None, layout.font.size)  # drawn in the figure's font
        for line in title.text.split("<br>"):
            assert drawn_px(line, layout.font.size) <= plot_px, (line, plot_px)


@pytest.mark.parametrize("fit_px", [PHONE_CHART_PX, PAGE_PX])
@pytest.mark.parametrize("n_heads", [2, 4, 8, 16])
@pytest.mark.parametrize("score", [1.0, 0.5, 0.997])
def test_neighbouring_cells_percents_never_touch_where_the_chart_is_narrowest(fit_px, n_heads, score):
    """A cell's percent, "99.7%" the widest, fits beside its neighbour's with a gap where the chart is drawn
    narrowest, at a size a reader reads (12 px at least); where none fits, the cells are left for the hover to say."""
    heads = pd.DataFrame(
        [(kind, 0, h, score, score) for kind in ATTENTION_KINDS for h in range(n_heads)],
        columns=["kind", "layer", "head", "exact_match", "token_acc"],
    )
    figure = knockout_heatmaps(heads, 1.0, fit_px=fit_px)
    cell_px = (fit_px - figure.layout.margin.l - figure.layout.margin.r) / n_heads  # panels span the plot
    numbers = [trace for trace in figure.data if trace.type == "scatter"]
    for trace in numbers:
        assert trace.textfont.size >= 12
        assert all(drawn_px(text, trace.textfont.size) + 4 <= cell_px for text in trace.text)
    assert len(numbers) in (0, len(ATTENTION_KINDS))
    assert numbers or cell_px < drawn_px(list(figure.data[0].text[0])[0], 12) + 4  # left out only where none fits
