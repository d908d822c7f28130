"""Attention figures: a mask in two colours with its tokens escaped and its title wrapped for a narrow column, one
panel per head labelled where it cannot run into a neighbour, and an attention block's projections with each head's
slice marked."""

import numpy as np
import pytest
import torch

from tests.helpers.figures import COLORBAR_PX, title_overflow
from tests.helpers.models import random_model
from transformer.figures import COLUMN_PX, PAGE_PX, PHONE_CHART_PX
from transformer.figures.attention import attention_heatmaps, mask_heatmap, projection_heatmaps
from transformer.i18n import translator
from transformer.inspection import ATTENTION_KINDS, attention_projections

LABELS = ["BOS", "3", "<b>", "PAD"]  # repeated labels keep their own rows


def test_mask_heatmap_escapes_its_tokens_names_both_colours_and_wraps_its_title():
    fig = mask_heatmap(torch.ones(4, 4, dtype=torch.bool).tril(), LABELS, LABELS, "causal")
    assert len(fig.data) == 1  # "<b>" escaped, or Plotly reads it as bold HTML
    assert list(fig.layout.yaxis.ticktext) == ["BOS", "3", "&lt;b&gt;", "PAD"]
    assert list(fig.data[0].colorbar.ticktext) == ["blocked", "may attend"]
    title = mask_heatmap(
        torch.ones(2, 2, dtype=torch.bool), LABELS[:2], LABELS[:2], "Padding + causal: what the decoder uses"
    ).layout.title.text
    assert title == "Padding + causal:<br>what the decoder uses"  # lines as even as they can be


@pytest.mark.parametrize("language", ["en", "zh-CN"])
@pytest.mark.parametrize(
    "title",
    [
        "Padding mask: encoder self-attention",
        "Padding mask: cross-attention",
        "Causal mask: decoder self-attention",
        "Padding + causal: what the decoder uses",
        "Padding + causal (this model's decoder uses padding only)",
    ],
)
def test_each_mask_title_fits_its_half_page_column(language, title):
    tr = translator(language)
    figure = mask_heatmap(torch.ones(2, 2, dtype=torch.bool), LABELS[:2], LABELS[:2], tr.gettext(title), tr=tr)
    assert not title_overflow(figure, COLUMN_PX), figure.layout.title.text


def test_attention_heatmaps_draw_a_panel_per_head_labelled_at_the_grids_edges():
    fig = attention_heatmaps(torch.rand(4, 4, 3).softmax(-1), LABELS, LABELS[:3], "weights")
    assert len(fig.data) == 4 and [a.text for a in fig.layout.annotations] == [f"head {h}" for h in range(4)]
    assert len(attention_heatmaps(torch.rand(6, 2, 2), LABELS[:2], LABELS[:2], "w").data) == 6
    # 3 heads two to a row: queries labelled beside heads 0 and 2, keys under heads 1 and 2 (nothing below head 1)
    layout = attention_heatmaps(torch.rand(3, 4, 3), LABELS, LABELS[:3], "w", per_row=2).layout
    assert [layout[f"yaxis{n}"].showticklabels for n in ("", "2", "3")] == [True, False, True]
    assert [layout[f"xaxis{n}"].showticklabels for n in ("", "2", "3")] == [False, True, True]


def test_projection_heatmaps_mark_each_heads_slice_of_every_matrix():
    model = random_model(n_layers=2)
    fig = projection_heatmaps(attention_projections(model, "cross", 1), n_heads=4, title="W")
    assert len(fig.data) == 4 and len(fig.layout.shapes) == 4 * 3  # 3 head boundaries in each matrix
    assert [fig.layout[f"yaxis{n}"].showticklabels for n in ("", "2", "3", "4")] == [True, False, False, False]


def test_two_line_head_titles_keep_clear_of_the_row_of_panels_above():
    from transformer.figures.alignment import ideal_over_learned
    from transformer.figures.heatmaps import PANEL_TITLE_LINE_PX

    weights, ideal = torch.full((4, 4, 3), 1 / 3), torch.eye(4, 3)
    fig = ideal_over_learned(weights, ideal, [0.9, 1.0, 0.7, 0.9], list("BCDE"), list("xyz"), "t", per_row=2)
    layout = fig.layout
    plot_px = layout.height - layout.margin.t - layout.margin.b
    gap = layout.yaxis.domain[0] - layout.yaxis3.domain[1]  # head 0's panel above head 2's
    assert gap * plot_px >= 2 * PANEL_TITLE_LINE_PX
    assert all(title.text.count("<br>") == 1 for title in layout.annotations[:4])  # two lines: name, then score


