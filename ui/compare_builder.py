"""The Compare page's custom builder: the switch and values of an experiment of the student's own, and every setting
of the Train form, each drawn by `setting_widgets.draw_setting` from its one description (`transformer.settings`)
and starting from Compare's lesson setup (`lesson_settings`)."""

from dataclasses import replace

import streamlit as st

from transformer import settings as spec
from transformer.compare_state import CompareState, custom_settings
from transformer.experiments import CUSTOM, SWITCHES
from transformer.experiments.definitions import Switch, lesson_settings, task_setup
from transformer.i18n import N_
from transformer.limits import MAX_VARIANTS
from transformer.literal import markdown_literal
from ui.classes import class_task_name, seat_in_class
from ui.language import SELECT_ALL, _, said, worded
from ui.setting_widgets import FOLDED_COLUMNS, OTHER_SETTINGS, draw_setting, setting_value, widget_value

# The settings shown under the switch and its values, a column each: the data, the run, the model.
FIRST = (("task", "min_len", "max_len"), ("steps", "seed"), ("d_model", "n_heads", "n_layers"))
OWN_CLASS_TASK = N_(
    "Your class trains its own task, {task}, which Compare cannot train: its experiments are on the lab's tasks. "
    "Your class run is on the other pages."
)
SAME_SEED = N_(
    "Same seed: same data for every variant, and the same starting weights unless the switch changes the model's "
    "parameters (layers, a learned positional table)."
)


def widget_key(s: spec.Setting) -> str:
    """The builder's widget key of setting `s` (`compare_seed`)."""
    return f"compare_{s.name}"


def builder_keys() -> list[str]:
    """The builder's widget keys: dropped, its widgets start again from the page's settings."""
    return [*(widget_key(s) for s in spec.on_form()), "compare_switch", "compare_values"]


def switch_changed() -> None:
    """A new switch: compare its first two values."""
    switch = SWITCHES[st.session_state["compare_switch"]]
    st.session_state["compare_state"] = replace(
        st.session_state["compare_state"], switch=switch.field, values=switch.choices[:2]
    )
    st.session_state.pop("compare_values", None)  # the multiselect starts again from them


def class_experiment() -> CompareState | None:
    """Where Compare opens for a class student whose class trains a lab task other than the lesson's (whose ready-made
    experiments are on it): a custom experiment on the class's settings (its task, lengths, steps ...), varying the
    setting the groups differ in, with their values, where Compare can switch it; None otherwise."""
    seat = seat_in_class()
    task = None if seat is None else seat.task_name()
    if task is None or task == lesson_settings()["task"]:
        return None
    assignment = seat.assignment
    switch = SWITCHES.get(assignment.setting)
    values = tuple(group.value for group in assignment.groups)[:MAX_VARIANTS]
    if switch is None or not set(values) <= set(switch.choices):
        switch, values = SWITCHES[CompareState.switch], CompareState.values
    return CompareState(CUSTOM, custom_settings(assignment.settings(None), switch.field), switch.field, values)


def own_class_task_notice() -> None:
    """Tell a class student whose class trains its own task (a teacher's file) that Compare's experiments are not on
    it (`class_experiment` opens none for them)."""
    seat = seat_in_class()
    if seat is not None and seat.info.task is not None:
        task = markdown_literal(seat.info.task.name)  # the teacher's file name: literal text
        st.info(_(OWN_CLASS_TASK, task=task), icon=":material/table_view:")


def custom_builder(state: CompareState) -> CompareState:
    """The builder's widgets, starting from `state`; returns the experiment they describe."""
    if new := [s for s in spec.on_form() if widget_key(s) not in st.session_state]:  # drawn anew: from the settings
        first = len(new) == len(spec.on_form()) and "task" not in state.settings  # the builder's first draw
        task = class_task_name() if first else None  # a class student's starts from their class's task
        start = {**(lesson_settings() if task is None else task_setup(task)), **state.settings}
        for s in new:
            st.session_state[widget_key(s)] = widget_value(s, start[s.name])
    with st.container(border=True):
        switch, values = _switch_and_values(state)
        for column, names in zip(st.columns(len(FIRST)), FIRST):
            for name in names:
                _draw(column, spec.setting(name), switch)
        st.caption(_(SAME_SEED))
        with st.expander(_(OTHER_SETTINGS), key="compare_other_settings"):  # the rest, folded below them
            columns = st.columns(FOLDED_COLUMNS)
            drawn = {name for names in FIRST for name in names}
            for index, s in enumerate(s for s in spec.on_form() if s.name not in drawn):
                _draw(columns[index % len(columns)], s, switch)
    chosen = {s.name: setting_value(s, st.session_state[widget_key(s)]) for s in spec.on_form()}
    return CompareState(CUSTOM, custom_settings(chosen, switch.field), switch.field, tuple(values))


def task_changed() -> None:
    """A task picked in the builder: every setting but the seed starts from where an experiment on it does
    (`task_setup`), as the Train form takes a task's default run."""
    setup = task_setup(st.session_state[widget_key(spec.setting("task"))])
    for s in spec.on_form():
        if s.name != "seed":
            st.session_state[widget_key(s)] = widget_value(s, setup[s.name])


def _draw(column, s: spec.Setting, switch: Switch) -> None:
    """Setting `s`'s widget, its help for runs that train every step as Compare's do (`lesson_settings`); the
    switch's own is set per variant, so it is shown but not set."""
    early_stop = lesson_settings()["early_stop"]
    picked = {"on_change": task_changed} if s.name == "task" else {}
    draw_setting(column, s, widget_key(s), disabled=s.name == switch.field, early_stop=early_stop, **picked)


def _switch_and_values(state: CompareState) -> tuple[Switch, list]:
    """The switch to vary and the values to compare, each on a row of its own as wide as the builder. Streamlit's
    multiselect keeps its chosen values on one line, cutting short a value wider than the box and scrolling those past
    its end out of sight: in a third of the builder, two values such as "averaged weights (EMA 0.99)" do not read whole
    on a projector (1280 px); a row holds every value of every switch (`MAX_VARIANTS` at most), in both languages."""
    st.session_state.setdefault("compare_switch", state.switch)
    switch = SWITCHES[
        st.selectbox(
            _("Switch to vary"),
            list(SWITCHES),
            key=worded("compare_switch"),
            on_change=switch_changed,
            format_func=said(lambda s: SWITCHES[s].title),
        )
    ]
    st.session_state.setdefault("compare_values", list(state.values))
    values = st.multiselect(
        _("Values to compare"),
        switch.choices,
        key=worded("compare_values"),
        select_all=SELECT_ALL,
        placeholder=_("Choose options"),
        format_func=said(switch.label),
        max_selections=MAX_VARIANTS,
        help=_("Each value is one variant; they train one after the other."),
    )
    return switch, values
