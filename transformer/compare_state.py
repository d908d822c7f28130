"""The Compare page's settings, `CompareState`: a ready-made experiment or a custom one, the experiment they
describe, and their link (read and written through `link_params`, as every page's are)."""

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from .experiments.definitions import CUSTOM, READY, SWITCHES, Experiment, SwitchValue, custom_text, experiment_configs
from .i18n import N_
from .limits import COMPARE_FORM_LIMITS, COMPARE_SIZE_CHOICES, check_train_memory
from .link_params import Parser, choice, read_params, switch_values, whole
from .tasks import TASKS


@dataclass(frozen=True)
class CompareState:
    """The Compare page's settings: a ready-made experiment, or a custom one built from the other fields."""

    experiment: str = next(iter(READY))
    task: str = "reverse"
    length: int = 10  # every input has this many symbols
    d_model: int = 32
    n_heads: int = 4
    n_layers: int = 1
    steps: int = 600
    seed: int = 0
    switch: str = "positional"
    values: tuple[SwitchValue, ...] = ("sinusoidal", "none")


def custom_experiment(state: CompareState) -> Experiment:
    """The experiment the custom settings of `state` describe (d_ff = 4 d_model, the paper's ratio)."""
    if len(state.values) < 2:
        raise ValueError(N_("pick at least two values to compare"))
    lower = N_("the length, d_model, heads or layers")
    sizes = {"d_model": state.d_model, "n_heads": state.n_heads, "n_layers": state.n_layers, "d_ff": 4 * state.d_model}
    lengths = {"min_len": state.length, "max_len": state.length}
    configs = experiment_configs(lower, task=state.task, **lengths, **sizes, steps=state.steps, seed=state.seed)
    title, expectation = custom_text(SWITCHES[state.switch], state.values, state.task)
    experiment = Experiment(CUSTOM, title, expectation, state.switch, tuple(state.values), *configs)
    for value in experiment.values:
        model, data, train = experiment.configs(value)
        check_train_memory(model, train.batch_size, data.max_len, lower)
    return experiment


def experiment_for(state: CompareState) -> Experiment:
    """The ready-made experiment `state` names, or its custom one."""
    return READY[state.experiment] if state.experiment in READY else custom_experiment(state)


def state_for(experiment: Experiment) -> CompareState:
    """Page settings that select `experiment`; a custom one's settings as far as the page offers them."""
    if experiment.key != CUSTOM:
        return CompareState(experiment=experiment.key)
    m, d, switch = experiment.model, experiment.data, SWITCHES[experiment.switch]
    params = {
        "experiment": CUSTOM,
        "task": d.task,
        "length": d.max_len,
        "d_model": m.d_model,
        "n_heads": m.n_heads,
        "n_layers": m.n_layers,
        "steps": experiment.train.steps,
        "seed": experiment.train.seed,
        "switch": switch.field,
        "values": ",".join(map(switch.token, experiment.values)),
    }
    return read_compare(params)[0]


def compare_parsers(switch: str) -> dict[str, Parser]:
    """The Compare page's settings, within the bounds of its widgets; `values` are choices of `switch`."""
    return {
        "experiment": choice([*READY, CUSTOM]),
        "task": choice(list(TASKS)),
        **{name: whole(*bounds) for name, bounds in COMPARE_FORM_LIMITS.items()},
        **{name: choice(options) for name, options in COMPARE_SIZE_CHOICES.items()},
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
    values.setdefault("values", CompareState.values if switch == CompareState.switch else SWITCHES[switch].choices[:2])
    return CompareState(**values), notices


def write_compare(state: CompareState) -> dict[str, str]:
    """The settings that differ from the defaults, as URL query parameters (the experiment always)."""
    default, params = CompareState(), {"experiment": state.experiment}
    for f in fields(CompareState):
        value = getattr(state, f.name)
        if f.name != "experiment" and value != getattr(default, f.name):
            params[f.name] = ",".join(map(SWITCHES[state.switch].token, value)) if f.name == "values" else str(value)
    return params
