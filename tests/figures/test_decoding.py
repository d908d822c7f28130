"""Decoding figures: the bar chart highlights the chosen token, the heatmap keeps its shape and labels, the beam tree
has one node per kept hypothesis, and the teacher-forcing table marks mismatches."""

import pytest
import torch

from tests.helpers.figures import TOKENS, beam_steps, decode_step, title_overflow
from transformer.decoding import Beam
from transformer.figures import PHONE_CHART_PX, drawn_px
from transformer.figures.decoding import (
    ATTENTION_COLUMN_PX,
    CHOSEN,
    MISMATCH,
    PROBS_COLUMN_PX,
    beam_tree,
    logit_lens_heatmap,
    probs_bar,
    step_attention_heatmap,
    teacher_forcing_table,
)
from transformer.figures.heatmaps import CELL_NUMBER_PX, NUMBER_GAP_PX, label_px
from transformer.i18n import translator


def test_probs_bar_sorted_top_k_with_chosen_highlighted():
    probs = torch.tensor([0.0, 0.0, 0.1, 0.4, 0.05, 0.3, 0.15])
    figure = probs_bar(probs, TOKENS, chosen=5, top_k=3)
    bar = figure.data[0]
    assert bar.orientation == "h" and figure.layout.yaxis.autorange == "reversed"  # the likeliest on top
    assert list(bar.y) == ["a", "c", "d"]  # a label a line: never turned on its side in a narrow column
    assert list(bar.x) == sorted(bar.x, reverse=True) == pytest.approx([0.4, 0.3, 0.15])
    assert [c == CHOSEN for c in bar.marker.color] == [False, True, False]


def test_probs_bar_adds_an_unlikely_chosen_token_last():
    probs = torch.tensor([0.0, 0.0, 0.1, 0.4, 0.05, 0.3, 0.15])
    bar = probs_bar(probs, TOKENS, chosen=2, top_k=2).data[0]
    assert list(bar.y) == ["a", "c", "EOS"]
    assert list(bar.marker.color).index(CHOSEN) == 2
    assert list(bar.marker.color).count(CHOSEN) == 1


@pytest.mark.parametrize("language", ["en", "zh-CN"])
def test_the_probabilities_title_fits_its_column_where_the_column_is_narrowest(language):
    """Wrapped at 26 characters, "(temperature 0.7, top-k 3)" was 212 px at the title's 18 px, wider than the
    column leaves it."""
    tr, probs = translator(language), torch.tensor([0.0, 0.0, 0.1, 0.4, 0.05, 0.3, 0.15])
    sampling = "Sampling distribution (temperature\xa0{temperature:g}, top-k\xa0{top_k})"
    for title in (None, tr.gettext(sampling, temperature=0.7, top_k=3)):
        figure = probs_bar(probs, TOKENS, chosen=2, title=title, tr=tr)
        assert not title_overflow(figure, PROBS_COLUMN_PX), figure.layout.title.text
        said = title or tr.gettext("Next-token probabilities")
        assert figure.layout.title.text.replace("<br>", "").replace(" ", "") == said.replace(" ", "")  # whole


def test_step_attention_heatmap_heads_by_keys():
    weights = torch.softmax(torch.randn(4, 5), dim=-1)
    fig = step_attention_heatmap(weights, ["a", "b", "a", "c", "<x>"], "step 1")
    heat = fig.data[0]
    assert [t.type for t in fig.data] == ["heatmap", "scatter"] and heat.z.shape == (4, 5)  # and its numbers
    assert heat.z[2][1] == float(weights[2, 1])
    assert list(fig.layout.xaxis.ticktext) == ["a", "b", "a", "c", "&lt;x&gt;"]  # escaped once for Plotly's HTML
    assert list(fig.layout.yaxis.ticktext) == ["head 0", "head 1", "head 2", "head 3"]
    assert (heat.zmin, heat.zmax) == (0, 1)
    assert fig.layout.xaxis.title.text == "source token" and "→ source" in heat.hovertemplate
    own = step_attention_heatmap(weights[:, :2], ["BOS", "a"], "step 2", keys="input")
    assert own.layout.xaxis.title.text == "input token" and "→ input" in own.data[0].hovertemplate


