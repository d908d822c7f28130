"""The patching figures' cell numbers and titles fit the width they are drawn at."""

import pandas as pd
import pytest

from tests.helpers.figures import title_overflow
from transformer.figures import PAGE_PX, PHONE_CHART_PX, drawn_px
from transformer.figures.heatmaps import CELL_NUMBER_PX, NUMBER_GAP_PX
from transformer.figures.patching import stream_patching_figure
from transformer.i18n import translator


def stream_table(n_positions: int) -> pd.DataFrame:
    """An encoder and a decoder of two layers, every patch bringing back 88%: the widest two-digit percents."""
    rows = [(s, layer, p, 0.88) for s in ("encoder", "decoder") for layer in range(3) for p in range(n_positions)]
    return pd.DataFrame(rows, columns=["stack", "layer", "position", "recovered"])


@pytest.mark.parametrize("language", ["en", "zh-CN"])
@pytest.mark.parametrize("chart_px", [PHONE_CHART_PX, PAGE_PX], ids=["phone", "laptop at 150%"])
def test_each_panels_numbers_read_at_12_px_or_more_with_neighbours_apart_at_the_width_given(chart_px, language):
    """Sized for no width, a ten-symbol input's residual stream wrote its percents at 12 px across a phone's chart
    (356 px) where neighbours overlapped by 9 px, and its title ran past both edges (measured in Chromium). A panel
    whose cells have no room for numbers at 12 px in a chart `fit_px` wide shows the colour bar alone."""
    tr = translator(language)
    for n in range(1, 16):
        labels = [str(i % 10) for i in range(n)]
        figure = stream_patching_figure(stream_table(n), labels, labels, tr=tr, fit_px=chart_px)
        layout = figure.layout
        plot_px = chart_px - layout.margin.l - layout.margin.r
        numbers = [trace for trace in figure.data if trace.type == "scatter"]
        for trace in numbers:
            assert trace.textfont.size >= CELL_NUMBER_PX, n
            assert plot_px / n - drawn_px("88%", trace.textfont.size) >= NUMBER_GAP_PX, n
        assert numbers or n > (5 if chart_px == PHONE_CHART_PX else 10), n  # numbers where English ones have room
        assert not title_overflow(figure, chart_px), layout.title.text
        panel_titles = [a.text for a in layout.annotations]
        assert all(drawn_px(line, 16) <= plot_px for t in panel_titles for line in t.split("<br>")), panel_titles
