"""A form's key, new each time the page sets its widgets' values.

The browser keeps what was typed into a form's fields but not yet sent, and sends it with the form whatever the page
has set, and shown, since: a student who typed seed 77 on the Train form, then switched the language, saw seed 0 and
trained seed 77. A form drawn under a new key sends what it shows: the unsent values stay behind with the old key.
So a page that sets a form's widgets in session state says so (`values_set`), and draws the form as `form_id` names it.
"""

import streamlit as st

SETS = "form_sets"  # session state: per form, how many times the page has set its widgets' values


def form_id(name: str) -> str:
    """The key of the form `name` as drawn now."""
    return f"{name}_{st.session_state.setdefault(SETS, {}).setdefault(name, 0)}"


def values_set(*names: str) -> None:
    """Say that the page has set the values of the widgets of the forms `names`; with none, of every form it has
    drawn (a language switch sets every worded choice again)."""
    sets = st.session_state.setdefault(SETS, {})
    for name in names or list(sets):
        sets[name] = sets.get(name, 0) + 1
