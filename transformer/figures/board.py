"""Figures of a class's board: each group's members' curves overlaid with their median, and the outcome of every
finished run by group. Inputs are what `transformer.classroom.board` computes from a class's snapshot."""

from collections.abc import Mapping

import pandas as pd
import plotly.graph_objects as go

from ..classroom.board import GroupCurves
from ..i18n import Translator
from . import ENGLISH, LEGEND_AT_FOOT, title_layout, top_margin
from .training import FONT

GROUP_COLOURS = ("#1f5fbf", "#d9480f", "#2b8a3e", "#862e9c")  # one per group, in the assignment's order
MEMBER_OPACITY = 0.25


def group_curves_figure(
    curves: Mapping[str | None, GroupCurves], title: str, height: int = 440, tr: Translator = ENGLISH
) -> go.Figure:
    """Every group's members' curves (thin, faint) and their median (thick), one colour per group, against the
    step on a log axis. `curves`: group label -> its `GroupCurves` (members by student id, and their median).

    A group's members are one trace, their curves separated by gaps, so a class of thirty costs four traces, not
    thirty-four (each trace costs plotly a validation pass on every redraw). Traces are named by group label and
    grouped in the legend by the group's place, never by a student's name."""
    traces = []
    for place, ((label, curve), colour) in enumerate(zip(curves.items(), GROUP_COLOURS)):
        name, legend_group = tr.gettext("class") if label is None else label, f"group {place}"
        steps = curve.members.index.tolist()
        member_values = curve.members.to_numpy().T.tolist()  # a list per member, in the members' order
        x = [step for _ in member_values for step in [*steps, None]]
        y = [value for values in member_values for value in [*values, None]]
        line = dict(color=colour, width=1)
        traces.append(dict(type="scatter", x=x, y=y, mode="lines", line=line, opacity=MEMBER_OPACITY, name=name))
        traces[-1] |= dict(legendgroup=legend_group, showlegend=False, hoverinfo="skip", connectgaps=False)
        if member_values and steps:
            label_text = tr.gettext("{group}: median of {n}", group=name, n=len(member_values))
            median = curve.median.tolist()
            traces.append(dict(type="scatter", x=steps, y=median, mode="lines", line=dict(color=colour, width=4)))
            traces[-1] |= dict(name=label_text, legendgroup=legend_group)
    layout = dict(
        title=title_layout(title),
        height=height,
        font=FONT,
        margin=dict(l=10, r=10, t=top_margin(title), b=100),
        xaxis=dict(title=tr.gettext("step")),
        yaxis=dict(title=tr.gettext("training loss (log scale)"), type="log"),
        legend=LEGEND_AT_FOOT,  # the title keeps the top
    )
    return go.Figure(data=traces, layout=layout)


def outcomes_figure(outcomes: pd.DataFrame, height: int = 300, tr: Translator = ENGLISH) -> go.Figure:
    """Each finished run as a dot: its group against its steps to solve (filled), or against the steps it trained
    without solving the task (hollow; the legend says which). `outcomes`: columns group, solved, steps, exact_match."""
    figure = go.Figure()
    groups = list(dict.fromkeys(outcomes["group"].tolist()))
    hover = tr.gettext("{steps} steps, exact match {exact_match}%", steps="%{x}", exact_match="%{customdata}")
    for group, colour in zip(groups, GROUP_COLOURS):
        rows = outcomes[outcomes["group"] == group] if group is not None else outcomes[outcomes["group"].isna()]
        for solved in (True, False):
            part = rows[rows["solved"] == solved]
            if part.empty:
                continue
            figure.add_trace(
                go.Scatter(
                    x=part["steps"].tolist(),
                    y=[group or tr.gettext("class")] * len(part),
                    mode="markers",
                    marker=dict(
                        color=colour, size=14, symbol="circle" if solved else "circle-open", line=dict(width=2)
                    ),
                    name=(
                        tr.gettext("{group}: solved", group=group or tr.gettext("class"))
                        if solved
                        else tr.gettext("{group}: not solved", group=group or tr.gettext("class"))
                    ),
                    customdata=(100 * part["exact_match"]).round(1).tolist(),
                    hovertemplate=f"{hover}<extra></extra>",
                )
            )
    title = tr.gettext("Finished runs: steps to solve")
    figure.update_layout(
        title=title_layout(title),
        height=height,
        font=FONT,
        margin=dict(l=10, r=10, t=top_margin(title), b=10),
        xaxis=dict(title=tr.gettext("steps")),
        yaxis=dict(type="category"),
    )
    return figure
