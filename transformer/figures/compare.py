"""Figures of an experiment: its variants' curves overlaid, one variant's loss with a step marker, each
head's alignment score over training, and the variants' length tests side by side. Metric rows are dicts as
`transformer.training` writes them."""

from collections.abc import Mapping, Sequence

import plotly.graph_objects as go

from ..alignment import shown_score
from ..curves import downsample
from ..i18n import N_, Translator
from ..training import MetricRow
from . import COLUMN_PX, ENGLISH, LEGEND_AT_FOOT, PAGE_PX, TOOLBAR_PX, fit_title, title_layout, top_margin
from .alignment import head_name
from .heatmaps import PANEL_TITLE_LINE_PX, escape_labels, label_px, stacked_panels, subplot_grid
from .lengths import PERCENT_AXIS, length_step, shade_trained
from .palette import SERIES, series_line
from .theme import FONT
from .training import CLEAR_OF_STEP_ZERO, MARKER, line_chart_layout, loss_axis

VARIANT_COLOURS = SERIES  # one per variant, in the experiment's order, each with its dash
PANELS = (  # column, panel title, scale to display
    ("train_loss", N_("training loss (log scale)"), 1),
    ("token_acc", N_("token accuracy (teacher forced)"), 100),
    ("exact_match", N_("exact match (greedy decoding)"), 100),
)
CURVES_MARGIN = dict(l=60, r=20, b=100)  # the bottom one holds the last panel's axis title and the legend
PANEL_GAP = 0.07  # between panels side by side, of the plot's width, at least
PERCENT_ROOM_PX = label_px(["100%"]) + 10  # between panels side by side: the next one's y labels, clear of the curve
TITLE_LINES = 2  # over panels side by side, a title of more lines than this stands them one above the other
STACKED_PANEL_PX = 180  # a panel's height where they stand one above the other


def variant_colour(index: int) -> str:
    return VARIANT_COLOURS[index % len(VARIANT_COLOURS)]


def _mode(rows: Sequence[MetricRow]) -> str:
    return "lines+markers" if len(rows) < 40 else "lines"  # a run's first point shows before there is a line


def comparison_figure(
    histories: Mapping[str, Sequence[MetricRow]], max_points: int = 300, tr: Translator = ENGLISH, fit_px: int = PAGE_PX
) -> go.Figure:
    """Variant label -> metric rows, overlaid in three panels: training loss, teacher-forced token accuracy and
    greedy exact match on held-out data, against the step; one colour per variant. `fit_px`: how wide the chart is
    drawn where it is narrowest. There the panels stand side by side if each one's title fits over it in TITLE_LINES
    lines, with PERCENT_ROOM_PX between two panels for the percentages beside the second; else (a phone) one above
    the other, across the chart, where side by side their titles ran into each other and the labels of one panel
    over the curves of the next."""
    titles = [tr.gettext(title) for _, title, _ in PANELS]
    plot_px = fit_px - CURVES_MARGIN["l"] - CURVES_MARGIN["r"]
    h_gap = max(PANEL_GAP, PERCENT_ROOM_PX / plot_px)
    pitch_px = plot_px * (1 + h_gap) / len(PANELS)  # a panel and the gap beside it: a title has as much
    fitted = [fit_title(title, pitch_px, FONT["size"]) for title in titles]
    if max(title.count("<br>") + 1 for title in fitted) <= TITLE_LINES:
        layout, refs = subplot_grid(fitted, per_row=len(PANELS), h_gap=h_gap)
        lines, height, stepped = TITLE_LINES, 460, refs
    else:
        layout, refs, stacked_px = stacked_panels(titles, STACKED_PANEL_PX, title_px=plot_px)
        lines = 1  # the first title's other lines are in the plot, over its panel (`stacked_panels`)
        height = stacked_px + TOOLBAR_PX + PANEL_TITLE_LINE_PX + 24 + CURVES_MARGIN["b"]
        stepped = refs[-1:]  # one step axis titled, under the last panel: each other title would sit between two
    traces = []
    for i, (label, rows) in enumerate(histories.items()):
        rows = downsample(rows, max_points)
        steps = [row["step"] for row in rows]
        for panel, ((column, _, scale), ref) in enumerate(zip(PANELS, refs)):
            traces.append(
                go.Scatter(
                    x=steps,
                    y=[row[column] * scale for row in rows],
                    name=label,
                    legendgroup=label,
                    showlegend=panel == 0,
                    mode=_mode(rows),
                    line=series_line(i, width=3),
                    hovertemplate=f"{label}: %{{y:.4g}}<extra></extra>",
                    **ref,
                )
            )
    fig = go.Figure(traces, layout)
    loss_y, *percent_ys = (f"yaxis{ref['yaxis'][1:]}" for ref in refs)
    fig.layout[loss_y].update(loss_axis([row["train_loss"] for rows in histories.values() for row in rows]))
    for name in percent_ys:
        fig.layout[name].update(range=[0, 101], ticksuffix="%", **CLEAR_OF_STEP_ZERO)  # "0%" off the steps' "0"
    fig.update_xaxes(rangemode="tozero")
    for ref in stepped:
        fig.layout[f"xaxis{ref['xaxis'][1:]}"].update(title=tr.gettext("training step"))
    fig.update_layout(
        font=FONT,
        height=height,
        margin=dict(CURVES_MARGIN, t=TOOLBAR_PX + PANEL_TITLE_LINE_PX * lines + 24),  # the toolbar, then the titles
        hovermode="x unified",
        legend=LEGEND_AT_FOOT,  # the panels' titles and the toolbar keep the top
    )
    return fig


