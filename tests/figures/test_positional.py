"""Positional-encoding figures: the table, how alike positions are with the trained ones closed off, a few
dimensions named sine or cosine, and the first layer's input in panels stacked with their tokens beside each."""

import pytest
import torch

from tests.helpers.figures import title_overflow
from tests.helpers.models import random_model
from transformer.figures import PAGE_PX, PHONE_CHART_PX
from transformer.figures.positional import (
    embedding_heatmap,
    position_similarity_heatmap,
    positional_curves,
    positional_heatmap,
)
from transformer.i18n import translator
from transformer.inspection import OWN_TABLE, position_similarity, positional_table
from transformer.model import sinusoidal_table

TABLE = sinusoidal_table(16, 8)


def test_positional_heatmap_draws_the_table():
    assert len(positional_heatmap(TABLE).data) == 1


@pytest.mark.parametrize("language", ["en", "zh-CN"])
@pytest.mark.parametrize("chart_px", [PHONE_CHART_PX, PAGE_PX], ids=["phone", "laptop at 150%"])
@pytest.mark.parametrize("positional", ["none", *OWN_TABLE])
def test_the_tables_title_fits_the_width_given(language, chart_px, positional):
    """A model with no positional encoding titled the reference table in one line that ran past both edges of a
    phone's chart, from x = -39 to 429 px in Chinese (measured in Chromium)."""
    tr = translator(language)
    table, label = positional_table(random_model(positional=positional))
    title = tr.gettext("Positional encoding: {table}", table=tr.gettext(label))
    figure = positional_heatmap(table, title, tr=tr, fit_px=chart_px)
    assert not title_overflow(figure, chart_px), figure.layout.title.text


def test_position_similarity_closes_off_the_trained_positions_with_dashed_lines():
    fig = position_similarity_heatmap(position_similarity(TABLE), 5, "alike")
    assert fig.data[0].z.shape == (16, 16) and (fig.data[0].zmin, fig.data[0].zmax) == (-1, 1)
    assert [(shape.x0, shape.x1, shape.y0, shape.y1) for shape in fig.layout.shapes] == [
        (4.5, 4.5, -0.5, 4.5),
        (-0.5, 4.5, 4.5, 4.5),
    ]
    assert position_similarity_heatmap(position_similarity(TABLE), None, "alike").layout.shapes == ()


def test_position_similarity_keeps_square_cells_by_shrinking_the_plot_never_by_widening_an_axis():
    """Plotly keeps a scale anchor by widening the other axis's range past the data unless that axis is constrained
    to its domain: on a phone's plot, taller than wide, the positions axis read -20 to 80 for 64 positions."""
    layout = position_similarity_heatmap(position_similarity(TABLE), 5, "alike").layout
    assert layout.yaxis.scaleanchor == "x"
    assert layout.xaxis.constrain == layout.yaxis.constrain == "domain"


def test_positional_curves_name_even_dimensions_sine_and_odd_ones_cosine():
    fig = positional_curves(TABLE, [0, 1, 6])
    assert [t.name for t in fig.data] == ["dim 0 (sin)", "dim 1 (cos)", "dim 6 (sin)"]


def test_embedding_heatmap_stacks_its_panels_with_the_tokens_beside_each():
    fig = embedding_heatmap({"a": torch.ones(3, 8), "b": torch.zeros(3, 8)}, ["1", "2", "1"], "e")
    assert len(fig.data) == 2 and fig.layout.yaxis2.ticktext == ("1", "2", "1")
