"""The Compare page's settings, `CompareState`: a ready-made experiment or a custom one, the experiment they
describe, and their link (read and written through `link_params`, as every page's are).

A custom experiment takes every setting of the Train form from the settings' one description (`settings`): its
bounds there, its start in Compare's lesson setup (`lesson_settings`), and each variant is built by `run_configs`."""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from . import settings as spec
from .experiments.definitions import (
    CUSTOM,
    READY,
    SWITCHES,
    Experiment,
    SwitchValue,
    custom_text,
    experiment_configs,
    lesson_settings,
)
from .i18n import N_, Message, joined
from .link_params import Parser, choice, read_params, setting_param, setting_token, switch_values


@dataclass(frozen=True)
class CompareState:
    """The Compare page's settings: a ready-made experiment, or a custom one built from the other fields."""

    experiment: str = next(iter(READY))
    # the Train form's settings, by name, where a custom experiment's differ from the lesson setup, but the switch's
    settings: Mapping[str, spec.Value] = field(default_factory=dict)
    switch: str = "positional"
    values: tuple[SwitchValue, ...] = ("sinusoidal", "none")


def custom_settings(chosen: Mapping[str, spec.Value], switch: str) -> dict[str, spec.Value]:
    """The settings of `chosen` (by name) that a custom experiment keeps: those that differ from the lesson setup,
    but the `switch`'s own, which each variant sets."""
    lesson = lesson_settings()
    return {name: value for name, value in chosen.items() if name != switch and value != lesson[name]}


def custom_experiment(state: CompareState) -> Experiment:
    """The experiment the custom settings of `state` describe; ValueError, saying what to change, if a variant's
    settings do not fit together or within a run's bounds and memory (each variant is built by `run_configs`)."""
    if len(state.values) < 2:
        raise ValueError(N_("pick at least two values to compare"))
    variants = [experiment_configs(**{**state.settings, state.switch: value}) for value in state.values]
    title, expectation = custom_text(SWITCHES[state.switch], state.values, variants[0][1].task)
    return Experiment(CUSTOM, title, expectation, state.switch, tuple(state.values), tuple(variants))


def experiment_for(state: CompareState) -> Experiment:
    """The ready-made experiment `state` names, or its custom one."""
    return READY[state.experiment] if state.experiment in READY else custom_experiment(state)


def state_for(experiment: Experiment) -> CompareState:
    """Page settings that select `experiment`; a custom one's settings as far as the page offers them."""
    if experiment.key != CUSTOM:
        return CompareState(experiment=experiment.key)
    configs = {"model": experiment.model, "data": experiment.data, "train": experiment.train}
    switch = SWITCHES[experiment.switch]
    params = {
        "experiment": CUSTOM,
        **{s.name: setting_token(getattr(configs[s.configs[0]], s.name)) for s in spec.on_form()},
        "switch": switch.field,
        "values": ",".join(map(switch.token, experiment.values)),
    }
    return read_compare(params)[0]


def compare_parsers(switch: str) -> dict[str, Parser]:
    """The Compare page's settings: the Train form's within their bounds; `values` are choices of `switch`."""
    return {
        "experiment": choice([*READY, CUSTOM]),
        **{s.name: setting_param(s) for s in spec.on_form()},
        "switch": choice(list(SWITCHES)),
        "values": switch_values(SWITCHES[switch]),
    }


def read_compare(params: Mapping[str, Any]) -> tuple[CompareState, list[str]]:
    """The Compare page's settings from a link, read by `read_params` as every page's are: a bad value is left out
    with a notice and its default stands. The values are read as choices of the link's switch (the default switch
    when the link names none, or a bad one); without them, the default values of the default switch, or the first
    two choices of another."""
    switch = read_params(params, {"switch": choice(list(SWITCHES))})[0].get("switch", CompareState.switch)
    values, notices = read_params(params, compare_parsers(switch))
    experiment = values.get("experiment", CompareState.experiment)
    if experiment in READY:  # a ready-made experiment has its own settings: the link's others are said, then dropped
        if ignored := sorted(set(values) - {"experiment"}):
            notice = N_(
                "The link's {names} only set a custom experiment, so the ready-made experiment “{experiment}”"
                " opens with its own settings."
            )
            notices.append(
                Message(notice, names=joined(ignored, N_(", ")), experiment=Message(READY[experiment].title))
            )
        return CompareState(experiment=experiment), notices
    chosen = {s.name: values.pop(s.name) for s in spec.on_form() if s.name in values}
    values.setdefault("values", CompareState.values if switch == CompareState.switch else SWITCHES[switch].choices[:2])
    return CompareState(**values, settings=custom_settings(chosen, switch)), notices


def write_compare(state: CompareState) -> dict[str, str]:
    """The settings that differ from the defaults, as URL query parameters (the experiment always); a ready-made
    experiment's, its name alone."""
    if state.experiment in READY:
        return {"experiment": state.experiment}
    params = {"experiment": state.experiment, **{name: setting_token(v) for name, v in state.settings.items()}}
    if state.switch != CompareState.switch:
        params["switch"] = state.switch
    if state.values != CompareState.values:
        params["values"] = ",".join(map(SWITCHES[state.switch].token, state.values))
    return params
