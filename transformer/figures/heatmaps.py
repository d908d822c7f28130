"""How the figures draw a matrix: arrays in, integer axes named by labels, hover text per cell, subplot grids and
stacked panels, the figure's frame (fonts, title, margins), and the heatmap traces of scores and of signed values.

Inputs are arrays (numpy, nested lists, or torch tensors, read through `as_array`). Matrices are drawn as the paper
and the code index them: rows are queries (or positions, or output features), columns are keys (or dimensions, or
input features), row 0 at the top. Axis labels are tick texts on integer positions, so repeated tokens keep their own
rows.

Each figure is built in one go from plain dicts: Plotly's incremental `add_shape` / `make_subplots` calls cost
seconds on a busy shared server, a single construction milliseconds.
"""

import html
import math
from collections.abc import Callable, Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.colors import get_colorscale, sample_colorscale, unlabel_rgb

from . import drawn_px, fit_title, title_layout, top_margin
from .palette import BLACK, contrast_ratio
from .theme import FONT, colour_bar

DIVERGING_SCALE = "RdBu_r"  # negative blue, zero white, positive red
BUILT_TITLE_SIZE_PX = 18  # the title's font size in every figure `build_figure` makes


def as_array(values) -> np.ndarray:
    """`values` as a float numpy array; a torch tensor is detached and read from its device."""
    if hasattr(values, "detach"):  # a torch tensor
        values = values.detach().cpu().numpy()
    return np.asarray(values, dtype=float)


def escape_labels(labels: Sequence[str]) -> list[str]:
    """Token labels as Plotly text: it reads HTML, so a symbol "<s>" would strike through what follows."""
    return [html.escape(label) for label in labels]


def axis_ticks(labels: Sequence[str]) -> dict:
    """Axis settings that name integer positions 0..n-1 by `labels`."""
    return dict(tickmode="array", tickvals=list(range(len(labels))), ticktext=escape_labels(labels))


UPRIGHT_LABEL_PX = 21  # a tick label turned upright is as wide as its line is tall


def label_px(labels: Sequence[str]) -> float:
    """How wide the widest of `labels` is drawn in FONT, in pixels."""
    return max((drawn_px(label, FONT["size"]) for label in labels), default=0.0)


def hover_grid(row_labels: Sequence[str], col_labels: Sequence[str]) -> np.ndarray:
    """customdata[i][j] = [row label i, column label j], for hover texts."""
    return np.array([[[r, c] for c in escape_labels(col_labels)] for r in escape_labels(row_labels)], dtype=object)