def test_cross_attention_cells_read_in_percent_until_the_source_is_too_long():
    weights = torch.tensor([[0.834, 0.16, 0.004, 0.002], [0.25, 0.25, 0.25, 0.25]])
    heat, numbers = step_attention_heatmap(weights, list("abcd"), "step 1").data
    assert list(numbers.text) == ["83%", "16%", "25%", "25%", "25%", "25%"] and heat.showscale is False  # the scale
    assert list(numbers.x) == [0, 1, 0, 1, 2, 3] and list(numbers.y) == [0, 0, 1, 1, 1, 1]  # each on its cell
    assert numbers.textfont.size == 16  # the page's font, in 4 cells a row
    ten = step_attention_heatmap(torch.full((2, 10), 1 / 10), [str(i) for i in range(10)], "step 1").data
    assert ten[1].textfont.size == CELL_NUMBER_PX < 16  # smaller, to fit a phone's narrower cells
    long = step_attention_heatmap(torch.full((2, 11), 1 / 11), [str(i) for i in range(11)], "step 1").data
    assert len(long) == 1 and long[0].showscale is True  # 11 columns: too narrow for numbers on a phone


@pytest.mark.parametrize("chart_px", [PHONE_CHART_PX, ATTENTION_COLUMN_PX], ids=["phone", "column at 150%"])
@pytest.mark.parametrize("figure", ["cross", "lens"])
def test_cell_numbers_read_at_12_px_or_more_and_neighbours_stay_apart_at_the_width_given(figure, chart_px):
    """At 11 px in a row of ten keys, two neighbours' "17%" and "83%" nearly touched across a phone's chart; sized for
    a phone, in Decoding's attention column at 150% zoom (291.7 px) nine keys' numbers stood 1 px apart and ten keys'
    overlapped. A row with no room for numbers at 12 px in a chart `fit_px` wide shows the colour bar instead; on a
    phone a source the length of the shipped reverse model's longest (10 symbols) keeps its numbers."""
    for n in range(1, 16):
        labels = [str(i) for i in range(n)]
        if figure == "cross":
            fig = step_attention_heatmap(torch.full((4, n), 0.88), labels, "step 1", fit_px=chart_px)
        else:  # every token among some layer's top 5: a column each
            fig = logit_lens_heatmap(torch.full((3, n), 0.88), labels, top_k=n, fit_px=chart_px)
        numbers = [trace for trace in fig.data if trace.type == "scatter"]
        if not numbers:
            assert fig.data[0].showscale is True, n
            assert figure == "lens" or n > (10 if chart_px == PHONE_CHART_PX else 7), n  # colour bars only where due
            continue
        size, plot_px = numbers[0].textfont.size, chart_px - fig.layout.margin.l - fig.layout.margin.r
        assert size >= 12, n
        assert plot_px / n - drawn_px("88%", size) >= NUMBER_GAP_PX, n  # centre to centre, less a number's width


@pytest.mark.parametrize("language", ["en", "zh-CN"])
def test_the_step_attention_and_logit_lens_titles_fit_the_width_given(language):
    """The logit lens's title ("Each decoder layer's next-token guess, step 11") ran past both edges of its chart in
    Decoding's expander on a phone (320 px): each line of a title fits the chart `fit_px` wide it is drawn at."""
    tr, labels = translator(language), [str(i) for i in range(5)]
    lens_title = tr.gettext("Each decoder layer's next-token guess, step {step}", step=11)
    lens = logit_lens_heatmap(torch.full((2, 5), 0.2), labels, title=lens_title, tr=tr, fit_px=320)
    assert not title_overflow(lens, 320) and "<br>" in lens.layout.title.text  # one line would not fit
    step_title = tr.gettext("Self-attention of step {step}, layer {layer}", step=11, layer=1)
    step = step_attention_heatmap(torch.full((4, 5), 0.2), labels, step_title, tr=tr, fit_px=ATTENTION_COLUMN_PX)
    assert not title_overflow(step, ATTENTION_COLUMN_PX)


def _points(fig, name: str) -> list[tuple[float, float, str]]:
    trace = next(t for t in fig.data if t.name == name)
    return list(zip(trace.x, trace.y, trace.text))


