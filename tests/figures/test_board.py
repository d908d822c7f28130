"""The board's figures: each group's members as one faint trace with gaps between them, their median on top, and
every finished run's outcome by group."""

from datetime import datetime

import pandas as pd
import pytest

from transformer.classroom import Assignment, ClassInfo, RunState, Snapshot, Student
from transformer.classroom.assignment import split_groups
from transformer.classroom.board import GroupCurves, group_curves, outcome_table
from transformer.figures import COLUMN_PX, TITLE_INSET_PX, TITLE_SIZE_PX, drawn_px
from transformer.figures.board import ALL_SOLVED, GROUP_COLOURS, SOME_UNSOLVED, group_curves_figure, outcomes_figure
from transformer.figures.palette import SYMBOLS
from transformer.i18n import translator


def curves() -> dict[str | None, GroupCurves]:
    steps = pd.Index([5, 10, 15], name="step")
    pe = pd.DataFrame({1: [2.0, 1.0, 0.5], 3: [2.2, 1.2, 0.6]}, index=steps)
    no_pe = pd.DataFrame({2: [2.1, 2.0, 1.9]}, index=steps)
    return {"PE": GroupCurves(pe, pe.median(axis=1)), "no PE": GroupCurves(no_pe, no_pe.median(axis=1))}


def test_each_group_is_one_member_trace_and_one_median_in_its_own_colour():
    figure = group_curves_figure(curves(), "loss")
    members, median = figure.data[0], figure.data[1]
    assert len(figure.data) == 4  # two groups: members and median each
    assert list(members.x) == [5, 10, 15, None, 5, 10, 15, None]  # two curves, a gap after each
    assert list(members.y) == [2.0, 1.0, 0.5, None, 2.2, 1.2, 0.6, None] and not members.showlegend
    assert list(median.y) == [2.1, 1.1, 0.55] and median.name == "PE: median of 2"
    assert members.line.color == median.line.color == GROUP_COLOURS[0] != figure.data[3].line.color
    assert members.legendgroup == median.legendgroup != figure.data[3].legendgroup
    assert figure.layout.yaxis.type == "log"


def test_runs_of_one_metric_row_each_are_drawn_as_points_on_an_axis_of_whole_steps():
    """A class on a 20-step budget records one row a run: as lines, nothing was drawn, on a step axis of 19.5, 20,
    20.5 and a loss axis without a label."""
    one = pd.DataFrame({1: [2.3], 3: [2.2]}, index=pd.Index([20], name="step"))
    figure = group_curves_figure({"PE": GroupCurves(one, one.median(axis=1))}, "loss")
    assert [trace.mode for trace in figure.data] == ["markers", "markers"]
    assert figure.layout.xaxis.rangemode == "tozero"
    assert {trace.mode for trace in group_curves_figure(curves(), "loss").data} == {"lines"}  # rows enough for lines


