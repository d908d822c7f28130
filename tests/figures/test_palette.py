"""The palette: CIEDE2000 as Sharma, Wu and Dalal (2005) publish it, and every two colours a figure shows together
at least `LEAST_DIFFERENCE` apart for a viewer with deuteranopia, protanopia or tritanopia; the figures draw the
colours declared for them, each series with its own dash or marker symbol as well."""

import numpy as np
import pandas as pd
import pytest
from plotly.colors import sample_colorscale, unlabel_rgb

from tests.helpers.figures import TOKENS, beam_steps
from transformer.classroom.board import GroupCurves
from transformer.figures import PAGE_PX
from transformer.figures.board import group_curves_figure, outcomes_figure
from transformer.figures.compare import comparison_figure
from transformer.figures.decoding import beam_tree, step_attention_heatmap
from transformer.figures.knockout import knockout_heatmaps
from transformer.figures.palette import (
    DEFICIENCIES,
    LEAST_DIFFERENCE,
    SHOWN_TOGETHER,
    VALID,
    ciede2000,
    closest_pair,
    contrast_ratio,
    simulate,
)
from transformer.figures.patching import head_patching_figure
from transformer.figures.training import loss_figure
from transformer.inspection import ATTENTION_KINDS
from transformer.limits import MAX_GROUPS, MAX_VARIANTS

# Sharma, Wu and Dalal (2005), Table 1: the 34 pairs (L*, a*, b*) and their CIEDE2000 difference, to 4 decimals.
SHARMA = [
    ((50.0000, 2.6772, -79.7751), (50.0000, 0.0000, -82.7485), 2.0425),
    ((50.0000, 3.1571, -77.2803), (50.0000, 0.0000, -82.7485), 2.8615),
    ((50.0000, 2.8361, -74.0200), (50.0000, 0.0000, -82.7485), 3.4412),
    ((50.0000, -1.3802, -84.2814), (50.0000, 0.0000, -82.7485), 1.0000),
    ((50.0000, -1.1848, -84.8006), (50.0000, 0.0000, -82.7485), 1.0000),
    ((50.0000, -0.9009, -85.5211), (50.0000, 0.0000, -82.7485), 1.0000),
    ((50.0000, 0.0000, 0.0000), (50.0000, -1.0000, 2.0000), 2.3669),
    ((50.0000, -1.0000, 2.0000), (50.0000, 0.0000, 0.0000), 2.3669),
    ((50.0000, 2.4900, -0.0010), (50.0000, -2.4900, 0.0009), 7.1792),
    ((50.0000, 2.4900, -0.0010), (50.0000, -2.4900, 0.0010), 7.1792),
    ((50.0000, 2.4900, -0.0010), (50.0000, -2.4900, 0.0011), 7.2195),
    ((50.0000, 2.4900, -0.0010), (50.0000, -2.4900, 0.0012), 7.2195),
    ((50.0000, -0.0010, 2.4900), (50.0000, 0.0009, -2.4900), 4.8045),
    ((50.0000, -0.0010, 2.4900), (50.0000, 0.0010, -2.4900), 4.8045),
    ((50.0000, -0.0010, 2.4900), (50.0000, 0.0011, -2.4900), 4.7461),
    ((50.0000, 2.5000, 0.0000), (50.0000, 0.0000, -2.5000), 4.3065),
    ((50.0000, 2.5000, 0.0000), (73.0000, 25.0000, -18.0000), 27.1492),
    ((50.0000, 2.5000, 0.0000), (61.0000, -5.0000, 29.0000), 22.8977),
    ((50.0000, 2.5000, 0.0000), (56.0000, -27.0000, -3.0000), 31.9030),
    ((50.0000, 2.5000, 0.0000), (58.0000, 24.0000, 15.0000), 19.4535),
    ((50.0000, 2.5000, 0.0000), (50.0000, 3.1736, 0.5854), 1.0000),
    ((50.0000, 2.5000, 0.0000), (50.0000, 3.2972, 0.0000), 1.0000),
    ((50.0000, 2.5000, 0.0000), (50.0000, 1.8634, 0.5757), 1.0000),
    ((50.0000, 2.5000, 0.0000), (50.0000, 3.2592, 0.3350), 1.0000),
    ((60.2574, -34.0099, 36.2677), (60.4626, -34.1751, 39.4387), 1.2644),
    ((63.0109, -31.0961, -5.8663), (62.8187, -29.7946, -4.0864), 1.2630),
    ((61.2901, 3.7196, -5.3901), (61.4292, 2.2480, -4.9620), 1.8731),
    ((35.0831, -44.1164, 3.7933), (35.0232, -40.0716, 1.5901), 1.8645),
    ((22.7233, 20.0904, -46.6940), (23.0331, 14.9730, -42.5619), 2.0373),
    ((36.4612, 47.8580, 18.3852), (36.2715, 50.5065, 21.2231), 1.4146),
    ((90.8027, -2.0831, 1.4410), (91.1528, -1.6435, 0.0447), 1.4441),
    ((90.9257, -0.5406, -0.9208), (88.6381, -0.8985, -0.7239), 1.5381),
    ((6.7747, -0.2908, -2.4247), (5.8714, -0.0985, -2.2286), 0.6377),
    ((2.0776, 0.0795, -1.1350), (0.9033, -0.0636, -0.5514), 0.9082),
]


