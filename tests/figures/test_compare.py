"""Compare's figures: the curves' three panels keep apart and their titles fit, on a phone as on a zoomed laptop; the
timeline's titles fit their half-page column; in English and Chinese."""

import pytest

from tests.helpers.figures import title_overflow
from transformer.figures import COLUMN_PX, PAGE_PX, PHONE_CHART_PX, drawn_px
from transformer.figures.compare import (
    alignment_figure,
    comparison_figure,
    length_comparison_figure,
    loss_marker_figure,
)
from transformer.figures.heatmaps import label_px
from transformer.i18n import translator


@pytest.mark.parametrize("language", ["en", "zh-CN"])
@pytest.mark.parametrize("variant", ["sinusoidal PE", "averaged weights (EMA 0.99)", "GRU + additive attention"])
def test_the_loss_title_fits_its_column(language, variant):
    """Drawn at Plotly's title size, 22 px: "Loss of averaged weights (EMA 0.99)" is two lines."""
    tr = translator(language)
    figure = loss_marker_figure(
        [{"step": 0, "train_loss": 2.0}, {"step": 10, "train_loss": 1.0}], 10, tr.gettext(variant), tr=tr
    )
    assert not title_overflow(figure, COLUMN_PX), figure.layout.title.text


@pytest.mark.parametrize("language", ["en", "zh-CN"])
def test_the_alignment_title_fits_its_column(language):
    figure = alignment_figure([0, 25], {"L0 H0": [0.5, 0.9]}, chance=0.2, tr=translator(language))
    assert not title_overflow(figure, COLUMN_PX), figure.layout.title.text


@pytest.mark.parametrize("language, named", [("en", "layer 1, head 2"), ("zh-CN", "层 1 的头 2")])
def test_the_alignment_curves_name_their_heads_in_words_as_the_heatmaps_do(language, named):
    figure = alignment_figure([0, 25], {"L0 H0": [0.5, 0.9], "L1 H2": [0.2, 0.3]}, chance=0.2, tr=translator(language))
    assert figure.data[1].name == named and figure.data[1].hovertemplate.startswith(f"{named}: ")


ROWS = [{"step": s, "train_loss": 2 / (s + 1), "token_acc": 0.5, "exact_match": 0.4} for s in range(0, 600, 20)]


def panels(layout, chart_px: float) -> list[tuple[float, float, float, float]]:
    """Each panel's left and right edge across a chart `chart_px` wide, and its bottom and top, in px, from the left
    margin and the plot's bottom; in the order of the titles."""
    plot_w = chart_px - layout.margin.l - layout.margin.r
    plot_h = layout.height - layout.margin.t - layout.margin.b
    return [
        (*(d * plot_w for d in layout[f"xaxis{n}"].domain), *(d * plot_h for d in layout[f"yaxis{n}"].domain))
        for n in ("", "2", "3")
    ]


@pytest.mark.parametrize("language", ["en", "zh-CN"])
@pytest.mark.parametrize("chart_px", [PHONE_CHART_PX, PAGE_PX], ids=["phone", "laptop at 150%"])
def test_the_curves_panels_keep_apart_and_their_titles_never_collide(language, chart_px):
    """On a phone the three panels side by side were 79 px wide: "(teacher forced)" ran into "(greedy decoding)", and
    the third panel's "100%" lay over the second panel's curve. Panels side by side leave the next one's percentages
    room between them; panels one above the other do not overlap; each title's lines, centred over its panel, stay
    inside the chart and clear of the titles beside it."""
    figure = comparison_figure({"a": ROWS, "b": ROWS}, tr=translator(language), fit_px=chart_px)
    layout = figure.layout
    boxes = panels(layout, chart_px)
    for (_, right, bottom, top), (left2, _, bottom2, top2) in zip(boxes, boxes[1:]):
        if bottom < top2 and bottom2 < top:  # side by side
            assert left2 - right >= label_px(["100%"]), "the next panel's percentages reach over this one"
        else:
            assert top2 <= bottom or top <= bottom2
    spans = []  # each title's widest line, left and right, in px from the chart's left edge, and its panel's top
    for title, (left, right, _, top) in zip(layout.annotations, boxes):
        half = max(drawn_px(line, layout.font.size) for line in title.text.split("<br>")) / 2
        middle = layout.margin.l + (left + right) / 2
        assert 0 <= middle - half and middle + half <= chart_px, title.text
        spans.append((middle - half, middle + half, top))
    for (_, right, top), (left2, _, top2) in zip(spans, spans[1:]):
        assert top != top2 or right <= left2, "two titles side by side run into each other"