@pytest.mark.parametrize("last, label", [(2000, "2000"), (10000, "10k")])
def test_the_step_axis_keeps_room_for_the_label_at_its_end(last, label):
    """Curves to step 2000 end at the plot's right edge, where the label "2000" is centred: in a 10 px margin
    Plotly left it out, and the board's loss chart stopped labelling its steps at 1500."""
    steps = pd.Index([last // 2, last], name="step")
    runs = pd.DataFrame({1: [1.0, 0.1]}, index=steps)
    figure = group_curves_figure({"PE": GroupCurves(runs, runs.median(axis=1))}, "loss")
    assert figure.layout.margin.r >= drawn_px(label, figure.layout.font.size) / 2


def test_an_empty_class_draws_empty_axes():
    when = datetime(2026, 11, 25, 9)
    empty = Snapshot(ClassInfo("amber-otter-7351", "Period 3", when, when, None, None), ())
    figure = group_curves_figure(group_curves(empty), "loss")
    assert [len(trace.x or []) for trace in figure.data] == [0]


def test_students_named_like_the_median_or_like_each_other_draw_a_curve_each_and_leave_the_median_alone():
    names = ["", "student 1", "median", "Median", "ada", "ada"]  # "" a hidden name, once labelled "student 1"
    when = datetime(2026, 11, 25, 9)
    students = tuple(Student(i + 1, name, i, None, i, when) for i, name in enumerate(names))
    runs = {
        s.id: RunState("training", 20, None, ({"step": 10, "train_loss": 1.0 + s.id}, {"step": 20, "train_loss": 0.5}))
        for s in students
    }
    snapshot = Snapshot(ClassInfo("amber-otter-7351", "Period 3", when, when, None, None), students, runs)
    members, median = group_curves_figure(group_curves(snapshot), "loss").data
    assert list(members.x).count(None) == len(names)  # a curve per student, a gap after each
    assert list(members.y) == [v for s in students for v in (1.0 + s.id, 0.5, None)]
    assert list(median.y) == [4.5, 0.5] and median.name == "class: median of 6"


def test_outcomes_are_filled_when_solved_and_hollow_when_not():
    table = pd.DataFrame(
        {
            "group": ["PE", "PE", "no PE"],
            "solved": [True, True, False],
            "steps": [300, 420, 2000],
            "exact_match": [1.0, 1.0, 0.1],
            "timed_out": [False, False, False],
        }
    )
    figure = outcomes_figure(table, ["PE", "no PE"])
    by_name = {trace.name: trace for trace in figure.data}
    assert list(by_name["PE: solved"].x) == [300, 420] and by_name["PE: solved"].marker.symbol == "circle"
    assert (
        list(by_name["no PE: not solved"].x) == [2000] and by_name["no PE: not solved"].marker.symbol == "square-open"
    )
    assert list(by_name["no PE: not solved"].customdata) == [10.0]
    # the title says what the hollow dot at 2000 is, where it would read as solved there; only where there is one
    assert figure.layout.title.text.replace("<br>", " ") == "Finished runs: steps to solve, or hollow where not solved"
    solved = outcomes_figure(table[table["solved"]], ["PE", "no PE"]).layout.title.text
    assert solved.replace("<br>", " ") == "Finished runs: steps to solve"


def test_one_finished_run_is_drawn_on_an_axis_of_steps_from_zero():
    one = {"group": ["PE"], "solved": [True], "steps": [420], "exact_match": [1.0], "timed_out": [False]}
    table = pd.DataFrame(one)
    assert outcomes_figure(table, ["PE"]).layout.xaxis.rangemode == "tozero"  # no axis of half steps around 420


def test_a_run_that_ran_out_of_time_is_its_own_kind_and_groups_read_in_the_figure_s_language():
    when = datetime(2026, 11, 25, 9)
    assignment = Assignment({}, frozenset(), "positional", split_groups("positional"))
    students = tuple(Student(i + 1, f"s{i}", i, assignment.group(i).label, i, when) for i in range(3))
    ended = {"steps": 300, "seconds": 60.0, "exact_match": 0.4, "token_acc": 0.9}
    runs = {
        1: RunState("finished", 300, None, (), {**ended, "exact_match": 1.0, "reason": "solved"}),
        2: RunState("finished", 300, None, (), {**ended, "reason": "time budget"}),
        3: RunState("finished", 600, None, (), {**ended, "steps": 600, "reason": "step budget"}),
    }
    snapshot = Snapshot(ClassInfo("amber-otter-7351", "Period 3", when, when, assignment, None), students, runs)
    figure = outcomes_figure(outcome_table(snapshot), list(group_curves(snapshot)), tr=translator("zh-CN"))
    by_name = {trace.name: trace for trace in figure.data}
    assert set(by_name) == {"正弦位置编码：已解出", "无位置编码：时间用完", "正弦位置编码：未解出"}
    assert by_name["无位置编码：时间用完"].marker.symbol == SYMBOLS[1] + "-open-dot"
    assert list(by_name["无位置编码：时间用完"].y) == ["无位置编码"]
    curves = group_curves_figure(group_curves(snapshot), "loss", tr=translator("zh-CN"))
    assert {trace.name for trace in curves.data} == {"正弦位置编码", "无位置编码"}


def test_each_group_has_one_colour_and_symbol_on_both_charts_whichever_finished_first():
    when = datetime(2026, 11, 25, 9)
    assignment = Assignment({}, frozenset(), "positional", split_groups("positional"))
    students = tuple(Student(i + 1, f"s{i}", i, assignment.group(i).label, i, when) for i in range(2))
    row = {"step": 25, "train_loss": 1.0, "token_acc": 0.5, "exact_match": 0.1}
    ended = {"steps": 300, "seconds": 60.0, "exact_match": 0.4, "token_acc": 0.9, "reason": "step budget"}
    runs = {  # the second group's run has finished; the first group's still trains
        1: RunState("training", 25, None, (row,)),
        2: RunState("finished", 300, None, (row,), ended),
    }
    snapshot = Snapshot(ClassInfo("amber-otter-7351", "Period 3", when, when, assignment, None), students, runs)
    curves = group_curves(snapshot)
    medians = {
        t.legendgroup: t.line.color for t in group_curves_figure(curves, "loss").data if t.showlegend is not False
    }
    (dots,) = outcomes_figure(outcome_table(snapshot), list(curves)).data
    assert dots.marker.color == medians["group 1"] == GROUP_COLOURS[1] and dots.marker.symbol == SYMBOLS[1] + "-open"


def test_the_outcomes_legend_sits_under_the_dots_and_names_even_one_kind():
    table = pd.DataFrame(
        {"group": ["PE"], "solved": [False], "steps": [120], "exact_match": [0.4], "timed_out": [False]}
    )
    figure = outcomes_figure(table, ["PE"])
    assert len(figure.data) == 1 and figure.layout.showlegend  # hollow: "not solved", said even alone
    assert figure.layout.legend.orientation == "h" and figure.layout.legend.yref == "container"  # not beside the plot


@pytest.mark.parametrize("language", ["en", "zh-CN"])
def test_each_board_title_fits_its_column_where_the_column_is_narrowest(language):
    """Drawn at Plotly's title size: 已结束的训练：解出所需步数 on one line is 286 px, wider than the column at 150%
    zoom, where the chart cut a character off each end."""
    tr, when = translator(language), datetime(2026, 11, 25, 9)
    table = outcome_table(Snapshot(ClassInfo("amber-otter-7351", "P", when, when, None, None), ()))
    unsolved = pd.DataFrame(
        {"group": [None], "solved": [False], "steps": [120], "exact_match": [0.4], "timed_out": [False]}
    )
    figures = [
        group_curves_figure(curves(), tr("Training loss by group"), tr=tr),
        outcomes_figure(table, [None], tr=tr),
        outcomes_figure(unsolved, [None], tr=tr),
    ]
    lines = [line for figure in figures for line in figure.layout.title.text.split("<br>")]
    assert max(drawn_px(line, TITLE_SIZE_PX) for line in lines) <= COLUMN_PX - 2 * TITLE_INSET_PX, lines
    assert "".join(lines).replace(" ", "") == "".join(
        [tr("Training loss by group"), tr(ALL_SOLVED), tr(SOME_UNSOLVED)]
    ).replace(" ", "")  # every word kept
    assert not any(line.endswith("解") for line in lines)  # 解出 (solved) whole: "解<br>出所需步数" read as two words
