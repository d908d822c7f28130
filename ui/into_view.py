"""Bring a part of the page into view: the browser keeps a page's scroll position across redraws, so what a press
far down the page starts (a run's progress, drawn at the top) would otherwise stay out of sight."""

from collections.abc import Hashable

import streamlit as st

SHOWN = "into_view_shown"  # session state: {place: the occasion it was last brought into view for}
# Scrolls the page so that this element's top sits at the top of the view, once the redraw has laid out. A fixed
# script, never text from anyone: Streamlit runs it where it is inserted.
SCRIPT = """<div class="into-view"></div><script>
(() => {
  const here = document.currentScript && document.currentScript.closest("[data-testid='stElementContainer']");
  if (here) setTimeout(() => here.scrollIntoView({block: "start", behavior: "instant"}), 50);
})();
</script>"""


def bring_into_view(place: str, occasion: Hashable) -> None:
    """Scroll the page to this point of it, once per `occasion` at each `place` (a run's start, its end)."""
    shown = st.session_state.setdefault(SHOWN, {})
    if shown.get(place) == occasion:
        return
    shown[place] = occasion
    with st.container(key=f"into_view_{place}", height=1, border=False):
        st.html(SCRIPT, unsafe_allow_javascript=True)