@pytest.mark.parametrize("lab1, lab2, expected", SHARMA)
def test_ciede2000_gives_sharmas_published_differences_both_ways(lab1, lab2, expected):
    assert round(ciede2000(lab1, lab2), 4) == expected
    assert round(ciede2000(lab2, lab1), 4) == expected


def test_white_and_black_are_the_same_in_every_colour_vision_and_red_and_green_merge_without_red_or_green_cones():
    for kind in [None, *DEFICIENCIES]:
        assert simulate("#ffffff", kind) == pytest.approx((100, 0, 0), abs=0.01)
        assert simulate("#000000", kind) == pytest.approx((0, 0, 0), abs=1e-9)
    # the old decoding palette: "finished" green and "best path" red, told apart at once in normal vision only
    finished, best_path = "#2ca02c", "#d62728"
    assert ciede2000(simulate(finished), simulate(best_path)) > 50
    assert closest_pair([finished, best_path])[:2] == (pytest.approx(4.6, abs=0.05), "deuteranopia")


@pytest.mark.parametrize("figures", SHOWN_TOGETHER)
def test_colours_shown_together_stay_apart_in_every_simulated_colour_vision(figures):
    difference, kind, a, b = closest_pair(SHOWN_TOGETHER[figures])
    assert difference >= LEAST_DIFFERENCE, f"{figures}: {a} and {b} are {difference:.1f} apart in {kind}"


def _drawn(figure) -> set[str]:
    """Every colour the figure's traces draw lines and markers in."""
    colours = set()
    for trace in figure.data:
        colours.add(getattr(getattr(trace, "line", None), "color", None))
        marker = getattr(getattr(trace, "marker", None), "color", None)
        colours.update(marker if isinstance(marker, tuple) else [marker])
    return colours - {None}


def test_the_beam_tree_draws_its_declared_colours_and_a_symbol_for_finished_and_live():
    figure = beam_tree(beam_steps(), TOKENS, best=[1, 3, 5, 2])
    assert _drawn(figure) == set(SHOWN_TOGETHER["decoding beam tree"])
    assert {trace.marker.symbol for trace in figure.data if trace.mode == "markers+text"} == {"circle", "square"}


