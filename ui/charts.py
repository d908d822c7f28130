"""Every chart of the lab drawn one way: `st.plotly_chart` with its text alternative, in the session's language, for
screen readers (WCAG 1.1.1), and in the lab's look (`transformer.figures.theme`), the report's too, in place of
Streamlit's chart theme. The text is read off the figure (`transformer.figures.summary.describe`).

    from ui.charts import chart
    chart(st, lr_figure(config, step, tr=tr), key="train_lr_chart")
    chart(loss_col, loss_figure(rows, tr=tr), key="train_loss_chart")
"""

from types import ModuleType
from typing import Any

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from transformer.figures import PAGE_PX, PHONE_CHART_PX
from transformer.figures.summary import describe
from transformer.figures.theme import Figure, themed
from transformer.i18n import DEFAULT_LANGUAGE, N_
from ui.language import _, language, session_translator

# The words of a chart's toolbar that Plotly writes (its buttons' tooltips), in English unless told a locale's: the
# session's, through Plotly's own `locale` and `locales` settings.
PLOTLY_WORDS = (
    N_("Download plot as a PNG"),
    N_("Zoom"),
    N_("Pan"),
    N_("Box Select"),
    N_("Lasso Select"),
    N_("Reset axes"),
    N_("Reset view"),
    N_("Toggle Spike Lines"),
    N_("Show closest data on hover"),
    N_("Compare data on hover"),
    N_("Double-click to zoom back out"),
)


def plotly_locale() -> dict[str, Any]:
    """Plotly's settings that word a chart's toolbar in the session's language: none in English."""
    code = language()
    if code == DEFAULT_LANGUAGE:
        return {}
    return {"locale": code, "locales": {code: {"dictionary": {word: _(word) for word in PLOTLY_WORDS}}}}


# Buttons a chart's toolbar leaves out: zoom in, zoom out and autoscale repeat a drag's zoom and the reset, and each
# button is a Tab stop (Train's charts made 32 stops in a row, Decoding's 24).
REPEATED_BUTTONS = ["zoomIn2d", "zoomOut2d", "autoScale2d"]


def chart(where: DeltaGenerator | ModuleType, fig: Figure, key: str, **options: Any) -> None:
    """Draw `fig` under `key` in `where` (`st` itself, or a column or container), with the figure's description as
    its accessible name and its toolbar in the session's language. `options`: more of `st.plotly_chart`'s (config,
    ...). On a phone a finger's drag over a chart scrolls the page (Plotly's default drag zooms it, so a chart across
    the screen stopped the page from scrolling), and no toolbar crowds the title."""
    config = {**plotly_locale(), "modeBarButtonsToRemove": REPEATED_BUTTONS, **options.pop("config", {})}
    alt = describe(fig, session_translator())
    if on_phone():
        fig = Figure(fig).update_layout(dragmode=False)  # a copy: the figure may be another session's too
        config["displayModeBar"] = False
    where.plotly_chart(themed(fig), key=key, alt=alt, theme=None, config=config, **options)


# An expander's border and padding take this much off the width of a chart in it, measured in Chromium (a chart in one
# across the page: 464.3 px of 500.3 at 150% zoom, 320 of 356 on a phone)
EXPANDER_INSET_PX = 36


def narrowest_chart_px(laptop_px: int = PAGE_PX) -> int:
    """How wide a chart is where it is narrowest, for a figure that fits its labels to it (`fit_px`): PHONE_CHART_PX
    where the page's browser is a phone's (`on_phone`; there columns stack), else `laptop_px`, its width on a 1280 px
    screen at 150% zoom with the sidebar open: PAGE_PX across the page, less in a column."""
    return PHONE_CHART_PX if on_phone() else laptop_px


def on_phone() -> bool:
    """Whether the page's browser is a phone's: its user agent says "Mobi", as a phone's browsers do, and as Streamlit
    reads it to fold the sidebar."""
    return "Mobi" in (st.context.headers.get("User-Agent") or "")