@pytest.mark.parametrize("last, place", [(0.95, (0, "left", "top")), (0.5, (1, "right", "bottom"))])
def test_the_threshold_s_label_sits_where_the_curve_is_not(last, place):
    """Ended above the line: under its left end, where the curve started low; ended below: above its right end."""
    from transformer.figures.alignment import best_head_figure

    fig = best_head_figure([0, 25, 50], [("L0 H0", 0.2), ("L0 H1", 0.6), ("L0 H1", last)], chance=0.2, threshold=0.9)
    found = next(a for a in fig.layout.annotations if a.text.startswith("found"))
    assert (found.x, found.xanchor, found.yanchor) == place and found.y == 0.9  # "top": below the line


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
@pytest.mark.parametrize("rise_at", [50, 400])
def test_the_threshold_s_label_keeps_off_a_curve_that_crosses_its_line_early_or_late(lang, rise_at):
    """Dedup's best head passed 0.9 by step 75 of 425: the label under the line's left end sat on the rising curve.
    The label's box, as drawn at a phone's width, holds no point of the curve (its segments sampled finely)."""
    from transformer.figures import PHONE_CHART_PX, drawn_px, top_margin
    from transformer.figures.alignment import BOTTOM_PX, LEFT_PX, NOTE_PX, RIGHT_PX, best_head_figure
    from transformer.i18n import translator

    steps = list(range(0, 451, 25))
    scores = [min(0.97, 0.17 + 0.8 * max(0, s - rise_at + 75) / 75) for s in steps]
    fig = best_head_figure(
        steps, [("L0 H2", v) for v in scores], 1 / 6, 0.9, tr=translator(lang), fit_px=PHONE_CHART_PX
    )
    found = fig.layout.annotations[0]
    low, top = fig.layout.yaxis.range
    share = drawn_px(found.text, 16) / (PHONE_CHART_PX - LEFT_PX - RIGHT_PX)
    x = (0, share * steps[-1]) if found.xanchor == "left" else ((1 - share) * steps[-1], steps[-1])
    tall = NOTE_PX / (fig.layout.height - top_margin(fig.layout.title.text) - BOTTOM_PX) * (top - low)
    y = (0.9 - tall, 0.9) if found.yanchor == "top" else (0.9, 0.9 + tall)
    curve = np.interp(np.linspace(0, steps[-1], 2001), steps, scores)
    inside = [(s, v) for s, v in zip(np.linspace(0, steps[-1], 2001), curve) if x[0] <= s <= x[1] and y[0] <= v <= y[1]]
    assert not inside, (found.xanchor, inside[:3])


@pytest.mark.parametrize("last, side", [(0.25, "top"), (0.95, "bottom"), (0.1, "bottom")])
def test_the_uniform_label_sits_below_its_line_only_where_the_curve_ends_just_above_it(last, side):
    from transformer.figures.alignment import best_head_figure

    fig = best_head_figure([0, 25, 50], [("L0 H0", 0.2), ("L0 H1", 0.22), ("L0 H1", last)], chance=0.2, threshold=0.9)
    uniform = next(a for a in fig.layout.annotations if a.text == "uniform attention")
    assert (uniform.y, uniform.yanchor) == (0.2, side)  # "top": below the line


@pytest.mark.parametrize("chance", [0.1, 0.125, 0.5])
def test_the_uniform_label_under_its_line_stays_above_the_x_axis_s_ticks(chance):
    """A model without positional encoding stays near uniform attention, 1/8 over 8 source tokens: its label, under
    the line, reached down into the step numbers under the axis."""
    from transformer.figures import top_margin
    from transformer.figures.alignment import BOTTOM_PX, NOTE_PX, best_head_figure

    fig = best_head_figure([0, 25, 50], [("L0 H0", chance), ("L0 H1", chance + 0.05)], chance=chance, threshold=0.9)
    low, top = fig.layout.yaxis.range
    plot_px = fig.layout.height - top_margin(fig.layout.title.text) - BOTTOM_PX
    assert (chance - low) / (top - low) * plot_px >= NOTE_PX - 1e-9  # the label's height fits between line and axis
    assert low <= 0 and (low == 0) == (chance >= 0.5)  # the axis goes under 0 only when it must


def test_the_best_head_is_named_in_words_in_the_figure_s_language_and_other_text_as_it_is():
    from transformer.figures.alignment import best_head_figure, head_name
    from transformer.i18n import translator

    zh = translator("zh-CN")
    assert head_name("L1 H3") == "layer 1, head 3"
    assert head_name("L0 H2", zh) == "层 0 的头 2"
    assert head_name("L0 H2<b>") == "L0 H2<b>"  # a label read from a file is not a head's
    fig = best_head_figure([0, 25], [("L0 H2", 0.3), ("<b>", 0.5)], chance=0.2, threshold=0.9, tr=zh)
    assert [name for name, _ in fig.data[0].customdata] == ["层 0 的头 2", "&lt;b&gt;"]


