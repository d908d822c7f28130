"""The Compare page's custom builder: the task, sizes, switch and values of an experiment of the student's own."""

from dataclasses import replace

import streamlit as st

from transformer.compare_state import CompareState
from transformer.experiments import CUSTOM, SWITCHES
from transformer.experiments.definitions import Switch
from transformer.limits import COMPARE_FORM_LIMITS, COMPARE_SIZE_CHOICES, MAX_VARIANTS
from transformer.tasks import TASKS
from ui.language import _, said

CUSTOM_WIDGETS = {  # CompareState field -> widget key of the custom builder
    "task": "compare_task",
    "length": "compare_length",
    "d_model": "compare_d_model",
    "n_heads": "compare_n_heads",
    "n_layers": "compare_n_layers",
    "steps": "compare_steps",
    "seed": "compare_seed",
    "switch": "compare_switch",
    "values": "compare_values",
}


def switch_changed() -> None:
    """A new switch: compare its first two values."""
    switch = SWITCHES[st.session_state["compare_switch"]]
    st.session_state["compare_state"] = replace(
        st.session_state["compare_state"], switch=switch.field, values=switch.choices[:2]
    )
    st.session_state.pop("compare_values", None)  # the multiselect starts again from them


def custom_builder(state: CompareState) -> CompareState:
    """The builder's widgets, starting from `state`; returns the experiment they describe."""
    with st.container(border=True):
        task_col, size_col, switch_col = st.columns(3)
        switch, values = _switch_and_values(switch_col, state)
        tasks = list(TASKS)
        return CompareState(
            experiment=CUSTOM,
            task=task_col.selectbox(
                _("Task"),
                tasks,
                tasks.index(state.task),
                key="compare_task",
                format_func=lambda t: f"{t}: {_(TASKS[t].description)}",
            ),
            length=task_col.number_input(
                _("Input length"),
                *COMPARE_FORM_LIMITS["length"],
                state.length,
                key="compare_length",
                help=_("Every input has this many symbols."),
            ),
            steps=task_col.number_input(
                _("Steps per variant"),
                *COMPARE_FORM_LIMITS["steps"],
                state.steps,
                step=50,
                key="compare_steps",
                help=_("Every variant trains exactly this many steps (no early stopping)."),
            ),
            seed=task_col.number_input(
                _("Seed"),
                *COMPARE_FORM_LIMITS["seed"],
                state.seed,
                key="compare_seed",
                help=_(
                    "Same seed: same data for every variant, and the same starting weights unless the switch changes "
                    "the model's parameters (layers, a learned positional table)."
                ),
            ),
            **_sizes(size_col, state, switch),
            switch=switch.field,
            values=tuple(values),
        )


def _switch_and_values(switch_col, state: CompareState) -> tuple[Switch, list]:
    """The switch to vary and the values to compare, in the builder's third column."""
    switch = SWITCHES[
        switch_col.selectbox(
            _("Switch to vary"),
            list(SWITCHES),
            list(SWITCHES).index(state.switch),
            key="compare_switch",
            on_change=switch_changed,
            format_func=said(lambda s: SWITCHES[s].title),
        )
    ]
    values = switch_col.multiselect(
        _("Values to compare"),
        switch.choices,
        list(state.values),
        key="compare_values",
        placeholder=_("Choose options"),
        format_func=said(switch.label),
        max_selections=MAX_VARIANTS,
        help=_("Each value is one variant; they train one after the other."),
    )
    return switch, values


def _sizes(size_col, state: CompareState, switch: Switch) -> dict:
    """d_model, heads and layers, in the builder's middle column; the switch, when it is one of them, sets it."""
    return dict(
        d_model=size_col.selectbox(
            "d_model",
            COMPARE_SIZE_CHOICES["d_model"],
            COMPARE_SIZE_CHOICES["d_model"].index(state.d_model),
            key="compare_d_model",
        ),
        n_heads=size_col.selectbox(
            _("Heads"),
            COMPARE_SIZE_CHOICES["n_heads"],
            COMPARE_SIZE_CHOICES["n_heads"].index(state.n_heads),
            key="compare_n_heads",
            disabled=switch.field == "n_heads",
            help=_("Set per variant when it is the switch."),
        ),
        n_layers=size_col.number_input(
            _("Layers per stack"),
            *COMPARE_FORM_LIMITS["n_layers"],
            state.n_layers,
            key="compare_n_layers",
            disabled=switch.field == "n_layers",
            help=_("Set per variant when it is the switch."),
        ),
    )
