"""Figures of a class's board: each group's members' curves overlaid with their median, and the outcome of every
finished run by group. Inputs are what `transformer.classroom.board` computes from a class's snapshot."""

import pandas as pd
import plotly.graph_objects as go

from .training import FONT

GROUP_COLOURS = ("#1f5fbf", "#d9480f", "#2b8a3e", "#862e9c")  # one per group, in the assignment's order
MEMBER_OPACITY = 0.25


def group_curves_figure(curves: dict[str | None, pd.DataFrame], title: str, height: int = 360) -> go.Figure:
    """Every group's members' curves (thin, faint) and their median (thick), one colour per group, against the
    step on a log axis. `curves`: group label -> frame indexed by step, a column per member and "median".

    A group's members are one trace, their curves separated by gaps, so a class of thirty costs four traces, not
    thirty-four (each trace costs plotly a validation pass on every redraw)."""
    traces = []
    for (label, frame), colour in zip(curves.items(), GROUP_COLOURS):
        name = label or "class"
        members = [c for c in frame.columns if c != "median"]
        steps = frame.index.tolist()
        x = [step for _ in members for step in [*steps, None]]
        y = [value for member in members for value in [*frame[member].tolist(), None]]
        line = dict(color=colour, width=1)
        traces.append(dict(type="scatter", x=x, y=y, mode="lines", line=line, opacity=MEMBER_OPACITY, name=name))
        traces[-1] |= dict(legendgroup=name, showlegend=False, hoverinfo="skip", connectgaps=False)
        if members and len(frame):
            median = frame["median"].tolist()
            label_text = f"{name}: median of {len(members)}"
            traces.append(dict(type="scatter", x=steps, y=median, mode="lines", line=dict(color=colour, width=4)))
            traces[-1] |= dict(name=label_text, legendgroup=name)
    layout = dict(
        title=title,
        height=height,
        font=FONT,
        margin=dict(l=10, r=10, t=50, b=10),
        xaxis=dict(title="step"),
        yaxis=dict(title="training loss (log scale)", type="log"),
        legend=dict(orientation="h", yanchor="top", y=-0.2, x=0),  # under the axis: the title keeps the top
    )
    return go.Figure(data=traces, layout=layout)


def outcomes_figure(outcomes: pd.DataFrame, height: int = 300) -> go.Figure:
    """Each finished run as a dot: its group against its steps to solve (filled), or against the steps it trained
    without solving the task (hollow; the legend says which). `outcomes`: columns group, solved, steps, exact_match."""
    figure = go.Figure()
    groups = list(dict.fromkeys(outcomes["group"].tolist()))
    for group, colour in zip(groups, GROUP_COLOURS):
        rows = outcomes[outcomes["group"] == group] if group is not None else outcomes[outcomes["group"].isna()]
        for solved in (True, False):
            part = rows[rows["solved"] == solved]
            if part.empty:
                continue
            figure.add_trace(
                go.Scatter(
                    x=part["steps"].tolist(),
                    y=[group or "class"] * len(part),
                    mode="markers",
                    marker=dict(
                        color=colour, size=14, symbol="circle" if solved else "circle-open", line=dict(width=2)
                    ),
                    name=f"{group or 'class'}: {'solved' if solved else 'not solved'}",
                    customdata=(100 * part["exact_match"]).round(1).tolist(),
                    hovertemplate="%{x} steps, exact match %{customdata}%<extra></extra>",
                )
            )
    figure.update_layout(
        title="Finished runs: steps to solve",
        height=height,
        font=FONT,
        margin=dict(l=10, r=10, t=50, b=10),
        xaxis=dict(title="steps"),
        yaxis=dict(type="category"),
    )
    return figure