def test_a_head_short_of_the_threshold_never_reads_as_reaching_it():
    """Shown to two decimals, 0.899 would round to 0.90, the threshold that the caption beside it says no head
    reached: every view rounds a score down."""
    from transformer.alignment import shown_score
    from transformer.figures.alignment import best_head_figure, ideal_over_learned

    assert [shown_score(s) for s in (0.899, 0.29, 0.9, 0.905, 1.0, 0.0)] == [0.89, 0.29, 0.9, 0.9, 1.0, 0.0]
    fig = best_head_figure([0, 25], [("L0 H2", 0.3), ("L0 H2", 0.8999)], chance=0.2, threshold=0.9)
    assert [score for _, score in fig.data[0].customdata] == ["0.30", "0.89"]
    assert "%{customdata[1]}" in fig.data[0].hovertemplate
    weights, ideal = torch.full((2, 3, 3), 1 / 3), torch.eye(3)
    panels = ideal_over_learned(weights, ideal, [0.8999, 0.95], ["a", "b", "c"], ["x", "y", "z"], "t")
    assert [a.text.split("<br>")[1] for a in panels.layout.annotations[:2]] == ["0.89", "0.95"]
    from transformer.figures.compare import alignment_figure

    each = alignment_figure([0, 25], {"L0 H0": [0.5, 0.8999]}, chance=0.2)  # Compare's heads, step by step
    assert list(each.data[0].customdata) == ["0.50", "0.89"] and "%{customdata}" in each.data[0].hovertemplate


def test_the_heads_colour_bar_has_its_title_along_it_and_the_room_plotly_makes_for_them():
    weights = torch.rand(4, 4, 3).softmax(-1)
    fig = attention_heatmaps(weights, LABELS, LABELS[:3], "w", tr=translator("zh-CN"), fit_px=356)
    bar = fig.data[0].colorbar
    assert bar.title.text == "权重" and bar.title.side == "right"  # beside the labels: over the bar it touched the "1"
    assert list(bar.tickvals) == [0, 0.5, 1]  # labels of known widths
    assert fig.layout.margin.r == COLORBAR_PX  # the right margin as wide as Plotly makes it for the bar and its title


@pytest.mark.parametrize("language", ["en", "zh-CN"])
@pytest.mark.parametrize("chart_px", [PHONE_CHART_PX, PAGE_PX], ids=["phone", "laptop at 150%"])
def test_each_projection_title_fits_the_width_given(language, chart_px):
    """ "cross-attention (decoder → encoder), layer 1" in one line is 342 px at the title's size: wider than a phone's
    chart (356 px) leaves it."""
    tr, model = translator(language), random_model(n_layers=2)
    for kind, (name, *_) in ATTENTION_KINDS.items():
        title = tr.gettext("{block}, layer {layer}", block=tr.gettext(name), layer=1)
        figure = projection_heatmaps(attention_projections(model, kind, 1), 4, title, tr=tr, fit_px=chart_px)
        assert not title_overflow(figure, chart_px), figure.layout.title.text


@pytest.mark.parametrize("language", ["en", "zh-CN"])
def test_side_by_side_head_titles_in_a_half_page_column_stay_apart(language):
    """Caesar's probe input in Train's half-page column at 150% zoom: two panels a row left each 45 px, and "head 0"
    ran into "head 1" ("head 0head 1"). A row holds only as many panels as their titles have room for."""
    from transformer.figures.alignment import ideal_over_learned
    from transformer.figures.heatmaps import label_px

    weights, ideal = torch.full((4, 3, 2), 1 / 2), torch.eye(3, 2)
    queries, keys = ["BOS", *"ha"], list("kd")
    fig = ideal_over_learned(weights, ideal, [0.9] * 4, queries, keys, "t", 2, translator(language), COLUMN_PX)
    layout = fig.layout
    plot_px = COLUMN_PX - layout.margin.l - layout.margin.r
    titles = [(t.y, t.text.split("<br>")[0]) for t in layout.annotations[:4]]
    extents = [
        (y, (layout[f"xaxis{n or ''}"].domain[0] + layout[f"xaxis{n or ''}"].domain[1]) / 2 * plot_px, name)
        for n, (y, name) in zip(["", 2, 3, 4], titles)
    ]
    for (y0, x0, name0), (y1, x1, name1) in zip(extents, extents[1:]):
        if y0 == y1:  # side by side: the two titles' halves fit between their centres
            assert x1 - x0 >= (label_px([name0]) + label_px([name1])) / 2, (name0, name1)
    assert layout.xaxis2.domain[0] > 0 or language == "en"  # Chinese "头 0" is narrow: two a row still fit


def test_single_character_keys_under_a_panel_stand_half_the_type_apart():
    """Train's four heads on a phone, two a row: the probe's eight digits stood 3 px apart and read "96301671", one
    number. Each label now has half the type's size to its neighbour, with fewer panels a row where it needs it."""
    from transformer.figures.attention import HEADS_H_GAP, HEADS_RIGHT_PX, key_labels
    from transformer.figures.heatmaps import label_px
    from transformer.figures.theme import FONT

    queries, keys = ["BOS", *"1761036"], list("96301671")
    fit = key_labels(4, queries, keys, 2, PHONE_CHART_PX, ["head 0"])
    plot_px = PHONE_CHART_PX - fit.left_px - HEADS_RIGHT_PX
    key_px = plot_px * (1 - HEADS_H_GAP * (fit.per_row - 1)) / fit.per_row / len(keys)
    assert fit.angle == 0 and fit.step * key_px - label_px(keys) >= FONT["size"] / 2, fit
