"""Figures of a class's board: each group's members' curves overlaid with their median, and the outcome of every
finished run by group. Inputs are what `transformer.classroom.board` computes from a class's snapshot."""

from collections.abc import Mapping, Sequence

import pandas as pd
import plotly.graph_objects as go

from ..classroom.board import GroupCurves
from ..i18n import N_, Translator
from . import COLUMN_PX, ENGLISH, LEGEND_AT_FOOT, fit_title, title_layout, top_margin
from .palette import SERIES, SYMBOLS, series_line
from .theme import FONT
from .training import loss_axis

GROUP_COLOURS = SERIES  # one per group, in the assignment's order, each with its dash and marker symbol
MEMBER_OPACITY = 0.25
OUTCOME_KINDS = (  # the finished runs of a group: which rows, the legend's words, the ending of the marker's symbol
    (lambda rows: rows["solved"], N_("{group}: solved"), ""),
    (lambda rows: ~rows["solved"] & ~rows["timed_out"], N_("{group}: not solved"), "-open"),
    (lambda rows: rows["timed_out"], N_("{group}: ran out of time"), "-open-dot"),
)

ALL_SOLVED = N_("Finished runs: steps to solve")
SOME_UNSOLVED = N_("Finished runs: steps to solve, or hollow where not solved")


# The curves end at the plot's right edge, and so does the step label there ("2000"), centred on it: within a 10 px
# margin Plotly left it out, and the axis's end went unlabelled. Half the widest step label Plotly writes ("10k").
LAST_STEP_ROOM_PX = 24


def group_curves_figure(
    curves: Mapping[str | None, GroupCurves], title: str, height: int = 440, tr: Translator = ENGLISH
) -> go.Figure:
    """Every group's members' curves (thin, faint) and their median (thick), one colour per group, against the
    step on a log axis. `curves`: group label -> its `GroupCurves` (members by student id, and their median).

    A group's members are one trace, their curves separated by gaps, so a class of thirty costs four traces, not
    thirty-four (each trace costs plotly a validation pass on every redraw). Traces are named by group label and
    grouped in the legend by the group's place, never by a student's name."""
    traces = []
    for place, (label, curve) in enumerate(curves.items()):
        name, legend_group = tr.gettext("class") if label is None else tr.gettext(label), f"group {place}"
        steps = curve.members.index.tolist()
        mode = "lines" if len(steps) > 1 else "markers"  # one metric row a run (a short budget): a line draws nothing
        member_values = curve.members.to_numpy().T.tolist()  # a list per member, in the members' order
        x = [step for _ in member_values for step in [*steps, None]]
        y = [value for values in member_values for value in [*values, None]]
        line = series_line(place, width=1)
        marker = dict(symbol=SYMBOLS[place], size=10)  # drawn for lone rows: each group's own symbol, as its outcomes'
        traces.append(dict(type="scatter", x=x, y=y, mode=mode, line=line, marker=marker, opacity=MEMBER_OPACITY))
        traces[-1] |= dict(name=name, legendgroup=legend_group, showlegend=False, hoverinfo="skip", connectgaps=False)
        if member_values and steps:
            label_text = tr.gettext("{group}: median of {n}", group=name, n=len(member_values))
            median = curve.median.tolist()
            traces.append(dict(type="scatter", x=steps, y=median, mode=mode, line=series_line(place, width=4)))
            traces[-1] |= dict(marker=dict(marker, size=16), name=label_text, legendgroup=legend_group)
    losses = [value for trace in traces for value in trace["y"] if value is not None]
    title = fit_title(title, COLUMN_PX)
    layout = dict(
        title=title_layout(title),
        height=height,
        font=FONT,
        margin=dict(l=10, r=LAST_STEP_ROOM_PX, t=top_margin(title), b=100),
        xaxis=dict(title=tr.gettext("step"), rangemode="tozero"),  # whole steps, even around a lone row's
        yaxis=loss_axis(losses, tr.gettext("training loss (log scale)")),
        legend=LEGEND_AT_FOOT,  # the title keeps the top
    )
    return go.Figure(data=traces, layout=layout)


def outcomes_figure(
    outcomes: pd.DataFrame, groups: Sequence[str | None], height: int = 440, tr: Translator = ENGLISH
) -> go.Figure:
    """Each finished run as a dot: its group against its steps to solve (filled), against the steps it trained
    without solving the task (hollow), or against the steps it reached when the time budget stopped it (hollow with a
    dot: it ran out of time); the legend says which. `outcomes`: `board.outcome_table`'s columns group, solved,
    steps, exact_match, timed_out; `groups`: every group's label in the assignment's order (`board.group_curves`'
    keys), which gives each its colour and symbol as `group_curves_figure` does, whichever group finished first; a
    group's label is said in `tr`'s language."""
    figure = go.Figure()
    hover = tr.gettext("{steps} steps, exact match {exact_match}%", steps="%{x}", exact_match="%{customdata}")
    for place, (group, colour) in enumerate(zip(groups, GROUP_COLOURS)):
        rows = outcomes[outcomes["group"] == group] if group is not None else outcomes[outcomes["group"].isna()]
        said = tr.gettext("class") if group is None else tr.gettext(group)
        for kind, legend, ending in OUTCOME_KINDS:
            part = rows[kind(rows)]
            if part.empty:
                continue
            figure.add_trace(
                go.Scatter(
                    x=part["steps"].tolist(),
                    y=[said] * len(part),
                    mode="markers",
                    marker=dict(color=colour, size=14, symbol=SYMBOLS[place] + ending, line=dict(width=2)),
                    name=tr.gettext(legend, group=said),
                    customdata=(100 * part["exact_match"]).round(1).tolist(),
                    hovertemplate=f"{hover}<extra></extra>",
                )
            )
    # hollow dots sit at the steps their runs trained: on a projector, unnamed, they read as solved there
    title = ALL_SOLVED if outcomes["solved"].all() else SOME_UNSOLVED
    title = fit_title(tr.gettext(title), COLUMN_PX)
    figure.update_layout(
        title=title_layout(title),
        height=height,
        font=FONT,
        margin=dict(l=10, r=10, t=top_margin(title), b=100),
        xaxis=dict(title=tr.gettext("steps"), rangemode="tozero"),  # from 0: whole steps, and runs on their scale
        yaxis=dict(type="category"),
        legend=LEGEND_AT_FOOT,  # beside the plot it left the dots a sliver of a half-page column
        showlegend=True,  # with one kind of dot too: it says what filled and hollow mean
    )
    return figure
