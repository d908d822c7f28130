"""A form's key, new each time the page sets its widgets' values.

The browser keeps what was typed into a form's fields but not yet sent, and sends it with the form whatever the page
has set, and shown, since: a student who typed seed 77 on the Train form, then switched the language, saw seed 0 and
trained seed 77. A form drawn under a new key sends what it shows: the unsent values stay behind with the old key.
So a page that sets a form's widgets in session state says so (`values_set`), and draws the form as `form_id` names it.
"""

import streamlit as st

SETS = "form_sets"  # session state: per form, how many times the page has set its widgets' values
WORDED = "worded_forms"  # session state: the forms holding choices worded in the session's language
RUNS = "full_runs"  # session state: the app's whole-page script runs so far (`count_run`; fragments' runs aside)
DRAWN = "forms_drawn"  # session state: per form, the whole-page run that last drew it


def form_id(name: str, worded: bool = True) -> str:
    """The key of the form `name` as drawn now. A `worded` form holds choices worded in the session's language,
    which a language switch sets again (`values_set()`); a form of texts and numbers alone keeps its key then, and
    so what was typed into it."""
    if worded:
        st.session_state.setdefault(WORDED, set()).add(name)
    return f"{name}_{st.session_state.setdefault(SETS, {}).setdefault(name, 0)}"


def values_set(*names: str) -> None:
    """Say that the page has set the values of the widgets of the forms `names`; with none, of every worded form it
    has drawn (a language switch sets their choices again)."""
    sets = st.session_state.setdefault(SETS, {})
    for name in names or st.session_state.get(WORDED, ()):
        sets[name] = sets.get(name, 0) + 1


def count_run() -> None:
    """Count a whole-page script run (the frame calls it first)."""
    st.session_state[RUNS] = st.session_state.get(RUNS, 0) + 1


def drawn_before(name: str) -> bool:
    """Whether the run before this one drew the form `name` too (and so the browser still shows it), and say that
    this one does."""
    runs, drawn = st.session_state.get(RUNS, 0), st.session_state.setdefault(DRAWN, {})
    last, drawn[name] = drawn.get(name), runs
    return last is not None and runs - last <= 1
