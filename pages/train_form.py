"""The Train page's settings form, drawn from the settings' one description (`transformer.settings`): each setting
with a place on the form gets its widget, label, help, bounds, default and the words of its values from there.

`form_settings` turns the submitted widget values into the settings of a run, for `run_configs`.
"""

from collections.abc import Mapping
from typing import Any

import streamlit as st

from pages.language import _
from transformer import settings as spec
from transformer.i18n import N_
from transformer.settings import Setting, Value

KEPT = "train_kept"  # session state: the form's values when the student last left the page or pressed Start
ROWS = [  # (expander title or None, column widths): the rows of `FormPlace.row`, top to bottom
    (None, 5),
    (None, [3, 3, 4]),  # the parts of the design students switch off
    (N_("Model, optimizer, budgets and device"), 3),
]


def form_keys() -> list[str]:
    """The widget keys of the form's fields, in drawing order."""
    return [s.form.key for s in spec.on_form()]


def form_settings(values: Mapping[str, Any]) -> dict[str, Value]:
    """The settings, by name, that the form's widget `values` (by key) hold: a float setting's whole number as a
    float."""
    return {s.name: _setting_value(s, values[s.form.key]) for s in spec.on_form()}


def _setting_value(s: Setting, value: Any) -> Value:
    return float(value) if s.kind == "float" and value is not None else value


def draw_fields(locked: Mapping[str, Any] | None = None) -> None:
    """Every setting of the form, in its row and column, each starting from the value it had when the student last
    left the page (Streamlit forgets widget values then), else its default. A setting named in `locked` (a class's
    settings) shows that value and cannot be changed. Call inside `st.form`."""
    kept, locked = st.session_state.get(KEPT, {}), locked or {}
    columns = []
    for title, widths in ROWS:
        if title is None:
            columns.append(st.columns(widths))
        else:
            with st.expander(_(title)):
                columns.append(st.columns(widths))
    for s in spec.on_form():
        place = columns[s.form.row][s.form.column]
        if s.name in locked:
            _draw_locked(place, s, locked[s.name])
        else:
            _draw(place, s, kept.get(s.form.key, s.default))


def remember_values() -> None:
    """Keep the form's values for the student's next visit to the page."""
    st.session_state[KEPT] = {key: st.session_state[key] for key in form_keys()}


def _draw_locked(container, s: Setting, value: Any) -> None:
    """A setting the teacher set: its value, greyed out (set through its key, which a disabled widget keeps)."""
    st.session_state[s.form.key] = value
    _draw(container, s, FROM_STATE, disabled=True)


FROM_STATE = object()  # `_draw`'s value for a widget that reads it from session state


def _draw(container, s: Setting, value: Any, disabled: bool = False) -> None:
    """The setting's widget, starting at `value` (FROM_STATE: at what its key holds in session state; None, for a
    number, empty)."""
    style = {name: _(value) if name == "placeholder" else value for name, value in s.form.style.items()}
    common = {"key": s.form.key, "help": _(s.help), "disabled": disabled, **style}
    if value is FROM_STATE:  # passing a value too would be an error
        start = {}
    elif s.kind in ("int", "float"):  # a whole number when the bounds are: a float setting's whole seconds
        start = {"value": value if value is None else type(s.bounds[0])(value)}
    elif s.kind == "choice" or s.form.radio:
        start = {"index": s.options.index(value)}
    else:
        start = {"value": value}
    label, word = _(s.label), lambda value: _(s.word(value))
    if s.kind in ("int", "float"):
        container.number_input(label, *s.bounds, **start, **common)
    elif s.form.radio:
        container.radio(label, list(s.options), format_func=word, horizontal=True, **start, **common)
    elif s.kind == "choice":
        container.selectbox(label, list(s.options), format_func=word, **start, **common)
    else:
        container.toggle(label, **start, **common)
