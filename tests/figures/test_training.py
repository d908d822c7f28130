"""Training figures: both curves of each chart, against the step, thinned for long runs, with readable axes; the
learning-rate schedule over a run's budget."""

import math

import plotly.graph_objects as go
import pytest

from transformer.figures import COLUMN_PX, LEGEND_SAMPLE_PX, LEGEND_SIZE_PX, drawn_px
from transformer.figures.alignment import best_head_figure
from transformer.figures.summary import plain
from transformer.figures.theme import FONT
from transformer.figures.training import accuracy_figure, loss_figure, lr_figure
from transformer.i18n import Translator, translator
from transformer.training import TrainConfig


def rows(n: int) -> list[dict]:
    return [
        {
            "step": 25 * (i + 1),
            "train_loss": 2.0 / (i + 1),
            "val_loss": 2.5 / (i + 1),
            "token_acc": i / n,
            "exact_match": (i / n) ** 2,
        }
        for i in range(n)
    ]


def test_loss_figure_has_train_and_held_out_curves_on_a_log_axis():
    fig = loss_figure(rows(4))
    assert isinstance(fig, go.Figure)
    train, valid = fig.data
    assert (train.name, valid.name) == ("training loss", "held-out loss")
    assert list(train.x) == [25, 50, 75, 100]
    assert list(valid.y) == pytest.approx([2.5, 1.25, 2.5 / 3, 0.625])
    assert fig.layout.yaxis.type == "log" and "loss" in fig.layout.yaxis.title.text
    assert fig.layout.xaxis.title.text == "training step" and fig.layout.font.size >= 16


def test_loss_figure_draws_the_label_smoothing_floor_only_when_there_is_one():
    assert loss_figure(rows(4)).layout.shapes == () and loss_figure(rows(4)).layout.annotations == ()
    fig = loss_figure(rows(4), train_floor=0.54)
    (line,), (label,) = fig.layout.shapes, fig.layout.annotations
    assert (line.y0, line.y1) == (0.54, 0.54)  # a shape on a log axis takes the value itself...
    assert label.text == "training loss floor" and label.y == pytest.approx(math.log10(0.54))  # ...a label its log


def test_loss_ticks_are_powers_of_ten_only_across_more_than_one():
    assert loss_figure(rows(40)).layout.yaxis.dtick == 1  # 2.0 down to 0.05
    assert loss_figure(rows(2)).layout.yaxis.dtick is None  # 1.0 to 2.5: Plotly's own 1-2-5 ticks


def test_accuracy_figure_in_percent():
    token, exact = accuracy_figure(rows(4)).data
    assert (token.name, exact.name) == ("token accuracy", "exact match (whole sequence)")
    assert list(token.y) == pytest.approx([0, 25, 50, 75])
    assert list(exact.y) == pytest.approx([0, 6.25, 25, 56.25])


@pytest.mark.parametrize("figure", [loss_figure, accuracy_figure])
def test_long_runs_are_thinned_keeping_both_ends(figure):
    fig = figure(rows(2000), max_points=500)
    steps = list(fig.data[0].x)
    assert len(steps) == 500 and steps[0] == 25 and steps[-1] == 25 * 2000
    assert steps == sorted(set(steps))


@pytest.mark.parametrize("figure", [loss_figure, accuracy_figure])
def test_no_rows_gives_empty_curves(figure):
    assert all(len(trace.x) == 0 for trace in figure([]).data)


def test_lr_figure_draws_the_schedule_over_the_budget_and_marks_the_step():
    config = TrainConfig(lr=0.01, warmup=100, schedule="noam", steps=1000)
    fig = lr_figure(config, step=250)
    curve = fig.data[0]
    assert curve.x[0] == 1 and curve.x[-1] <= 1000 and len(curve.x) <= 1000
    assert curve.y[0] == pytest.approx(0.01 / 100)  # warm-up starts at lr / w and rises linearly ...
    assert curve.y[list(curve.x).index(51)] == pytest.approx(0.01 * 51 / 100)
    assert max(curve.y) <= 0.01 and curve.y[list(curve.x).index(101)] == pytest.approx(0.01 * (100 / 101) ** 0.5)
    assert curve.y[-1] == pytest.approx(0.01 * (100 / curve.x[-1]) ** 0.5)  # ... then decays as 1/sqrt(step)
    assert fig.layout.shapes[0].x0 == 250 and fig.layout.annotations[0].text == "step 250"
    # the step's label hangs from the plot's top, over the peak, not on the curve; the two 0s at the origin apart
    label_lines = (fig.layout.font.size * 1.3 + 4) / (fig.layout.height - fig.layout.margin.t - fig.layout.margin.b)
    assert fig.layout.yaxis.range[1] * (1 - label_lines) > max(curve.y)
    assert fig.layout.yaxis.ticklabelstandoff > 0
    flat = lr_figure(TrainConfig(lr=0.01, warmup=0, schedule="constant", steps=50), step=10).data[0]
    assert set(flat.y) == {0.01} and list(flat.x) == list(range(1, 51))