def test_on_a_phone_the_panels_stand_one_above_the_other_and_on_a_laptop_side_by_side():
    on_phone = comparison_figure({"a": ROWS}, fit_px=PHONE_CHART_PX).layout
    assert all(tuple(on_phone[f"xaxis{n}"].domain) == (0, 1) for n in ("", "2", "3"))
    on_laptop = comparison_figure({"a": ROWS}, fit_px=PAGE_PX).layout
    assert all(tuple(on_laptop[f"yaxis{n}"].domain) == (0, 1) for n in ("", "2", "3"))
    # one step axis titled under the stacked panels, where each other title would sit between two panels
    assert [on_phone[f"xaxis{n}"].title.text for n in ("", "2", "3")] == [None, None, "training step"]
    assert [on_laptop[f"xaxis{n}"].title.text for n in ("", "2", "3")] == ["training step"] * 3


def test_the_trained_lengths_label_stands_clear_of_a_curve_at_100_percent():
    rows = [{"length": n, "trained": n == 10, "exact_match": float(n == 10)} for n in range(1, 21)]
    layout = length_comparison_figure({"sinusoidal PE": rows, "no PE": rows}).to_dict()["layout"]
    (label,) = [a for a in layout["annotations"] if a["text"] == "trained lengths"]
    assert label["y"] == 1 and label["yanchor"] == "top"  # hung from the plot's top, inside it
    low, high = layout["yaxis"]["range"]
    plot_px = layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]
    label_data = (high - low) * (layout["font"]["size"] * 1.3 + 4) / plot_px  # a line of the label, and its padding
    assert high - label_data > 100  # the 100% point lies below the label
    assert label["xanchor"] == "left" and label["xshift"] > 0  # in from the axis line where the span starts at it


@pytest.mark.parametrize("language", ["en", "zh-CN"])
@pytest.mark.parametrize("chart_px", [PHONE_CHART_PX, PAGE_PX])
def test_the_length_test_title_fits_the_width_given(language, chart_px):
    """ "Length test of each variant's final model" ran 4 px past each edge of a phone's chart."""
    rows = [{"length": n, "trained": n < 4, "exact_match": 1.0} for n in range(1, 8)]
    figure = length_comparison_figure({"sinusoidal PE": rows}, tr=translator(language), fit_px=chart_px)
    assert not title_overflow(figure, chart_px), figure.layout.title.text


def test_the_length_test_labels_every_other_length_past_a_dozen():
    """Compare's shipped experiment tests lengths 1-21: labelled one by one, they turned on their side and ran
    together on a phone ("0123456789101112..."), where Length test's own chart labels every other."""
    rows = [{"length": n, "trained": n <= 10, "exact_match": 1.0} for n in range(1, 22)]
    assert length_comparison_figure({"sinusoidal PE": rows}).layout.xaxis.dtick == 2
    assert length_comparison_figure({"sinusoidal PE": rows[:8]}).layout.xaxis.dtick == 1


def test_each_percent_panel_s_0_stands_off_the_step_axis_s_0():
    """On a phone the accuracy panels' "0%" touched the step axis's "0" at the origin, as the run charts' once did."""
    layout = comparison_figure({"a": ROWS}, fit_px=PHONE_CHART_PX).layout
    percent = [layout[f"yaxis{n}"] for n in ("2", "3")]
    assert all(axis.ticksuffix == "%" and axis.ticklabelstandoff > 0 for axis in percent)