def test_beam_tree_one_node_per_beam_token_and_edges_to_parents():
    fig = beam_tree(beam_steps(), TOKENS, best=[1, 3, 5, 2])
    live, finished = _points(fig, "live"), _points(fig, "finished (EOS)")
    assert len(live) + len(finished) == 1 + 2 + 3 + 2  # BOS root + every kept hypothesis
    assert [t for *_, t in finished] == ["EOS<br>-2.0", "EOS<br>-0.4", "EOS<br>-1.5"]
    assert (1, 0, "a<br>-0.1") in live and (0, 0, "BOS") in live
    assert (1, 1, "&lt;b&gt;<br>-1.0") in live  # escaped: Plotly reads <b> as HTML
    edges = next(t for t in fig.data if t.name == "extends")
    pairs = {(edges.x[k], edges.y[k], edges.x[k + 1], edges.y[k + 1]) for k in range(0, len(edges.x), 3)}
    assert (1, 1, 2, 1) in pairs  # "b" (rank 1 at step 1) -> "b d" (rank 1 at step 2)
    assert (2, 0, 3, 0) in pairs and len(pairs) == 7
    best = next(t for t in fig.data if t.name == "best hypothesis")
    assert [x for x in best.x if x is not None] == [0, 1, 1, 2, 2, 3]  # root -> a -> c -> EOS


def test_teacher_forcing_table_highlights_mismatches_and_pads():
    styler = teacher_forcing_table(["a", "b", "EOS"], ["a", "c", "EOS"], ["a", "c", "d", "EOS"])
    table = styler.data
    assert list(table["true target"]) == ["a", "b", "EOS", ""]
    assert list(table["free-running prediction"]) == ["a", "c", "d", "EOS"]
    styles = styler._compute().ctx  # (row, col) -> [(property, value)], as pandas renders it
    marked = {pos for pos, props in styles.items() if props}
    assert marked == {(1, 2), (1, 3), (2, 3), (3, 3)}
    assert styles[(1, 2)] == [tuple(MISMATCH.split(": "))]


def test_beam_tree_prints_a_score_that_rounds_to_zero_as_0_0_never_minus_0_0():
    fig = beam_tree([decode_step(0, [Beam([1, 3], -0.001, 0, False), Beam([1, 4], -0.04, 0, False)])], TOKENS)
    assert [t for *_, t in _points(fig, "live")][1:] == ["a<br>0.0", "&lt;b&gt;<br>0.0"]


def test_in_chinese_a_steps_attention_names_its_axis_heads_and_cells_with_the_shipped_catalogue():
    weights = torch.softmax(torch.randn(2, 3), dim=-1)
    fig = step_attention_heatmap(weights, ["a", "b", "c"], "第 1 步", tr=translator("zh-CN"))
    heat = fig.data[0]
    assert fig.layout.xaxis.title.text == "源词元" and list(fig.layout.yaxis.ticktext) == ["头 0", "头 1"]
    assert heat.hovertemplate == "%{customdata[0]} → 源词元 %{customdata[1]}：%{z:.3f}<extra></extra>"


@pytest.mark.parametrize("figure", ["cross", "lens"])
def test_no_tick_mark_stands_between_a_row_label_and_its_first_cell_s_number(figure):
    """A tick mark beside each row touched the first cell's number where it filled the cell: the logit lens's
    "100%" read "-100%" on a phone (Chromium). The rows have none; their labels stand clear of the cells instead,
    inside the left margin."""
    if figure == "cross":
        fig = step_attention_heatmap(torch.full((4, 4), 0.25), list("abcd"), "step 1")
    else:
        fig = logit_lens_heatmap(torch.tensor([[1.0, 0, 0, 0, 0]]), list("abcde"))
    yaxis, numbers = fig.layout.yaxis, fig.data[1]
    assert numbers.x[0] == 0 and yaxis.ticks == ""  # a number in the first column, and no tick mark beside it
    assert yaxis.ticklabelstandoff >= NUMBER_GAP_PX
    assert label_px(yaxis.ticktext) + yaxis.ticklabelstandoff <= fig.layout.margin.l
