"""The app's state in the address bar: each page's settings as URL query parameters, and back, every value checked
against the app's bounds. A bad value falls back to its default with a notice; nothing here ever raises on a link.
"""

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from .experiments.definitions import (
    BASE_DATA,
    BASE_MODEL,
    BASE_TRAIN,
    CUSTOM,
    MAX_VARIANTS,
    READY,
    SWITCHES,
    Experiment,
    SwitchValue,
    custom_text,
)
from .tasks import TASKS

# ------------------------------------------------------------------------------------------------ Compare runs


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


INT_RANGES = {"length": (2, 16), "n_layers": (1, 3), "steps": (50, 2000), "seed": (0, 9999)}
SIZE_CHOICES = {"d_model": (16, 32, 64, 128), "n_heads": (1, 2, 4, 8)}


def custom_experiment(state: CompareState) -> Experiment:
    """The experiment the custom settings of `state` describe (d_ff = 4 d_model, the paper's ratio)."""
    if len(state.values) < 2:
        raise ValueError("pick at least two values to compare")
    switch = SWITCHES[state.switch]
    model = replace(
        BASE_MODEL, d_model=state.d_model, n_heads=state.n_heads, n_layers=state.n_layers, d_ff=4 * state.d_model
    )
    data = replace(BASE_DATA, task=state.task, min_len=state.length, max_len=state.length, seed=state.seed)
    train = replace(BASE_TRAIN, steps=state.steps, seed=state.seed)
    title, expectation = custom_text(switch, state.values, state.task)
    return Experiment(CUSTOM, title, expectation, state.switch, tuple(state.values), model, data, train)


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
    return from_query_params(params)[0]


def to_query_params(state: CompareState) -> dict[str, str]:
    """The settings that differ from the defaults, as URL query parameters (the experiment always)."""
    default, params = CompareState(), {"experiment": state.experiment}
    for f in fields(CompareState):
        value = getattr(state, f.name)
        if f.name != "experiment" and value != getattr(default, f.name):
            params[f.name] = ",".join(map(SWITCHES[state.switch].token, value)) if f.name == "values" else str(value)
    return params


def from_query_params(params: Mapping[str, Any]) -> tuple[CompareState, list[str]]:
    """Settings from URL query parameters, each checked; a bad value falls back to its default, with a notice.

    Never raises: unknown parameters are ignored, and notices never repeat the (possibly hostile) value.
    """
    default, notices, state = CompareState(), [], {}

    def text(name: str) -> str | None:
        value = params.get(name)
        if isinstance(value, (list, tuple)):  # a repeated parameter: the last one counts, as in st.query_params
            value = value[-1] if value else None
        return None if value is None else str(value)[:200]

    def fall_back(name: str, why: str) -> None:
        notices.append(f"The link's `{name}` {why}, so the default ({getattr(default, name)}) is used.")

    for name, allowed in [("experiment", [*READY, CUSTOM]), ("task", list(TASKS)), ("switch", list(SWITCHES))]:
        if (value := text(name)) is not None:
            if value.strip() in allowed:
                state[name] = value.strip()
            else:
                fall_back(name, f"is not one of {', '.join(allowed)}")
    for name, (low, high) in INT_RANGES.items():
        if (value := text(name)) is not None:
            try:
                number = int(value.strip()) if len(value) < 12 else None
            except ValueError:
                number = None
            if number is None:
                fall_back(name, "is not a whole number")
            elif not low <= number <= high:
                state[name] = min(max(number, low), high)
                notices.append(f"The link's `{name}` is outside {low}..{high}, so {state[name]} is used.")
            else:
                state[name] = number
    for name, allowed in SIZE_CHOICES.items():
        if (value := text(name)) is not None:
            if value.strip() in map(str, allowed):
                state[name] = int(value)
            else:
                fall_back(name, f"is not one of {', '.join(map(str, allowed))}")
    switch = SWITCHES[state.get("switch", default.switch)]
    fallback = default.values if switch.field == default.switch else switch.choices[:2]
    if (value := text("values")) is not None:
        try:
            values = tuple(dict.fromkeys(switch.parse(v) for v in value.split(",")))
        except ValueError:
            values = ()
        if 2 <= len(values) <= MAX_VARIANTS:
            state["values"] = values
        else:
            notices.append(
                f"The link's `values` are not 2-{MAX_VARIANTS} different choices of {switch.title} "
                f"({', '.join(map(switch.token, switch.choices))}), so "
                f"{' vs '.join(map(switch.label, fallback))} is used."
            )
    state.setdefault("values", fallback)
    return CompareState(**state), notices
