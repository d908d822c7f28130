"""A teacher's assignment: a preset of the Train page's settings, the settings students may still change, and
optionally groups that differ in one setting. Each student gets a group (alternating by join order, so groups stay
balanced) and a seed of their own (distinct within the class), so the class runs one experiment with replicates.

Every value is checked against the Train form's bounds (`TRAIN_FORM_LIMITS`) and every combination is built into
the run's configs before an assignment is accepted.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, NamedTuple, get_args

from ..limits import MAX_GROUPS, MAX_LABEL_CHARS, TRAIN_FORM_LIMITS
from ..live import build_configs
from ..model import ModelConfig, Positional
from ..tasks import TASKS, DataConfig
from ..training import TrainConfig

Value = int | float | bool | str | None  # None only for the settings in AUTO
FLOATS = {"dropout", "lr", "label_smoothing", "ema_decay", "time_budget_s"}
CHOICES: dict[str, tuple[Value, ...]] = {
    "task": tuple(TASKS),
    "positional": get_args(Positional),
    "norm_first": (False, True),
    "causal_mask": (True, False),
    "scale_scores": (True, False),
    "schedule": get_args(TrainConfig.__annotations__["schedule"]),
    "device": ("auto", "cpu", "cuda", "mps"),
}
SETTINGS = (*CHOICES, *TRAIN_FORM_LIMITS)  # every setting of the Train page's form
# Which config each setting goes to (the seed to both the data's and the training's; the model's max_len and
# vocab_size follow from the data).
PARTS = {
    config: tuple(f.name for f in fields(config) if f.name in SETTINGS and f.name not in ("max_len", "vocab_size"))
    for config in (ModelConfig, TrainConfig)
}
PARTS[DataConfig] = tuple(f.name for f in fields(DataConfig) if f.name in SETTINGS)
AUTO = {"lr"}  # settings that may be None: the Train page picks the value (the peak for the model's size)
# The values the Train page's form starts with.
DEFAULTS: dict[str, Value] = {
    **{name: getattr(config(), name) for config, names in PARTS.items() for name in names},
    "min_len": 6,
    "max_len": 8,
    "time_budget_s": 60.0,
    "lr": None,
}


def check_value(name: str, value: Any) -> Value:
    """`value` if it is a valid value of setting `name`, else ValueError saying what it must be."""
    if value is None and name in AUTO:
        return None
    if name in CHOICES:
        if not any(type(value) is type(option) and value == option for option in CHOICES[name]):
            raise ValueError(f"{name} must be one of {', '.join(map(str, CHOICES[name]))}")
        return value
    if name not in TRAIN_FORM_LIMITS:
        raise ValueError(f"{str(name)[:MAX_LABEL_CHARS]!r} is not a setting of the Train page")
    low, high = TRAIN_FORM_LIMITS[name]
    kinds = (int, float) if name in FLOATS else (int,)
    if type(value) not in kinds or not low <= value <= high:  # bool is not int here; NaN fails the bounds
        kind = "a number" if name in FLOATS else "a whole number"
        raise ValueError(f"{name} must be {kind} in {low}..{high}")
    return float(value) if name in FLOATS else value


class Group(NamedTuple):
    """One arm of the class's experiment: a label and its value of the assignment's `setting`, a pair as the
    assignment's JSON writes it."""

    label: str
    value: Value


@dataclass(frozen=True)
class Assignment:
    """The settings a class trains with. `open` names the settings students may change; the rest are locked, and so
    are the seed (each student gets their own) and the setting the groups differ in."""

    preset: Mapping[str, Value] = field(default_factory=dict)
    open: frozenset[str] = frozenset()
    setting: str | None = None  # the one setting the groups differ in
    groups: tuple[Group, ...] = ()

    def __post_init__(self) -> None:
        for name, value in self.preset.items():
            check_value(name, value)
        if unknown := set(self.open) - set(SETTINGS):
            raise ValueError(f"unknown settings: {', '.join(sorted(map(str, unknown)))[:100]}")
        if "seed" in self.open or (self.setting is not None and self.setting in self.open):
            raise ValueError("the seed and the setting the groups differ in cannot be open to students")
        self._check_groups()
        for group in self.groups or (None,):
            run_configs(self.settings(group))

    def _check_groups(self) -> None:
        """ValueError unless there are no groups, or 2..MAX_GROUPS of them with distinct labels and values."""
        if not self.groups and self.setting is None:
            return
        if self.setting not in SETTINGS or self.setting == "seed":
            raise ValueError("groups must differ in one setting of the Train page other than the seed")
        if not 2 <= len(self.groups) <= MAX_GROUPS:
            raise ValueError(f"an assignment has no groups or 2 to {MAX_GROUPS} of them")
        for group in self.groups:
            label = group.label
            if (
                not isinstance(label, str)
                or not label.strip()
                or len(label) > MAX_LABEL_CHARS
                or not label.isprintable()
            ):
                raise ValueError(f"a group's label must be 1 to {MAX_LABEL_CHARS} characters of text on one line")
            check_value(self.setting, group.value)
        if len({g.label.strip() for g in self.groups}) < len(self.groups) or len(
            {(type(g.value), g.value) for g in self.groups}
        ) < len(self.groups):
            raise ValueError("groups need distinct labels and distinct values")

    def group(self, position: int) -> Group | None:
        """The group of the student who joined `position`-th (from 0): groups take turns, so they stay balanced."""
        return self.groups[position % len(self.groups)] if self.groups else None

    def seed(self, position: int) -> int:
        """The seed of the student who joined `position`-th: the preset seed plus the position, wrapped within the
        form's bounds, so seeds are distinct for the first 10,001 students."""
        low, high = TRAIN_FORM_LIMITS["seed"]
        base = self.preset.get("seed", DEFAULTS["seed"])
        return low + (base - low + position) % (high - low + 1)

    def settings(
        self, group: Group | None, seed: int | None = None, changes: Mapping[str, Any] | None = None
    ) -> dict[str, Value]:
        """Every setting of a run in `group` with `seed`: the defaults, the preset, a student's `changes` to open
        settings (ValueError on a locked or bad one), then the group's value and the seed."""
        changes = dict(changes or {})
        if locked := sorted(set(changes) - set(self.open)):
            raise ValueError(f"locked by the teacher: {', '.join(map(str, locked))[:100]}")
        values = {**DEFAULTS, **self.preset, **{name: check_value(name, v) for name, v in changes.items()}}
        if group is not None:
            values[self.setting] = group.value
        return values if seed is None else {**values, "seed": check_value("seed", seed)}

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict, read back by `from_json`."""
        return {
            "preset": dict(self.preset),
            "open": sorted(self.open),
            "setting": self.setting,
            "groups": [[g.label, g.value] for g in self.groups],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Assignment":
        """The assignment `to_json` wrote, checked again."""
        groups = tuple(Group(label, value) for label, value in data.get("groups", ()))
        return cls(dict(data.get("preset", {})), frozenset(data.get("open", ())), data.get("setting"), groups)


def run_configs(settings: Mapping[str, Value]) -> tuple[ModelConfig, DataConfig, TrainConfig]:
    """The configs of a run with these settings (every name in SETTINGS); ValueError with what to change."""
    data, model, train = ({name: settings[name] for name in PARTS[c]} for c in (DataConfig, ModelConfig, TrainConfig))
    return build_configs(data, model, train)