def test_a_figure_reads_in_its_translators_language_with_plotlys_fields_kept():
    chinese = Translator(
        "zh-CN",
        {
            "Loss": "损失",
            "training step": "训练步数",
            "held-out loss": "留出集损失",
            "training loss, every step": "训练损失（每一步）",
            "Learning rate": "学习率",
            "step {step}: {value}": "第 {step} 步：{value}",
        },
    )
    fig = loss_figure(rows(4), step_losses=[1.0, 0.5], tr=chinese)
    assert fig.layout.title.text == "损失" and fig.layout.xaxis.title.text == "训练步数"
    assert [trace.name for trace in fig.data] == ["留出集损失", "训练损失（每一步）"]
    assert fig.layout.yaxis.title.text == "loss (log scale)"  # a sentence the catalogue lacks shows in English
    hover = lr_figure(TrainConfig(steps=100), 10, tr=chinese).data[0].hovertemplate
    assert hover == "第 %{x} 步：%{y:.2e}<extra></extra>"  # translated whole, Plotly's fields filled in after
    assert loss_figure(rows(4)).layout.title.text == "Loss"  # English without a translator


def test_a_loss_within_one_power_of_ten_is_ticked_with_whole_numbers():
    from transformer.figures.training import loss_ticks

    ticks = loss_ticks([0.31, 2.9])  # Plotly's own labels here are the leading digit alone: 3, 2, 1, 9, 8 ...
    shown = [v for v in ticks["tickvals"] if 0.31 <= v <= 2.9]
    assert shown == [0.5, 1.0, 2.0] and ticks["ticktext"] == [f"{v:g}" for v in ticks["tickvals"]]
    assert loss_ticks([0.01, 3.0]) == {"dtick": 1}  # wider: powers of ten


@pytest.mark.parametrize("low", [1e-5, 1e-6, 1e-9, 1e-30])
def test_a_loss_over_many_powers_of_ten_labels_at_most_five_of_them(low):
    """A run that drives its loss to 1e-9 from 10: eleven labels, one a power of ten, ran into each other."""
    from transformer.figures.training import loss_ticks

    step = loss_ticks([low, 10.0])["dtick"]  # Plotly labels 10^0 and every step-th power from it
    labels = [e for e in range(round(math.log10(low)), 2) if e % step == 0]
    assert 2 <= len(labels) <= 5, labels


@pytest.mark.parametrize(
    ("low", "high", "labels"),
    [
        (1.6, 2.6, ["2", "2.5"]),
        (2.0, 2.3, ["2", "2.1", "2.2", "2.3"]),
        (0.3, 3.7, ["0.5", "1", "2"]),
        (1.46, 1.56, ["1.46", "1.48", "1.5", "1.52", "1.54", "1.56"]),  # two groups on a board: "1.5" alone
        (1.501, 1.529, ["1.51", "1.52"]),
    ],
)
def test_a_loss_within_a_narrow_band_gets_at_least_two_labels(low, high, labels):
    """An add run's first steps, its loss between 1.6 and 2.6: the 1-2-5 ticks put one label on the axis, "2"; and
    from 3.7 down to 0.3, powers of ten put one there, "1"."""
    from transformer.figures.training import loss_ticks

    ticks = loss_ticks([low, high])
    assert [text for v, text in zip(ticks["tickvals"], ticks["ticktext"]) if low <= v <= high] == labels


@pytest.mark.parametrize("figure", ["accuracy", "best head"])
def test_a_report_chart_s_lowest_y_label_stays_clear_of_the_step_axis_s_zero(figure):
    """The lab report's accuracy and best-head charts start both axes at 0: the y axis's "0%" (or "0") is drawn level
    with the step axis's "0", which is centred on the y axis, and on a phone the two met at the origin. The y labels
    stand off the axis by more than half that "0" (no tick marks: `theme.AXIS`), leaving at least 4 px between."""
    if figure == "accuracy":
        fig = accuracy_figure(rows(4))
    else:
        fig = best_head_figure([0, 25, 50], [("L0 H0", 0.2), ("L0 H1", 0.6), ("L0 H1", 0.7)], chance=0.2, threshold=0.9)
    assert fig.layout.xaxis.rangemode == "tozero" and fig.layout.yaxis.range[0] == 0  # both start at 0
    assert fig.layout.yaxis.ticks in (None, "")  # the labels' stand-off is all there is between them and the axis
    assert (fig.layout.yaxis.ticklabelstandoff or 0) - drawn_px("0", FONT["size"]) / 2 >= 4


@pytest.mark.parametrize("language", ["en", "zh-CN"])
def test_in_a_half_page_column_every_legend_name_fits_beside_its_line_sample(language):
    """A run past 500 steps names its training curve "training loss, mean of every 3 steps": drawn in a half-page
    column at 150% zoom it ran past the chart's right edge, cut after "every". Each line of a name now fits."""
    tr = translator(language)
    loss = loss_figure(rows(48), step_losses=[1 / (i + 1) for i in range(1_200)], tr=tr, fit_px=COLUMN_PX)
    accuracy = accuracy_figure(rows(48), tr=tr, fit_px=COLUMN_PX)
    names = [trace.name for fig in (loss, accuracy) for trace in fig.data]
    assert tr.gettext("training loss, mean of every {per} steps", per=3) in [plain(name) for name in names]
    lines = [line for name in names for line in name.split("<br>")]
    assert len(lines) > len(names) or language != "en"  # an English name was broken; the Chinese ones fit whole
    assert max(drawn_px(line, LEGEND_SIZE_PX) for line in lines) <= COLUMN_PX - LEGEND_SAMPLE_PX
    unfitted = loss_figure(rows(48), step_losses=[1 / (i + 1) for i in range(1_200)], tr=tr)
    assert all("<br>" not in trace.name for trace in unfitted.data)  # a full-width chart keeps a name on one line
