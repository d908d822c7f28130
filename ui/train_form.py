"""The Train page's settings form, drawn from the settings' one description (`transformer.settings`): each setting
with a place on the form gets its widget (`setting_widgets.draw_setting`), label, help, bounds, default and the
words of its values from there.

The task is picked above the form (`draw_task`): a widget inside a form changes nothing until the form is
submitted, and choosing a task fills in the task's default run (`settings.default_run`) at once, which the student
may then change. The rest sits in the form (`draw_fields`), which Enter in a field does not submit: only Start does.
Every widget reads its value from its key in session state, written before it is drawn (`_start_values`).

`form_settings` turns the submitted widget values into the settings of a run, for `run_configs`.
"""

from collections.abc import Callable, Mapping
from typing import Any

import streamlit as st

from transformer import settings as spec
from transformer.i18n import N_
from transformer.settings import Value
from transformer.tasks import get_task
from ui.forms import drawn_before, values_set
from ui.language import _
from ui.setting_widgets import draw_setting, setting_value, widget_value

TRAIN_FORM = "train_settings"  # the form's name (`setting_widgets.form_id`)
KEPT = "train_kept"  # session state: the form's values when the student last pressed Start, kept with the run
SHOWN_LOCKED = "train_shown_locked"  # session state: the locked settings the form was last drawn with
ROWS = [  # (expander title or None, column widths): the rows of `FormPlace.row`, top to bottom
    (None, [2, 3]),  # the task, above the form (`draw_task`)
    (None, 4),
    (None, [3, 3, 4]),  # the parts of the design students switch off
    (N_("Model, optimizer, budgets and device"), 3),
]
TASK_ROW = 0  # the row drawn above the form
KEEPS = ("seed",)  # settings a task's default run leaves as the student set them: the seed is the student's own
CHOSEN = N_("Choosing a task fills in its default run; change any setting before you press Start.")
LOCKED = N_("The settings shown greyed out are your teacher's; change any other before you press Start.")
ALL_LOCKED = N_("Your teacher set every setting: press Start when you are ready.")
CLASS_DEFAULTS = N_(
    "Your class trains this task's default run, every setting set for you: press Start when you are ready."
)


def form_key(s: spec.Setting) -> str:
    """The Train form's widget key of setting `s`."""
    return s.form.key


def form_keys() -> list[str]:
    """The widget keys of the form's fields, in drawing order."""
    return [form_key(s) for s in spec.on_form()]


def form_settings(values: Mapping[str, Any]) -> dict[str, Value]:
    """The settings, by name, that the form's widget `values` (by key) hold: a float setting's whole number as a
    float."""
    return {s.name: setting_value(s, values[s.form.key]) for s in spec.on_form()}


def read_form() -> dict[str, Value]:
    """The settings the Train form holds (Start's callback), each widget then set to its setting's value: a choice
    the form sent in the words of another language (`setting_value`) shows as its option."""
    values = form_settings(st.session_state)
    for s in spec.on_form():
        st.session_state[form_key(s)] = widget_value(s, values[s.name])
    return values


def draw_task(locked: Mapping[str, Any] | None = None, by_teacher: bool = True, own_task: bool = False) -> None:
    """The task picker, above the form: choosing a task fills the form with its default run. Call before
    `draw_fields`, outside `st.form`. `by_teacher`: whether a teacher chose the `locked` settings (not the class's
    defaults, before any assignment was saved); `own_task`: a task from examples takes the picked task's place, so
    there is no picker, only what it says of the `locked` settings."""
    locked = locked or {}
    st.session_state[SHOWN_LOCKED] = locked
    _start_values(locked)
    every = locked and all(s.name in locked for s in spec.on_form())
    caption = (ALL_LOCKED if by_teacher else CLASS_DEFAULTS) if every else LOCKED if locked else CHOSEN
    if not own_task:
        task_picker(form_key, _(caption), disabled="task" in locked)
    elif locked:
        st.caption(_(caption))


