"""A task given by its examples: (source, target) pairs of space-separated symbols, the vocabulary they use, and the
pairs held out of training (`TaskPairs`), and the task they make (`PairsTask`). It comes from a task file
(`task_file`) or a table typed on the Train page, and travels in checkpoints and in a class's database (`to_dict`,
`from_dict`).

Wherever it comes from, it is held to the bounds of `limits` (pairs, characters, symbols, lengths) before anything
is built from it. Each source has one target: a pair given twice counts once, and a source given two targets is
refused. One distinct pair in HELD_OUT_EVERY (at least one) is held out, chosen by a fixed seed, so the same pairs
always split the same way; training never draws a held-out pair.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import TYPE_CHECKING, Any

import torch

from .i18n import N_, Message
from .limits import (
    MAX_SEQ_LEN,
    MAX_SYMBOLS,
    MAX_TASK_FILE_BYTES,
    MAX_TASK_LINE_CHARS,
    MAX_TASK_PAIRS,
    MAX_VALID,
    MIN_TASK_PAIRS,
)
from .task import Task
from .vocab import Vocab, check_symbol, wide

if TYPE_CHECKING:  # tasks.py imports this module: DataConfig is only named here
    from .tasks import DataConfig

PAIRS_TASK = "pairs"  # the task name of every task from examples (its own name is `TaskPairs.name`)
HELD_OUT_EVERY = 5  # one distinct pair in five is held out
SPLIT_SEED = 0  # the seed that picks the held-out pairs: the same pairs always split the same way
MAX_TASK_NAME_CHARS = 40
Pair = tuple[str, str]  # (source, target): symbols joined by single spaces


@dataclass(frozen=True)
class TaskPairs:
    """The pairs of a task from examples, split into training and held-out pairs, and their vocabulary (each symbol
    in the order it first appears). Checked when made: ValueError, saying why, for anything past the bounds."""

    name: str  # what its author called it, e.g. the file's name: literal text
    symbols: tuple[str, ...]
    train: tuple[Pair, ...]
    held_out: tuple[Pair, ...]
    repeated: int = field(default=0, compare=False)  # pairs given again where it was read, each counted once
    header: Pair | None = field(default=None, compare=False)  # a first line read as the columns' names, left out

    def __post_init__(self) -> None:
        _check_sizes(self.name, self.symbols, self.train, self.held_out)
        known = set(Vocab(self.symbols).symbols)
        sources, used = set(), set()
        for source, target in (*self.train, *self.held_out):
            for text in (source, target):
                words = text.split(" ")
                if not 1 <= len(words) <= MAX_SEQ_LEN or not known.issuperset(words):
                    raise ValueError(f"a pair holds {text[:40]!r}, not 1 to {MAX_SEQ_LEN} symbols of its vocabulary")
                used.update(words)
            if source in sources:
                raise ValueError(f"the source {source[:40]!r} is given twice")
            sources.add(source)
        if len(used) < len(self.symbols):
            raise ValueError("the vocabulary holds symbols no pair uses")

    @cached_property
    def min_len(self) -> int:
        """The shortest source, in symbols."""
        return min(len(source.split(" ")) for source, _ in (*self.train, *self.held_out))

    @cached_property
    def max_len(self) -> int:
        """The longest source, in symbols."""
        return max(len(source.split(" ")) for source, _ in (*self.train, *self.held_out))

    @cached_property
    def train_lengths(self) -> tuple[int, ...]:
        """The lengths of the training pairs' sources, in symbols, shortest first: the lengths a model trained on.
        A held-out pair may have a length no training pair has, and a training length may have no held-out pair."""
        return tuple(sorted({len(source.split(" ")) for source, _ in self.train}))

    @cached_property
    def held_out_lengths(self) -> tuple[int, ...]:
        """The lengths of the held-out pairs' sources, in symbols, shortest first."""
        return tuple(sorted({len(source.split(" ")) for source, _ in self.held_out}))

    @cached_property
    def longest_target(self) -> int:
        """The longest target, in symbols."""
        return max(len(target.split(" ")) for _, target in (*self.train, *self.held_out))

    @cached_property
    def task(self) -> PairsTask:
        """The task these pairs make, built once per TaskPairs (`tasks.task_of` reads it)."""
        return PairsTask(self)

    def __getstate__(self) -> dict[str, Any]:
        """Its fields only, for pickle and copy: what the cached properties above hold is rebuilt where needed."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form; inverse of `from_dict`."""
        return {
            "name": self.name,
            "symbols": list(self.symbols),
            "train": [list(p) for p in self.train],
            "held_out": [list(p) for p in self.held_out],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TaskPairs:
        """The pairs `to_dict` wrote (lists or tuples), each part's size checked before anything is built from it;
        ValueError if malformed or past the bounds."""
        if not isinstance(d, Mapping) or set(d) != {"name", "symbols", "train", "held_out"}:
            raise ValueError("a task's pairs must be exactly {name, symbols, train, held_out}")
        parts = [d["symbols"], d["train"], d["held_out"]]
        if not all(isinstance(p, (list, tuple)) for p in parts) or sum(map(len, parts)) > MAX_TASK_PAIRS + MAX_SYMBOLS:
            raise ValueError(f"a task holds at most {MAX_TASK_PAIRS:,} pairs and {MAX_SYMBOLS} symbols")
        pairs = [_pair(p) for p in (*d["train"], *d["held_out"])]
        n_train = len(d["train"])
        return cls(d["name"], tuple(d["symbols"]), tuple(pairs[:n_train]), tuple(pairs[n_train:]))


def _pair(p: object) -> Pair:
    """A stored pair as (source, target); ValueError unless it is two strings of at most MAX_TASK_LINE_CHARS."""
    if not isinstance(p, (list, tuple)) or len(p) != 2:
        raise ValueError("each pair must be [source, target]")
    if not all(isinstance(t, str) and len(t) <= MAX_TASK_LINE_CHARS for t in p):
        raise ValueError(f"a pair's source and target are text of at most {MAX_TASK_LINE_CHARS:,} characters")
    return p[0], p[1]


def _check_sizes(name: object, symbols: tuple, train: tuple, held_out: tuple) -> None:
    """ValueError unless the parts' counts and characters are within the bounds (checked before their content)."""
    if not isinstance(name, str) or not 1 <= len(name) <= MAX_TASK_NAME_CHARS or not name.isprintable():
        raise ValueError(f"a task's name is 1 to {MAX_TASK_NAME_CHARS} characters of text on one line")
    if not MIN_TASK_PAIRS <= len(train) + len(held_out) <= MAX_TASK_PAIRS or not 1 <= len(held_out) <= MAX_VALID:
        raise ValueError(f"a task holds {MIN_TASK_PAIRS} to {MAX_TASK_PAIRS:,} pairs, at least one held out")
    if not 1 <= len(symbols) <= MAX_SYMBOLS:
        raise ValueError(f"a task's vocabulary holds 1 to {MAX_SYMBOLS} symbols")
    texts = [t for pair in (*train, *held_out) for t in pair]
    if not all(type(t) is str for t in texts) or sum(map(len, texts)) > MAX_TASK_FILE_BYTES:
        raise ValueError(f"a task's pairs are text of at most {MAX_TASK_FILE_BYTES // 2**20} MB")


def task_name(text: str) -> str:
    """A name for a task from `text` (e.g. a file's name): its printable characters, at most MAX_TASK_NAME_CHARS of
    them; "my task" when none are left."""
    kept = "".join(c for c in text if c.isprintable()).strip()[:MAX_TASK_NAME_CHARS].strip()
    return kept or "my task"


def pairs_from_rows(rows: Iterable[tuple[str, str, str]], name: str, first_may_be_header: bool = False) -> TaskPairs:
    """The task of `rows`, each (where, source, target): `where` names the row in messages, e.g. "line 4". ValueError
    with a one-line reason, at the first row past a bound: more than MAX_TASK_PAIRS rows, a sequence that is empty or
    longer than MAX_SEQ_LEN symbols, a symbol that cannot be one, more than MAX_SYMBOLS symbols, a source given two
    targets; fewer than MIN_TASK_PAIRS distinct pairs. `first_may_be_header`: the first row is left out as the
    columns' names (`TaskPairs.header`) where it is the only one that shares no symbol with another (`_island`)."""
    targets: dict[str, tuple[str, str]] = {}  # source -> (target, where it was first given)
    symbols: dict[str, None] = {}  # in order of first appearance
    repeated = 0
    for count, (where, source, target) in enumerate(rows, 1):
        if count > MAX_TASK_PAIRS:
            raise ValueError(Message(N_("{where}: more than {most} pairs"), where=where, most=f"{MAX_TASK_PAIRS:,}"))
        source, target = _sequence(where, source, N_("the source")), _sequence(where, target, N_("the target"))
        for symbol in (*source.split(" "), *target.split(" ")):
            if symbol not in symbols:
                _check_new_symbol(where, symbol, len(symbols))
                symbols[symbol] = None
        if source in targets and targets[source][0] != target:
            first = targets[source][1]
            template = N_("{where}: the source {source} has the target {target} here but {other} at {first}")
            raise ValueError(Message(template, where=where, source=source[:40], target=target[:40],
                                     other=targets[source][0][:40], first=first))  # fmt: skip
        repeated += source in targets
        targets.setdefault(source, (target, where))
    header = _island(targets) if first_may_be_header else None
    if header is not None:
        del targets[header[0]]
        used = _symbols_of(targets)
        symbols = {s: None for s in symbols if s in used}
    if len(targets) < MIN_TASK_PAIRS:
        template = N_("a task needs at least {least} different pairs, to train on some and hold one out; got {got}")
        raise ValueError(Message(template, least=MIN_TASK_PAIRS, got=len(targets)))
    pairs = [(source, target) for source, (target, _) in targets.items()]
    return split_pairs(name, tuple(symbols), pairs, repeated, header)


def _symbols_of(targets: Mapping[str, tuple[str, str]]) -> set[str]:
    """Every symbol of the pairs in `targets` (source -> (target, where))."""
    return {s for source, (target, _) in targets.items() for s in (*source.split(" "), *target.split(" "))}


def _island(targets: Mapping[str, tuple[str, str]]) -> Pair | None:
    """The first pair of `targets` (source -> (target, where)) where it is the only one whose symbols no other pair
    uses: a header line in words of its own ("输入,输出"). A task of such pairs only (word -> word) has none."""
    rows = [{*source.split(" "), *target.split(" ")} for source, (target, _) in targets.items()]
    uses = Counter(symbol for row in rows for symbol in row)
    islands = [all(uses[symbol] == 1 for symbol in row) for row in rows]
    if len(rows) > MIN_TASK_PAIRS and islands[0] and not any(islands[1:]):
        source, (target, _) = next(iter(targets.items()))
        return source, target
    return None


def _sequence(where: str, text: str, what: str) -> str:
    """`text`'s symbols joined by single spaces; ValueError if it has none or more than MAX_SEQ_LEN. Chinese is
    written without spaces: a sequence of several wide characters and no space holds one symbol per character."""
    words = text.split()
    if len(words) == 1 and len(words[0]) > 1 and all(map(wide, words[0])):
        words = list(words[0])
    if not words:
        raise ValueError(Message(N_("{where}: {what} is empty"), where=where, what=Message(what)))
    if len(words) > MAX_SEQ_LEN:
        template = N_("{where}: {what} has {n} symbols; the most is {most}")
        raise ValueError(Message(template, where=where, what=Message(what), n=len(words), most=MAX_SEQ_LEN))
    return " ".join(words)


def _check_new_symbol(where: str, symbol: str, known: int) -> None:
    """ValueError unless `symbol` can be a symbol and there is room for one more."""
    if known == MAX_SYMBOLS:
        raise ValueError(Message(N_("{where}: more than {most} different symbols"), where=where, most=MAX_SYMBOLS))
    try:
        check_symbol(symbol)
    except ValueError as err:
        raise ValueError(Message(N_("{where}: {reason}"), where=where, reason=err.args[0])) from None


def split_pairs(
    name: str, symbols: tuple[str, ...], pairs: list[Pair], repeated: int = 0, header: Pair | None = None
) -> TaskPairs:
    """The task of distinct `pairs` (read from `repeated` more, each repeat counted once, and a `header` left out)
    with one in HELD_OUT_EVERY (at least one, at most MAX_VALID) held out, picked by SPLIT_SEED; both parts keep the
    pairs' order."""
    count = max(1, min(MAX_VALID, len(pairs) // HELD_OUT_EVERY))
    held = set(random.Random(SPLIT_SEED).sample(range(len(pairs)), count))
    train = tuple(p for i, p in enumerate(pairs) if i not in held)
    held_out = tuple(p for i, p in enumerate(pairs) if i in held)
    return TaskPairs(task_name(name), symbols, train, held_out, repeated, header)


class PairsTask(Task):
    """The task of `TaskPairs`: its vocabulary, lengths and targets are its pairs'; training draws its training pairs
    at random, and its held-out set is its held-out pairs. It has no ideal alignment, and is no setting: its pairs
    give its data (`DataConfig.from_pairs`), so its default run is the settings' defaults."""

    name, description = PAIRS_TASK, N_("A task given by its examples.")

    def __init__(self, pairs: TaskPairs):
        self.pairs, self.vocab = pairs, Vocab(pairs.symbols)
        self.lengths = range(pairs.min_len, pairs.max_len + 1)
        self._index = {symbol: i for i, symbol in enumerate(pairs.symbols)}
        self._sources_hold = self._held(source for source, _ in (*pairs.train, *pairs.held_out))
        self._targets_hold = self._held(target for _, target in (*pairs.train, *pairs.held_out))
        self.train = [self._indices(source) for source, _ in pairs.train]
        self.targets = {tuple(self._indices(s)): self._indices(t) for s, t in (*pairs.train, *pairs.held_out)}

    def _indices(self, text: str) -> list[int]:
        """The symbol indices of a pair's text (its symbols joined by single spaces, as `TaskPairs` checked)."""
        return [self._index[symbol] for symbol in text.split(" ")]

    def _held(self, texts: Iterable[str]) -> tuple[int, ...]:
        """The indices of the symbols `texts` hold, in index order."""
        held = {self._index[symbol] for text in texts for symbol in text.split(" ")}
        return tuple(sorted(held))

    def symbols(self, n_symbols: int) -> tuple[str, ...]:
        return self.pairs.symbols

    def source_symbols(self, n_symbols: int) -> tuple[int, ...]:
        """The symbols its pairs' sources hold: a symbol only its targets hold is no input."""
        return self._sources_hold

    def target_symbols(self, n_symbols: int) -> tuple[int, ...]:
        """The symbols its pairs' targets hold."""
        return self._targets_hold

    def target(self, source: Sequence[int], n_symbols: int) -> list[int]:
        """The target its pairs give `source`; ValueError for a source no pair has."""
        found = self.targets.get(tuple(source))
        if found is None:
            shown = " ".join(self.vocab.symbols[i] for i in source if 0 <= i < len(self.vocab.symbols))
            template = N_("{task} has no pair with the source {source}")
            raise ValueError(Message(template, task=self.pairs.name, source=repr(shown[:60])))
        return list(found)

    @property
    def default_run(self) -> dict[str, object]:
        return {}

    def longest_target(self, max_len: int, n_symbols: int) -> int:
        return self.pairs.longest_target

    def check(self, config: DataConfig) -> None:
        """ValueError unless `config`'s lengths, symbols and held-out set are its pairs'."""
        p = self.pairs
        given = (config.min_len, config.max_len, config.n_symbols, config.n_valid)
        if given != (p.min_len, p.max_len, len(p.symbols), len(p.held_out)):
            raise ValueError("a task from examples takes its lengths, symbols and held-out set from its pairs")

    def held_out(self, config: DataConfig, generator: torch.Generator) -> list[list[int]]:
        """The held-out pairs' sources, or, past as many as a task chosen by name holds out (`DataConfig.n_valid`'s
        default), that many spread evenly over them: scoring costs what it costs for such a task of these lengths.
        Training still never draws any held-out pair."""
        held, most = self.pairs.held_out, type(config).n_valid
        scored = held if len(held) <= most else [held[i * len(held) // most] for i in range(most)]
        return [self._indices(source) for source, _ in scored]

    def sample(self, config: DataConfig, n: int, generator: torch.Generator, held_out: set) -> list[list[int]]:
        return [self.train[i] for i in torch.randint(len(self.train), (n,), generator=generator).tolist()]
