"""The knockout figure's colour bar: its labels fit the bar on the smallest grid, one layer."""

import pandas as pd
import pytest

from transformer.figures.knockout import knockout_heatmaps
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
    assert [t.showscale for t in figure.data] == [True] + [False] * (len(figure.data) - 1)
