"""The board's figures: each group's members as one faint trace with gaps between them, their median on top, and
every finished run's outcome by group."""

import pandas as pd

from transformer.figures.board import GROUP_COLOURS, group_curves_figure, outcomes_figure


def curves() -> dict[str | None, pd.DataFrame]:
    steps = pd.Index([5, 10, 15], name="step")
    pe = pd.DataFrame({"ada": [2.0, 1.0, 0.5], "bob": [2.2, 1.2, 0.6]}, index=steps)
    no_pe = pd.DataFrame({"cy": [2.1, 2.0, 1.9]}, index=steps)
    return {"PE": pe.assign(median=pe.median(axis=1)), "no PE": no_pe.assign(median=no_pe.median(axis=1))}


def test_each_group_is_one_member_trace_and_one_median_in_its_own_colour():
    figure = group_curves_figure(curves(), "loss")
    members, median = figure.data[0], figure.data[1]
    assert len(figure.data) == 4  # two groups: members and median each
    assert list(members.x) == [5, 10, 15, None, 5, 10, 15, None]  # two curves, a gap after each
    assert list(members.y) == [2.0, 1.0, 0.5, None, 2.2, 1.2, 0.6, None] and not members.showlegend
    assert list(median.y) == [2.1, 1.1, 0.55] and median.name == "PE: median of 2"
    assert members.line.color == median.line.color == GROUP_COLOURS[0] != figure.data[3].line.color
    assert figure.layout.yaxis.type == "log"


def test_an_empty_class_draws_empty_axes():
    figure = group_curves_figure({None: pd.DataFrame({"median": []})}, "loss")
    assert [len(trace.x or []) for trace in figure.data] == [0]


def test_outcomes_are_filled_when_solved_and_hollow_when_not():
    table = pd.DataFrame(
        {
            "group": ["PE", "PE", "no PE"],
            "solved": [True, True, False],
            "steps": [300, 420, 2000],
            "exact_match": [1.0, 1.0, 0.1],
        }
    )
    figure = outcomes_figure(table)
    by_name = {trace.name: trace for trace in figure.data}
    assert list(by_name["PE: solved"].x) == [300, 420] and by_name["PE: solved"].marker.symbol == "circle"
    assert (
        list(by_name["no PE: not solved"].x) == [2000] and by_name["no PE: not solved"].marker.symbol == "circle-open"
    )
    assert list(by_name["no PE: not solved"].customdata) == [10.0]
