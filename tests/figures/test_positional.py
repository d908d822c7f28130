"""Positional-encoding figures: the table, how alike positions are with the trained ones closed off, a few
dimensions named sine or cosine, and the first layer's input in panels stacked with their tokens beside each."""

import torch

from transformer.figures.positional import (
    embedding_heatmap,
    position_similarity_heatmap,
    positional_curves,
    positional_heatmap,
)
from transformer.inspection import position_similarity
from transformer.model import sinusoidal_table

TABLE = sinusoidal_table(16, 8)


def test_positional_heatmap_draws_the_table():
    assert len(positional_heatmap(TABLE).data) == 1


def test_position_similarity_closes_off_the_trained_positions_with_dashed_lines():
    fig = position_similarity_heatmap(position_similarity(TABLE), 5, "alike")
    assert fig.data[0].z.shape == (16, 16) and (fig.data[0].zmin, fig.data[0].zmax) == (-1, 1)
    assert [(shape.x0, shape.x1, shape.y0, shape.y1) for shape in fig.layout.shapes] == [
        (4.5, 4.5, -0.5, 4.5),
        (-0.5, 4.5, 4.5, 4.5),
    ]
    assert position_similarity_heatmap(position_similarity(TABLE), None, "alike").layout.shapes == ()


def test_positional_curves_name_even_dimensions_sine_and_odd_ones_cosine():
    fig = positional_curves(TABLE, [0, 1, 6])
    assert [t.name for t in fig.data] == ["dim 0 (sin)", "dim 1 (cos)", "dim 6 (sin)"]


def test_embedding_heatmap_stacks_its_panels_with_the_tokens_beside_each():
    fig = embedding_heatmap({"a": torch.ones(3, 8), "b": torch.zeros(3, 8)}, ["1", "2", "1"], "e")
    assert len(fig.data) == 2 and fig.layout.yaxis2.ticktext == ("1", "2", "1")