def subplot_grid(
    titles: Sequence[str], per_row: int, h_gap: float = 0.06, v_gap: float = 0.12
) -> tuple[dict, list[dict]]:
    """Layout for one subplot per title, `per_row` to a row: the axes and title annotations, and each
    subplot's trace axis references {"xaxis": "x2", "yaxis": "y2"}."""
    n_cols = min(len(titles), per_row)
    n_rows = -(-len(titles) // n_cols)
    width, height = (1 - h_gap * (n_cols - 1)) / n_cols, (1 - v_gap * (n_rows - 1)) / n_rows
    layout, refs, annotations = {}, [], []
    for i, title in enumerate(titles):
        row, col = divmod(i, n_cols)
        x0, y1 = col * (width + h_gap), 1 - row * (height + v_gap)
        n = "" if i == 0 else str(i + 1)
        layout[f"xaxis{n}"] = dict(domain=[round(x0, 6), min(1.0, round(x0 + width, 6))], anchor=f"y{n}")
        layout[f"yaxis{n}"] = dict(domain=[max(0.0, round(y1 - height, 6)), round(y1, 6)], anchor=f"x{n}")
        annotations.append(
            dict(
                text=title,
                x=x0 + width / 2,
                y=y1,
                xref="paper",
                yref="paper",
                xanchor="center",
                yanchor="bottom",
                showarrow=False,
            )
        )
        refs.append(dict(xaxis=f"x{n}", yaxis=f"y{n}"))
    layout["annotations"] = annotations
    return layout, refs


PANEL_GAP_PX = 110  # between stacked panels: the x tick labels and title of one, the title of the next
PANEL_TITLE_LINE_PX = 24  # a line of a panel's title over it, in the projector's font


def stacked_panels(titles: Sequence[str], panel_px: int, title_px: float | None = None) -> tuple[dict, list[dict], int]:
    """`subplot_grid` with one panel per row, each `panel_px` tall, so titles and axis labels have the full width at any
    screen width: the layout, the trace axis references, and the height of the plot area in pixels. `title_px`: how
    wide a panel is drawn where it is narrowest; each title is then broken into lines that fit it (`fit_title`, in the
    figures' font), and the room above its panel grows by a line for each line past the first."""
    if title_px is not None:
        titles = [fit_title(title, title_px, FONT["size"]) for title in titles]
    above = [PANEL_TITLE_LINE_PX * title.count("<br>") for title in titles]  # the first panel's under the margin
    above[1:] = [PANEL_GAP_PX + px for px in above[1:]]
    plot_px = len(titles) * panel_px + sum(above)
    layout, refs = subplot_grid(titles, per_row=1)
    top = plot_px
    for i, (ref, room) in enumerate(zip(refs, above)):  # panels and gaps of their own heights, top down
        top -= room
        bottom = max(0.0, round((top - panel_px) / plot_px, 6))
        layout[f"yaxis{ref['yaxis'][1:]}"]["domain"] = [bottom, round(top / plot_px, 6)]
        layout["annotations"][i]["y"] = top / plot_px
        top -= panel_px
    return layout, refs, plot_px


def colour_bar_px(tick_labels: Sequence[str]) -> int:
    """The right margin a colour bar beside the plot takes, its title along it: the bar's gap from the plot, its
    padding, the bar, its widest label (`label_px`), and its title, with the room Plotly leaves at the figure's edge
    (measured in Chromium at a phone's width: 100 px in all for labels 0, 0.5 and 1)."""
    return 80 + math.ceil(label_px(tick_labels))


MARGIN = dict(l=60, r=20, t=80, b=50)  # a figure's margins, unless it gives its own
ROW_LABEL_GAP_PX = 16  # between a heatmap's row labels and its cells: their tick marks, or the room they would take


def row_labels_px(labels: Sequence[str], least: int = MARGIN["l"]) -> int:
    """The left margin that holds a heatmap's row `labels` and their gap to the cells: at least `least`."""
    return max(least, math.ceil(label_px(labels)) + ROW_LABEL_GAP_PX)


def build_figure(traces: list[dict], layout: dict, title: str, height: int) -> go.Figure:
    """`traces` on `layout`, every axis in the projector's font, `title` under the toolbar; a title of several lines
    grows the top margin, so the plot keeps `height`."""
    for name, axis in layout.items():  # explicit fonts: Streamlit's chart theme shrinks and greys axis text
        if name.startswith(("xaxis", "yaxis")):
            axis.update(tickfont=FONT, title_font=FONT)
    margin = {**MARGIN, **layout.pop("margin", {})}
    grown = top_margin(title, margin["t"]) - margin["t"]  # a title of several lines: the plot keeps its height
    margin["t"] += grown
    title = title_layout(title, dict(FONT, size=BUILT_TITLE_SIZE_PX))
    return go.Figure(
        data=traces, layout={**layout, "title": title, "font": FONT, "height": height + grown, "margin": margin}
    )


TICKS = ["0%", "50%", "100%"]  # three labels on a score's colour bar: more overlap on a short chart


def whole_percent(value: float) -> str:
    """A score in a heatmap's cell, a whole percent: an integer, so never "-0%"."""
    return f"{round(100 * value)}%"


WHITE = "#ffffff"


# A row of more cells than WIDE_ROW has its numbers at CELL_NUMBER_PX, the smallest a phone's reader is given, unless
# the figure sizes them to its cells (`number_px`). Two neighbours' numbers stay NUMBER_GAP_PX apart, the widest pair
# two-digit percents (WIDEST_NUMBER): a cell of "100%" has blank neighbours, their shares under 0.5%.
WIDE_ROW, CELL_NUMBER_PX, NUMBER_GAP_PX, WIDEST_NUMBER = 8, 12, 4, "88%"


def number_px(n_cells: int, plot_px: float, widest: str = WIDEST_NUMBER) -> int | None:
    """The font size of percents written on a row of `n_cells` cells across `plot_px` pixels, the widest pair of
    neighbours two of `widest`: the page's font where they stay NUMBER_GAP_PX apart, else CELL_NUMBER_PX where they
    do, else None (too narrow for numbers)."""
    for size in (FONT["size"], CELL_NUMBER_PX):
        if drawn_px(widest, size) + NUMBER_GAP_PX <= plot_px / n_cells:
            return size
    return None


def cell_numbers(heatmap: dict, size: float | None = None) -> dict:
    """A text trace that writes a heatmap trace's `text` on its cells (integer axes, its axis references), each in
    black or white, whichever contrasts more with the cell's colour: at least 4.58:1 on any colour. Plotly's own
    choice for a heatmap's text, one colour per trace, left white on mid-tones at 3.1-3.4:1 (WCAG 2.2 asks 4.5:1).
    `size`: the numbers' font size; by default the page's font, CELL_NUMBER_PX in rows of more than WIDE_ROW cells."""
    z, scale, low, high = heatmap["z"], get_colorscale(heatmap["colorscale"]), heatmap["zmin"], heatmap["zmax"]
    rows, cols = np.nonzero(np.array([[bool(t) for t in row] for row in heatmap["text"]]))
    fills = sample_colorscale(scale, list(np.clip((z[rows, cols] - low) / (high - low), 0, 1)))
    hexes = ["#{:02x}{:02x}{:02x}".format(*(round(c) for c in unlabel_rgb(fill))) for fill in fills]
    colours = [max((BLACK, WHITE), key=lambda text: contrast_ratio(text, fill)) for fill in hexes]
    refs = {name: heatmap[name] for name in ("xaxis", "yaxis") if name in heatmap}
    size = size or (FONT["size"] if len(heatmap["text"][0]) <= WIDE_ROW else CELL_NUMBER_PX)
    return dict(
        type="scatter",
        mode="text",
        x=cols,
        y=rows,
        text=[heatmap["text"][r][c] for r, c in zip(rows, cols)],
        textfont=dict(color=colours, size=size),
        hoverinfo="skip",
        showlegend=False,
        **refs,
    )


def score_heatmap(
    z: np.ndarray,
    colorscale: str,
    value_name: str,
    hovertemplate: str,
    numbered: bool,
    cell: Callable[[float], str] = whole_percent,
    size: float | None = None,
    **more,
) -> list[dict]:
    """A heatmap trace of scores in 0..1 (rows x columns) in separated cells, its colour bar titled `value_name` in
    percent (its hover may show a cell's words, %{text}: `cell`'s, blank where there is none); `numbered`: and the
    trace that writes them on the cells (`cell_numbers`), at font `size` where given."""
    heatmap = dict(
        type="heatmap",
        z=z,
        zmin=0,
        zmax=1,
        colorscale=colorscale,
        colorbar=colour_bar(value_name, len=1, tickvals=[0, 0.5, 1], ticktext=TICKS),
        xgap=2,
        ygap=2,
        text=[["" if np.isnan(x) else cell(x) for x in row] for row in z],
        hovertemplate=hovertemplate,
        **more,
    )
    return [heatmap, cell_numbers(heatmap, size)] if numbered else [heatmap]


def diverging_heatmap(a: np.ndarray, bound: float, colorbar: str, hovertemplate: str, **more) -> dict:
    """A heatmap trace of `a` on the diverging scale from -bound to bound, its colour bar titled `colorbar`."""
    return dict(
        type="heatmap",
        z=a,
        zmin=-bound,
        zmax=bound,
        colorscale=DIVERGING_SCALE,
        colorbar=colour_bar(colorbar),
        hovertemplate=hovertemplate,
        **more,
    )
