"""A teacher's assignment: a preset of the Train page's settings, the settings students may still change, and
optionally groups that differ in one setting. Each student gets a group (alternating by join order, so groups stay
balanced) and a seed of their own (distinct within the class), so the class runs one experiment with replicates.

Every value is checked by its setting (`settings.Setting.check`: the Train form's bounds) and every combination is
built into the run's configs (`run_configs`) before an assignment is accepted.
"""

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .. import settings as spec
from ..i18n import N_, Message
from ..limits import MAX_GROUPS, MAX_LABEL_CHARS, MAX_STUDENTS
from ..run_configs import run_configs
from ..settings import Value


def form_names() -> list[str]:
    """The names of the Train form's settings: those an assignment may preset, lock or open."""
    return [s.name for s in spec.on_form()]


def check_value(name: str, value: Any) -> Value:
    """`value` if it is a valid value of the Train form's setting `name`, else ValueError saying what it must be."""
    if name not in form_names():
        shown = repr(str(name)[:MAX_LABEL_CHARS])
        raise ValueError(Message(N_("{name} is not a setting of the Train page"), name=shown))
    return spec.setting(name).check(value)


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
        if unknown := set(self.open) - set(form_names()):
            raise ValueError(Message(N_("unknown settings: {names}"), names=", ".join(sorted(map(str, unknown)))[:100]))
        if "seed" in self.open or (self.setting is not None and self.setting in self.open):
            raise ValueError(N_("the seed and the setting the groups differ in cannot be open to students"))
        self._check_groups()
        for group in self.groups or (None,):
            run_configs(self.settings(group))

    def _check_groups(self) -> None:
        """ValueError unless there are no groups, or 2..MAX_GROUPS of them with distinct labels and values."""
        if not self.groups and self.setting is None:
            return
        if self.setting not in form_names() or self.setting == "seed":
            raise ValueError(N_("groups must differ in one setting of the Train page other than the seed"))
        if not 2 <= len(self.groups) <= MAX_GROUPS:
            raise ValueError(Message(N_("an assignment has no groups or 2 to {most} of them"), most=MAX_GROUPS))
        for group in self.groups:
            label = group.label
            if (
                not isinstance(label, str)
                or not label.strip()
                or len(label) > MAX_LABEL_CHARS
                or not label.isprintable()
            ):
                label_rule = N_("a group's label must be 1 to {most} characters of text on one line")
                raise ValueError(Message(label_rule, most=MAX_LABEL_CHARS))
            check_value(self.setting, group.value)
        if len({g.label.strip() for g in self.groups}) < len(self.groups) or len(
            {(type(g.value), g.value) for g in self.groups}
        ) < len(self.groups):
            raise ValueError(N_("groups need distinct labels and distinct values"))

    def group(self, position: int) -> Group | None:
        """The group of the student who joined `position`-th (from 0): groups take turns, so they stay balanced."""
        return self.groups[position % len(self.groups)] if self.groups else None

    def seed(self, position: int, offset: int = 0) -> int:
        """The seed of the student who joined `position`-th: the preset seed plus `offset` (the class's own,
        `class_seed_offset`) plus the position, wrapped within the form's bounds, so seeds are distinct for the first
        10,001 students."""
        seed = spec.setting("seed")
        low, high = seed.bounds
        base = self.preset.get("seed", seed.default)
        return low + (base - low + offset + position) % (high - low + 1)

    def trains_as(self, other: "Assignment") -> bool:
        """Whether a student's run under this assignment is what it is under `other`: each group's settings, and
        which settings are open to students, the same."""
        mine = [self.settings(group) for group in self.groups or (None,)]
        theirs = [other.settings(group) for group in other.groups or (None,)]
        return mine == theirs and self.open == other.open

    def without_causal_mask(self) -> bool:
        """Whether some of its runs train without the causal mask, so that their token accuracy peeks
        (`evaluation.PEEKED`)."""
        return any(not self.settings(group)["causal_mask"] for group in self.groups or (None,))

    def settings(
        self, group: Group | None, seed: int | None = None, changes: Mapping[str, Any] | None = None
    ) -> dict[str, Value]:
        """Every setting of a run in `group` with `seed`: the defaults, the preset, a student's `changes` to open
        settings (ValueError on a locked or bad one), then the group's value and the seed."""
        changes = dict(changes or {})
        if locked := sorted(set(changes) - set(self.open)):
            raise ValueError(Message(N_("locked by the teacher: {names}"), names=", ".join(map(str, locked))[:100]))
        values = {**spec.form_defaults(), **self.preset, **{name: check_value(name, v) for name, v in changes.items()}}
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


OWN_SEEDS = 100  # seeds 0, 1, 2...: what students try on the Train page on their own, which no class's seeds reach


def class_seed_offset(code: str) -> int:
    """Where the seeds of the class `code` start past its preset seed: drawn from its code, so that two classes on
    one server (two periods of a lesson, or a class made after another was deleted) train runs of their own instead
    of joining each other's finished ones, which their students would never watch learn. Never among the first
    OWN_SEEDS, which students try on the Train page on their own, and MAX_STUDENTS short of the last seed, so that a
    class's seeds do not wrap round to them."""
    low, high = spec.setting("seed").bounds
    draws = high - low + 1 - OWN_SEEDS - MAX_STUDENTS
    return OWN_SEEDS + int.from_bytes(hashlib.sha256(code.encode()).digest()[:8], "big") % draws


def seeds_meet(code: str, other: str) -> bool:
    """Whether the students of classes `code` and `other` on one assignment can be given the same seed."""
    return abs(class_seed_offset(code) - class_seed_offset(other)) < MAX_STUDENTS


def split_groups(name: str) -> tuple[Group, ...]:
    """The groups a class may split into on setting `name` (`Setting.groups`), each labelled with its value's words."""
    s = spec.setting(name)
    return tuple(Group(s.word(value), value) for value in s.groups)
