"""The task model: every task is a `Task`, and a task chosen by name is registered one way (`register`), in one
registry (`REGISTRY`). A task owns its vocabulary (the names of its symbols), how it draws sources, its target, its
ideal alignment (`source_positions`) and its default run (`default_run`).

The five built-in tasks are functions on the digits 0 .. n_symbols-1 with sources drawn uniformly (`FunctionTask`,
registered here); the gallery's (`gallery.py`) have vocabularies and sources of their own, and outputs that differ in
length or order from their inputs; a task from examples (`pairs.PairsTask`) is its (source, target) pairs, some held
out, and travels in its DataConfig instead of the registry. To add a function task, write it and decorate it, with
the source position each output token comes from where there is one:

    @register_task(
    "reverse", N_("Output the input backwards."), alignment=lambda s: list(range(len(s)))[::-1], usual_steps=163
)
    def reverse(seq: list[int], n_symbols: int) -> list[int]:
        return seq[::-1]

Sources and targets are lists of symbol indices (`tasks.TaskData` makes token ids of them).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import TYPE_CHECKING, TypeVar

import torch

from .i18n import N_, Message, joined
from .limits import MAX_SEQ_LEN
from .vocab import MAX_SYMBOLS

if TYPE_CHECKING:  # tasks.py imports this module: DataConfig is only named here
    from .tasks import DataConfig

TaskFn = Callable[[list[int], int], list[int]]  # (source symbol indices, n_symbols) -> target
PositionsFn = Callable[[list[int]], list[int]]  # source symbol indices -> the source position of each output token


class Task(ABC):
    """A task. This base draws sources uniformly from the digits 0 .. n_symbols-1, each length `n_symbols ** length`
    ways, has no ideal alignment, and runs on the settings' defaults; a task overrides what differs."""

    name: str
    description: str  # one line: what the task teaches
    lengths: range = range(1, MAX_SEQ_LEN + 1)  # the source lengths it is defined for
    symbol_counts: range = range(2, MAX_SYMBOLS + 1)  # the values DataConfig.n_symbols may take
    symbols_mean: str = N_("symbols")  # what n_symbols counts, for messages
    defaults: Mapping[str, object] = {}  # the settings of its default run that differ from the settings' defaults
    # The mean steps its default run trains (to solve its task, or to its step budget) over the class load test's 30
    # seeds (docs/classroom.md, `benchmarks/protocol_load_test.py --task NAME`), which a lesson plans by; None if not
    # measured
    usual_steps: int | None = None

    @abstractmethod
    def target(self, source: Sequence[int], n_symbols: int) -> list[int]:
        """The target of `source`; ValueError if the task has none for it."""

    def source_positions(self, source: Sequence[int]) -> list[int] | None:
        """The source position each output token of `source` comes from: the task's ideal cross-attention
        (`alignment`). None when its outputs gather from many places; ValueError for a source it has no target for."""
        return None

    @property
    def default_run(self) -> dict[str, object]:
        """Every setting of its default run that differs from the settings' defaults, by name: the task, then its
        `defaults` (the settings that solve its whole held-out set, its step budget among them)."""
        return {"task": self.name, **self.defaults}

    def symbols(self, n_symbols: int) -> tuple[str, ...]:
        """The vocabulary's symbols, in index order."""
        return tuple(map(str, range(n_symbols)))

    def source_symbols(self, n_symbols: int) -> Sequence[int]:
        """The indices of the symbols a source can hold, in index order: all of them, unless the task says less."""
        return range(len(self.symbols(n_symbols)))

    def target_symbols(self, n_symbols: int) -> Sequence[int]:
        """The indices of the symbols a target can hold, in index order: all of them, unless the task says less."""
        return range(len(self.symbols(n_symbols)))

    def longest_target(self, max_len: int, n_symbols: int) -> int:
        """The longest target of a source of at most `max_len` symbols."""
        return max_len

    def n_sources(self, length: int, n_symbols: int) -> int:
        """How many different sources of `length` symbols the task draws."""
        return n_symbols**length

    def rows(self, length: int, count: int, n_symbols: int, generator: torch.Generator) -> torch.Tensor:
        """(count, length) random sources of one length."""
        return torch.randint(n_symbols, (count, length), generator=generator)

    def draw(self, lengths: list[int], n_symbols: int, generator: torch.Generator) -> list[list[int]]:
        """Random sources of the given lengths."""
        symbols = torch.randint(n_symbols, (sum(lengths),), generator=generator).tolist()
        return [symbols[end - n : end] for end, n in zip(accumulate(lengths), lengths)]

    def check(self, config: DataConfig) -> None:
        """ValueError unless the task is defined for `config`'s lengths and number of symbols."""
        low, high = self.lengths[0], self.lengths[-1]
        if not low <= config.min_len <= config.max_len <= high:
            template = N_("{task} takes inputs of {low} to {high} symbols: set the shortest and longest input in them")
            raise ValueError(Message(template, task=self.name, low=low, high=high))
        if config.n_symbols not in self.symbol_counts:
            template = N_("{task} takes {counts} {what}: set Symbols to one of them")
            counts = spoken(self.symbol_counts)
            raise ValueError(Message(template, task=self.name, counts=counts, what=Message(self.symbols_mean)))

    def held_out(self, config: DataConfig, generator: torch.Generator) -> list[list[int]]:
        """Up to config.n_valid distinct sources, spread evenly over the lengths, at most half of each length's, in
        random order (see tasks.TaskData)."""
        lengths = range(config.min_len, config.max_len + 1)
        # Share n_valid evenly; capacity grows with length, so what short lengths can't take rolls over.
        sources, left = [], config.n_valid
        for i, length in enumerate(lengths):
            count = min(self.n_sources(length, config.n_symbols) // 2, left // (len(lengths) - i))
            sources += self._distinct(length, count, config.n_symbols, generator).tolist()
            left -= count
        return [sources[i] for i in torch.randperm(len(sources), generator=generator).tolist()]

    def _distinct(self, length: int, count: int, n_symbols: int, generator: torch.Generator) -> torch.Tensor:
        """`count` distinct random sources of one length; count must be at most half of all of them."""
        rows = torch.empty(0, length, dtype=torch.int64)
        while len(rows) < count:
            rows = torch.unique(torch.cat([rows, self.rows(length, 2 * count, n_symbols, generator)]), dim=0)
        return rows[torch.randperm(len(rows), generator=generator)[:count]]

    def sample(self, config: DataConfig, n: int, generator: torch.Generator, held_out: set) -> list[list[int]]:
        """n random sources with uniform lengths, none of them in `held_out`."""
        lengths = torch.randint(config.min_len, config.max_len + 1, (n,), generator=generator).tolist()
        sources = self.draw(lengths, config.n_symbols, generator)
        redo = [i for i, s in enumerate(sources) if tuple(s) in held_out]
        while redo:  # at most half of any length is held out, so each redraw succeeds w.p. >= 1/2
            for i, s in zip(redo, self.draw([lengths[i] for i in redo], config.n_symbols, generator)):
                sources[i] = s
            redo = [i for i in redo if tuple(sources[i]) in held_out]
        return sources


def spoken(values: Sequence[int]) -> str:
    """Values in words: a range as "2 to 30", one value as "3", else a list as "2, 4, 6 or 8"."""
    if len(values) == 1:
        return str(values[0])
    if isinstance(values, range) and values.step == 1:
        return Message(N_("{low} to {high}"), low=values[0], high=values[-1])
    return Message(N_("{some} or {last}"), some=joined(map(str, values[:-1]), N_(", ")), last=values[-1])


@dataclass(frozen=True)
class FunctionTask(Task):
    """A built-in task: `fn(seq, n_symbols)` maps a source of digit indices to its target, and `alignment`, where
    given, a source to the source position of each output token."""

    name: str
    description: str
    fn: TaskFn
    alignment: PositionsFn | None = None
    usual_steps: int | None = None

    def target(self, source: Sequence[int], n_symbols: int) -> list[int]:
        return self.fn(list(source), n_symbols)  # a copy: a task may edit `seq` in place

    def source_positions(self, source: Sequence[int]) -> list[int] | None:
        return None if self.alignment is None else self.alignment(list(source))


REGISTRY: dict[str, Task] = {}  # every task chosen by name, in the order registered: the built-in ones first
AnyTask = TypeVar("AnyTask", bound=Task)


def register(task: AnyTask) -> AnyTask:
    """Add `task` to REGISTRY under its name (registering a name again replaces it); returns it."""
    if not isinstance(task, Task):
        raise TypeError(f"only a Task is registered, not {type(task).__name__}")
    REGISTRY[task.name] = task
    return task


def register_task(
    name: str, description: str, alignment: PositionsFn | None = None, usual_steps: int | None = None
) -> Callable[[TaskFn], TaskFn]:
    """Decorator that registers `fn(seq, n_symbols) -> target` as a FunctionTask, with its `alignment` and its default
    run's `usual_steps` if any."""

    def decorator(fn: TaskFn) -> TaskFn:
        register(FunctionTask(name, description, fn, alignment, usual_steps))
        return fn

    return decorator


class Registered(Mapping[str, AnyTask]):
    """The registered tasks of one kind, by name, in REGISTRY's order: a view, so a task registered later is in it."""

    def __init__(self, kind: type[AnyTask]):
        self.kind = kind

    def __getitem__(self, name: str) -> AnyTask:
        task = REGISTRY[name]
        if not isinstance(task, self.kind):
            raise KeyError(name)
        return task

    def __iter__(self) -> Iterator[str]:
        return (name for name, task in REGISTRY.items() if isinstance(task, self.kind))

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _same_places(s: list[int]) -> list[int]:
    return list(range(len(s)))


@register_task("copy", N_("Output the input unchanged."), alignment=_same_places)
def copy(seq: list[int], n_symbols: int) -> list[int]:
    return seq


@register_task(
    "reverse", N_("Output the input backwards."), alignment=lambda s: list(range(len(s)))[::-1], usual_steps=163
)
def reverse(seq: list[int], n_symbols: int) -> list[int]:
    return seq[::-1]


# Python's sort is stable: equal symbols are taken in their source order.
@register_task(
    "sort",
    N_("Output the input's symbols in ascending order."),
    alignment=lambda s: sorted(range(len(s)), key=s.__getitem__),
)
def sort(seq: list[int], n_symbols: int) -> list[int]:
    return sorted(seq)


@register_task(
    "increment",
    N_("Add one to every symbol: 1 3 2 → 2 4 3; the highest symbol wraps around to 0."),
    alignment=_same_places,
)
def increment(seq: list[int], n_symbols: int) -> list[int]:
    return [(s + 1) % n_symbols for s in seq]


@register_task(
    "swap_pairs",
    N_("Swap neighbours: 1 2 3 4 5 → 2 1 4 3 5."),
    alignment=lambda s: [i ^ 1 if i < len(s) - len(s) % 2 else i for i in range(len(s))],
)
def swap_pairs(seq: list[int], n_symbols: int) -> list[int]:
    out = list(seq)
    even = len(seq) - len(seq) % 2  # an odd last symbol stays where it is
    out[0:even:2], out[1:even:2] = seq[1:even:2], seq[0:even:2]
    return out