def test_every_group_and_every_variant_has_its_own_colour_and_dash_and_every_group_its_own_symbol():
    steps = pd.Index([5, 10], name="step")
    curves = {f"g{i}": GroupCurves(pd.DataFrame({i: [2.0, 1.0]}, index=steps), pd.Series([2.0, 1.0])) for i in range(4)}
    medians = [trace for trace in group_curves_figure(curves, "loss").data if trace.showlegend is not False]
    assert len({(t.line.color, t.line.dash) for t in medians}) == len({t.line.dash for t in medians}) == MAX_GROUPS
    assert {t.line.color for t in medians} <= set(SHOWN_TOGETHER["series: board groups, compare variants"])
    table = pd.DataFrame({"group": list(curves), "solved": True, "steps": 300, "exact_match": 1.0, "timed_out": False})
    assert len({trace.marker.symbol for trace in outcomes_figure(table, list(curves)).data}) == MAX_GROUPS
    rows = [{"step": 5, "train_loss": 1.0, "token_acc": 0.5, "exact_match": 0.1}]
    variants = comparison_figure({f"v{i}": rows for i in range(MAX_VARIANTS)}).data
    assert len({(t.line.color, t.line.dash) for t in variants if t.showlegend}) == MAX_VARIANTS


def test_the_held_out_loss_is_dashed_and_the_training_loss_solid():
    rows = [{"step": 5, "train_loss": 1.0, "val_loss": 1.2}]
    train, valid = loss_figure(rows).data
    assert (train.line.dash, valid.line.dash, valid.line.color) == ("solid", "dash", VALID)


@pytest.mark.parametrize(
    "a, b, ratio",
    [("#000000", "#ffffff", 21.0), ("#ffffff", "#ffffff", 1.0), ("#767676", "#ffffff", 4.54), ("#595959", "#fff", 7.0)],
)
def test_contrast_ratio_gives_wcag_s_figures_either_way_round(a, b, ratio):
    b = "#ffffff" if b == "#fff" else b
    assert round(contrast_ratio(a, b), 2) == ratio and contrast_ratio(b, a) == contrast_ratio(a, b)


def _heatmap_numbers(figure):
    """Each number the figure writes on a heatmap's cell: (its colour, the cell's colour), the cell's colour sampled
    from the heatmap's own colour scale at the cell's value."""
    pairs = []
    heatmaps = [t for t in figure.data if t.type == "heatmap"]
    for numbers in (t for t in figure.data if t.type == "scatter" and t.mode == "text"):
        heat = next(h for h in heatmaps if (h.xaxis, h.yaxis) == (numbers.xaxis, numbers.yaxis))
        z = np.asarray(heat.z, dtype=float)
        for x, y, colour in zip(numbers.x, numbers.y, numbers.textfont.color):
            share = (z[y, x] - heat.zmin) / (heat.zmax - heat.zmin)
            fill = unlabel_rgb(sample_colorscale([list(stop) for stop in heat.colorscale], [share])[0])
            pairs.append((colour, "#{:02x}{:02x}{:02x}".format(*(round(c) for c in fill))))
    return pairs


def test_every_number_on_a_heatmap_cell_reads_at_4_5_to_1_on_its_cell():
    """Knockout, patching and a decoding step's attention write each cell's score on it: on every value from 0 to 1,
    in black or white, at WCAG 2.2 AA's 4.5:1 for text. Plotly's own choice, white on mid-tones, read at 3.1-3.4:1."""
    values = np.linspace(0, 1, 13 * 8)
    cells = [(kind, layer, head) for kind in ATTENTION_KINDS for layer in range(13) for head in range(8)]
    heads = pd.DataFrame(
        [(*cell, v, v, v) for cell, v in zip(cells, np.tile(values, len(ATTENTION_KINDS)))],
        columns=["kind", "layer", "head", "exact_match", "token_acc", "recovered"],
    )
    figures = [
        knockout_heatmaps(heads, 0.9, fit_px=PAGE_PX),  # eight heads' numbers have room at 150% zoom, not on a phone
        head_patching_figure(heads, fit_px=PAGE_PX),
        step_attention_heatmap(values[:100].reshape(10, 10), list("abcdefghij"), "step 1"),
    ]
    for figure in figures:
        pairs = _heatmap_numbers(figure)
        assert len(pairs) >= 99, figure.layout.title.text  # a number on each cell (attention blanks its 0%)
        worst = min(pairs, key=lambda pair: contrast_ratio(*pair))
        assert contrast_ratio(*worst) >= 4.5, worst