def loss_marker_figure(
    rows: Sequence[MetricRow],
    step: int,
    label: str,
    colour: str = VARIANT_COLOURS[0],
    max_points: int = 300,
    tr: Translator = ENGLISH,
) -> go.Figure:
    """One variant's training loss (log scale) with a vertical line at `step`: where the timeline is."""
    rows = downsample(rows, max_points)
    fig = go.Figure(
        go.Scatter(
            x=[row["step"] for row in rows],
            y=[row["train_loss"] for row in rows],
            name=label,
            mode=_mode(rows),
            line=dict(color=colour, width=3),
            hovertemplate="%{y:.4g}<extra></extra>",
        )
    )
    marker = tr.gettext("step {step}", step=step)
    fig.add_vline(x=step, line=dict(color=MARKER, dash="dash", width=2), annotation_text=marker)
    fig.update_xaxes(title=tr.gettext("training step"), rangemode="tozero")
    fig.update_yaxes(loss_axis([row["train_loss"] for row in rows], tr.gettext("training loss (log scale)")))
    title = fit_title(tr.gettext("Loss of {variant}", variant=label), COLUMN_PX)  # half the page, on Compare
    fig.update_layout(
        title=title_layout(title),
        font=FONT,
        height=380,
        showlegend=False,
        margin=dict(l=70, r=20, t=top_margin(title), b=60),
    )
    return fig


def alignment_figure(
    steps: Sequence[int],
    scores: Mapping[str, Sequence[float]],
    chance: float,
    step: int | None = None,
    tr: Translator = ENGLISH,
) -> go.Figure:
    """Each head's alignment score (head label -> score per step) over training, with the score of uniform
    attention dashed for reference and an optional marker at `step`."""
    fig = go.Figure()
    names = escape_labels([head_name(label, tr) for label in scores])  # in words, as the heatmaps name heads
    for name, series in zip(names, scores.values()):
        fig.add_trace(
            go.Scatter(
                x=list(steps),
                y=list(series),
                name=name,
                mode="lines+markers",
                customdata=[f"{shown_score(score):.2f}" for score in series],  # as the heatmaps say it
                hovertemplate=f"{name}: %{{customdata}}<extra></extra>",
            )
        )
    fig.add_hline(
        y=chance,
        line=dict(color=MARKER, dash="dot", width=2),
        annotation_text=tr.gettext("uniform attention"),
        annotation_position="bottom right",
    )
    if step is not None:
        fig.add_vline(x=step, line=dict(color=MARKER, dash="dash", width=2))
    fig.update_xaxes(title=tr.gettext("training step"), rangemode="tozero")
    fig.update_yaxes(title=tr.gettext("attention on the ideal source token"), range=[0, 1.02])
    title = fit_title(tr.gettext("Alignment score of each cross-attention head"), COLUMN_PX)
    fig.update_layout(
        title=title_layout(title),
        font=FONT,
        height=460,
        margin=dict(l=70, r=20, t=top_margin(title), b=110),
        hovermode="x unified",
        legend=LEGEND_AT_FOOT,  # the page shows this figure in a narrow column, too narrow for title and legend
    )
    return fig


def length_comparison_figure(
    lengths: Mapping[str, Sequence[Mapping]], tr: Translator = ENGLISH, fit_px: int | None = None
) -> go.Figure:
    """Variant label -> its length test rows ({"length", "trained", "exact_match"}): greedy exact match against the
    input length, one colour per variant, the lengths the variants trained on shaded; its title in lines that fit a
    chart `fit_px` wide, if given."""
    fig = go.Figure()
    for i, (label, rows) in enumerate(lengths.items()):
        fig.add_trace(
            go.Scatter(
                x=[row["length"] for row in rows],
                y=[100 * row["exact_match"] for row in rows],
                name=label,
                mode="lines+markers",
                line=series_line(i, width=3),
                hovertemplate=f"{label}: %{{y:.0f}}%<extra></extra>",
            )
        )
    shade_trained(fig, [row["length"] for rows in lengths.values() for row in rows if row["trained"]], tr)
    n_lengths = len({row["length"] for rows in lengths.values() for row in rows})
    fig.update_xaxes(title=tr.gettext("input length"), dtick=length_step(n_lengths))  # 0-21 ran together on a phone
    fig.update_yaxes(title=tr.gettext("exact match on unseen inputs"), **PERCENT_AXIS)  # clear of the label
    return line_chart_layout(fig, tr.gettext("Length test of each variant's final model"), fit_px=fit_px)