def task_picker(
    key_of: Callable[[spec.Setting], str],
    caption: str,
    disabled: bool = False,
    saved: Mapping[str, Value] | None = None,
) -> None:
    """The task picker, and beside it what the chosen task is and `caption`, outside any form: choosing a task fills
    the form whose widget keys `key_of` gives with the task's default run, or `saved` settings for their own task
    (`fill_default_run`)."""
    picker, words = st.columns(ROWS[TASK_ROW][1])
    task = spec.setting("task")
    fill = {"on_change": fill_default_run, "args": (key_of, saved)}
    draw_setting(picker, task, key_of(task), disabled=disabled, **fill)
    chosen = get_task(st.session_state[key_of(task)])
    words.caption(_("**{task}**: {description}", task=chosen.name, description=_(chosen.description)))
    words.caption(caption)


def fill_default_run(
    key_of: Callable[[spec.Setting], str] = form_key, saved: Mapping[str, Value] | None = None
) -> None:
    """A task picker's callback (before the page is drawn): the form whose widget keys `key_of` gives (the Train
    form's by default) takes the chosen task's default run, or `saved` (a class's saved settings) when they are of
    that task, but for the settings it KEEPS."""
    task = st.session_state[key_of(spec.setting("task"))]
    run = saved if saved is not None and saved["task"] == task else spec.default_run(task)
    for s in spec.on_form():
        if s.name not in KEEPS:
            st.session_state[key_of(s)] = widget_value(s, run[s.name])
    values_set()


def draw_fields(locked: Mapping[str, Any] | None = None, own_task: bool = False) -> None:
    """Every setting of the form but the task, in its row and column, at the value its key holds (`draw_task` set
    them). A setting named in `locked` (a class's settings) shows that value and cannot be changed; with `own_task`,
    those a task from examples sets from its pairs are left out (their values kept), and the rest of their row moves
    up to the row's first columns. Call inside `st.form`."""
    locked, columns = locked or {}, {}
    hidden = {s.name for s in spec.set_by_pairs()} if own_task else set()
    shown = [s for s in spec.on_form() if s.form.row != TASK_ROW and s.name not in hidden]
    for row, (title, widths) in enumerate(ROWS):
        if row == TASK_ROW:
            continue
        if title is None:
            columns[row] = st.columns(widths)
        else:
            with st.expander(_(title), key=f"train_form_fold_{row}"):
                columns[row] = st.columns(widths)
    for s in shown:
        places = sorted({t.form.column for t in shown if t.form.row == s.form.row})  # the row's columns still in use
        draw_setting(columns[s.form.row][places.index(s.form.column)], s, s.form.key, disabled=s.name in locked)


def remember_values() -> None:
    """Keep the form's values with the run Start made, for the form after a reload of the page (a new session)."""
    st.session_state[KEPT] = {key: st.session_state[key] for key in form_keys()}


def _start_values(locked: Mapping[str, Any]) -> None:
    """Write each form setting's value under its widget key before it is drawn, at every draw: the browser shows a
    widget the value its key holds only when the page writes it, and a widget it draws anew (after a run hid the
    form) would otherwise show its lowest value. The value is the one the key holds (kept across pages by
    `draw_setting`); else the one the run in hand was started with, after a reload (`KEPT`), else its default; a
    setting named in `locked` holds that value. Where the form is drawn anew or a field gets another value than it
    held (a lock), the form takes a new key (`ui.forms`); a redraw that changes nothing keeps it, and with it
    what the student is typing (a run's end redraws the page as they start the next)."""
    state, kept, changed = st.session_state, st.session_state.get(KEPT, {}), not drawn_before(TRAIN_FORM)
    for s in spec.on_form():
        key = s.form.key
        if s.name in locked:
            value = locked[s.name]
        else:
            value = state[key] if key in state else kept.get(key, s.default)
        value = widget_value(s, value)
        changed = changed or key not in state or state[key] != value
        state[key] = value
    if changed:
        values_set(TRAIN_FORM)  # what the browser holds unsent is what it no longer shows
