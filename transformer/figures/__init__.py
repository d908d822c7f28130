"""Plotly figures, built by pure functions (data in, `plotly.graph_objects.Figure` out), one module per topic.

The only part of the package that imports plotly. Every figure speaks the language of the translator it is given
(`tr`, a `transformer.i18n.Translator`; English by default): titles, axes, legends and hover text. Hover templates
are translated whole, with Plotly's own `%{...}` fields passed in as parameters.
"""

import textwrap
import unicodedata

from ..i18n import DEFAULT_LANGUAGE, translator

ENGLISH = translator(DEFAULT_LANGUAGE)  # every figure's default translator

TOOLBAR_PX = 38  # Plotly's toolbar (27 px tall) shows along a chart's top edge on hover, or a tap on a phone
TITLE_LINE_PX = 26  # a line of a title in the projector-sized font
RAISED_PX = 14  # how far Plotly raises a title of several lines above where its top is set


def title_layout(text: str, font: dict | None = None) -> dict:
    """A figure's title, set under the toolbar: on a narrow chart a title reaches the right edge, where the toolbar
    shows."""
    pad = TOOLBAR_PX + (RAISED_PX if "<br>" in text else 0)
    return dict(text=text, y=1, yref="container", yanchor="top", pad=dict(t=pad), **({"font": font} if font else {}))


def top_margin(title: str, least: int = 0) -> int:
    """The top margin that holds the toolbar and every line of `title` above the plot, at least `least` px."""
    lines = title.count("<br>") + 1
    return max(least, TOOLBAR_PX + (RAISED_PX if lines > 1 else 0) + TITLE_LINE_PX * lines + 12)


def wrap_title(title: str, width: int) -> str:
    """A figure title broken into lines of at most `width` characters, for figures shown in narrow columns."""
    return "<br>".join(wrap_lines(title, width))


def wrap_lines(text: str, width: int) -> list[str]:
    """`text` in lines at most `width` Latin characters wide: a Chinese character is as wide as two, and a line of
    them breaks between any two (they have no spaces to break at)."""
    if any(unicodedata.east_asian_width(c) in "WF" for c in text):
        width = max(1, width // 2)
    return textwrap.wrap(text, width)


# A legend at the figure's foot, under the x axis's ticks and title whatever the plot's height (the bottom margin
# holds it): set relative to the plot, a short plot would draw it over the axis title.
LEGEND_AT_FOOT = dict(orientation="h", yref="container", y=0, yanchor="bottom", xanchor="left", x=0)
