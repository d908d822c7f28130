"""Figures in a file that needs nothing outside itself (the lab report): plotly.js's source, the lab's template once,
and each figure's data and layout without it, as JSON that is safe inside a `<script>` element (Plotly escapes `<`)."""

from plotly.io.json import to_json_plotly
from plotly.offline import get_plotlyjs

from .theme import TEMPLATE, Figure

DEFAULT_HEIGHT_PX = 450  # Plotly's height of a figure that sets none


def plotly_js() -> str:
    """plotly.js, the version this Plotly draws with."""
    return get_plotlyjs()


def template_json() -> str:
    """The lab's template (`theme.TEMPLATE`), written once per file and given to each figure as it is drawn."""
    return to_json_plotly(TEMPLATE.to_plotly_json())


def figure_json(fig: Figure) -> tuple[str, int]:
    """`fig`'s data and layout without its template, as JSON, and its height in pixels."""
    plotted = fig.to_plotly_json()
    layout = {k: v for k, v in plotted["layout"].items() if k != "template"}
    return to_json_plotly({"data": plotted["data"], "layout": layout}), int(layout.get("height") or DEFAULT_HEIGHT_PX)
