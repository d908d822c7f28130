"""The lab's one look for its charts, in the app and in a downloaded report alike: the page's typefaces (Chinese in a
Simplified Chinese face, so it is not drawn with Japanese glyph forms), its text colour, a font a projector reads, a
white ground with a light grid, and the colour-blind-safe series colours (`palette.SERIES`).

Figures set their fonts from `FONT`; whoever draws them (`ui/charts.py`, `transformer/report.py`) gives each the
`TEMPLATE`, and Streamlit's own chart theme is turned off, so a chart looks the same on the page and in the report.
"""

import plotly.graph_objects as go

from .palette import LIGHT_GREY, SERIES

Figure = go.Figure  # what every figure function returns, and what the app and the report draw
TEXT = "#111111"  # the app's text colour: `.streamlit/config.toml`, [theme] textColor
PRIMARY = "#1f5fbf"  # its buttons' and focus rings' colour, 6.2:1 on white: [theme] primaryColor
# The edge of a field, a radio button, a checkbox and a slider's track: 3.8:1 on white and 3.3:1 on the sidebar's grey,
# where Streamlit's own is 1.6:1 (WCAG 1.4.11 asks 3:1 of what shows a control is there): [theme] borderColor
OUTLINE = "#7b8494"
# The app's typefaces (`.streamlit/config.toml`, [theme] font; a test keeps the two equal): Latin in Source Sans,
# Chinese in a Simplified Chinese face, whichever the viewer's system has.
FONT_FAMILY = (
    '"Source Sans", "Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "PingFang SC", "Microsoft YaHei"'
)
FONT = dict(size=16, color=TEXT)  # readable on a projector
GRID = "#ebebeb"  # grid lines: seen, never mistaken for data
TOOLBAR_GREY = "#595959"  # the chart toolbar's icons, 7:1 on white (Plotly's own grey is 1.7:1; WCAG 1.4.11)
AXIS = dict(gridcolor=GRID, zerolinecolor=LIGHT_GREY, linecolor=LIGHT_GREY, automargin=True)

TEMPLATE = go.layout.Template(
    layout=dict(
        font=dict(family=f"{FONT_FAMILY}, sans-serif", **FONT),
        colorway=list(SERIES),
        paper_bgcolor="#ffffff",
        plot_bgcolor="#ffffff",
        xaxis=AXIS,
        yaxis=AXIS,
        hoverlabel=dict(font=dict(family=f"{FONT_FAMILY}, sans-serif")),
        modebar=dict(color=TOOLBAR_GREY, activecolor=PRIMARY),
    )
)


def colour_bar(title: str, **more) -> dict:
    """A heatmap's colour bar, its `title` along the bar beside its labels (Plotly's `colorbar` with `more`). Over the
    bar, where Plotly puts it by default, a title sits 5 px above the bar's top, which the top label reaches half a
    line above, and a Chinese title's glyphs reach below the line's baseline: "权重" touched the "1" under it."""
    return dict(title=dict(text=title, side="right"), thickness=14, **more)


def themed(fig: Figure) -> Figure:
    """`fig` with the lab's template (in place: the same figure drawn twice gets the same look)."""
    return fig.update_layout(template=TEMPLATE)
