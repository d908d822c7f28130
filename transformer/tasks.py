"""Choosing a task by name (`get_task`, `task_names`), and the data a task makes: a run's `DataConfig`, its training
stream and held-out set (`TaskData`), and batches of token ids (`Batch`). Every task is a `task.Task`: the built-in
ones (`task.py`) and the gallery's (`gallery.py`) are chosen by name from the one registry (`task.REGISTRY`); a task
from examples (`pairs.py`) travels in its DataConfig (`DataConfig.pairs`).

Token ids follow `Vocab`: PAD=0, BOS=1, EOS=2, then symbol index i has id i + 3.
"""

from __future__ import annotations

import random
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

import torch

from .gallery import GalleryTask
from .i18n import N_, Message
from .limits import MAX_SEED, MAX_SEQ_LEN, MAX_VALID
from .pairs import PAIRS_TASK, PairsTask, TaskPairs
from .task import REGISTRY, FunctionTask, Registered, Task
from .vocab import MAX_SYMBOLS, N_SPECIAL, Vocab

TASKS = Registered(FunctionTask)  # the built-in tasks (and any registered function): all of one shape, so Compare's too
GALLERY = Registered(GalleryTask)  # the gallery's tasks, each with its own vocabulary and sources


def task_names() -> list[str]:
    """Every task chosen by name: the built-in ones, then the gallery's."""
    return list(REGISTRY)


def get_task(name: str) -> Task:
    """The built-in or gallery task called `name`."""
    if not isinstance(name, str) or name not in REGISTRY:
        template = N_("unknown task {name}; choose one of: {tasks}")
        raise ValueError(Message(template, name=repr(str(name)[:40]), tasks=", ".join(REGISTRY)))
    return REGISTRY[name]


@dataclass(frozen=True)
class DataConfig:
    """Which task to learn and how its sequences are drawn. A task from examples carries its `pairs`, and its
    lengths, symbols and held-out set are theirs (`from_pairs`)."""

    task: str = "reverse"
    min_len: int = 1
    max_len: int = 16  # source lengths are uniform in [min_len, max_len]
    n_symbols: int = 10  # the size of the task's alphabet (the gallery's tasks say what it counts)
    seed: int = 0
    n_valid: int = 1000  # held-out set size (see TaskData for when it is smaller)
    pairs: TaskPairs | None = None  # a task from examples: its pairs

    def __post_init__(self):
        for name in ("min_len", "max_len", "n_symbols", "seed", "n_valid"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(
                    Message(N_("{name} must be an integer, got {got}"), name=name, got=type(value).__name__)
                )
        if not 1 <= self.min_len <= self.max_len <= MAX_SEQ_LEN:
            template = N_("need 1 <= min_len <= max_len <= {most}, got min_len={low}, max_len={high}")
            raise ValueError(Message(template, most=MAX_SEQ_LEN, low=self.min_len, high=self.max_len))
        if not 2 <= self.n_symbols <= MAX_SYMBOLS:
            raise ValueError(
                Message(N_("n_symbols must be in 2..{most}, got {got}"), most=MAX_SYMBOLS, got=self.n_symbols)
            )
        if not 1 <= self.n_valid <= MAX_VALID:
            raise ValueError(
                Message(N_("n_valid must be in 1..{most}, got {got}"), most=f"{MAX_VALID:,}", got=self.n_valid)
            )
        if not 0 <= self.seed <= MAX_SEED:
            raise ValueError(Message(N_("seed must be in 0..{most}, got {got}"), most=MAX_SEED, got=self.seed))
        if (self.task == PAIRS_TASK) != isinstance(self.pairs, TaskPairs):
            raise ValueError(Message(N_("the task {task} and only it comes with its pairs"), task=repr(PAIRS_TASK)))
        task_of(self).check(self)

    @classmethod
    def from_pairs(cls, pairs: TaskPairs, seed: int = 0) -> DataConfig:
        """The data of a task from examples."""
        return cls(PAIRS_TASK, pairs.min_len, pairs.max_len, len(pairs.symbols), seed, len(pairs.held_out), pairs)


def task_of(config: DataConfig) -> Task:
    """The task `config` names, or its task from examples."""
    return config.pairs.task if config.pairs is not None else get_task(config.task)


def longest_sequence(config: DataConfig) -> int:
    """The longest source or target of `config`'s data, in symbols: what a model's positions must fit."""
    return max(config.max_len, task_of(config).longest_target(config.max_len, config.n_symbols))


def longest_input(config: DataConfig, positions: int) -> int:
    """The longest source of `config`'s task that it reads and whose target also fits in `positions` symbols (a
    model's longest sequence: repeat's sources, whose targets are twice as long, half of it); at least the task's
    shortest. A task from examples reads any source of up to `positions` symbols."""
    task = task_of(config)
    if isinstance(task, PairsTask):
        return positions
    high = min(positions, task.lengths[-1])
    while high > task.lengths[0] and task.longest_target(high, config.n_symbols) > positions:
        high -= 1
    return max(high, task.lengths[0])


def example_pair(config: DataConfig, max_len: int, seed: int, longest: bool = False) -> tuple[list[int], list[int]]:
    """A random (source, target) of the task, as symbol indices, from the task's lengths (its longest with
    `longest`) and with a source and target of at most `max_len` symbols where the task has one that short: a
    source of a task from examples is one of its pairs'."""
    task, rng = task_of(config), random.Random(seed)
    if isinstance(task, PairsTask):
        fits = sorted((s for s, t in task.targets.items() if max(len(s), len(t)) <= max_len), key=lambda s: -len(s))
        if not fits:
            raise ValueError(f"no pair of {task.pairs.name!r} fits in {max_len} symbols")
        source = list(fits[0] if longest else rng.choice(fits))
        return source, task.target(source, config.n_symbols)
    high = max(min(config.max_len, longest_input(config, max_len)), task.lengths[0])
    length = rng.randint(high if longest else min(config.min_len, high), high)
    if isinstance(task, FunctionTask):  # the digits drawn one by one, from `rng`
        source = [rng.randrange(config.n_symbols) for _ in range(length)]
    else:
        source = task.rows(length, 1, config.n_symbols, torch.Generator().manual_seed(seed))[0].tolist()
    return source, task.target(source, config.n_symbols)


@dataclass
class Batch:
    """Padded token ids of (source, target) pairs."""

    src: torch.Tensor  # (B, S) source ids, right-padded with PAD
    tgt_in: torch.Tensor  # (B, T) BOS + target, padded: the decoder input
    tgt_out: torch.Tensor  # (B, T) target + EOS, padded: the labels
    n_tokens: int  # non-PAD tokens in tgt_out

    def to(self, device: torch.device | str) -> Batch:
        """The same batch on `device`."""
        return Batch(self.src.to(device), self.tgt_in.to(device), self.tgt_out.to(device), self.n_tokens)


_VALID, _TRAIN, _FRESH = range(3)  # independent random streams derived from one seed


def _generator(seed: int, stream: int) -> torch.Generator:
    return torch.Generator().manual_seed((3 * seed + stream) % 2**64)


def _flatten(seqs: Sequence[Sequence[int]], n_symbols: int, what: str) -> tuple[torch.Tensor, torch.Tensor]:
    """All symbol indices concatenated, and each sequence's length; ValueError unless all are ints in range."""
    message = f"{what} must be lists of integers in 0..{n_symbols - 1}"
    try:  # symbol indices are below MAX_SYMBOLS <= 256: bytearray type-checks and converts them fast
        symbols, lengths = bytearray(chain.from_iterable(seqs)), array("q", map(len, seqs))
    except (TypeError, ValueError):
        raise ValueError(message) from None
    flat = _tensor(symbols, torch.uint8).long()
    if len(flat) and flat.max() >= n_symbols:
        raise ValueError(message)
    return flat, _tensor(lengths, torch.int64)


def _tensor(buffer: bytearray | array, dtype: torch.dtype) -> torch.Tensor:
    """A tensor on `buffer`'s memory (torch.frombuffer refuses empty buffers)."""
    return torch.frombuffer(buffer, dtype=dtype) if buffer else torch.empty(0, dtype=dtype)


def _pad(flat: torch.Tensor, lengths: torch.Tensor, width: int) -> torch.Tensor:
    """(B, width) token ids: each sequence's symbols, taken in turn from `flat`, then PAD."""
    ids = torch.full((len(lengths), width), Vocab.pad_id)
    return ids.masked_scatter_(torch.arange(width) < lengths[:, None], flat + N_SPECIAL)


class TaskData:
    """Deterministic training stream and a fixed held-out set that never overlaps it.

    A task chosen by name draws training sources with uniformly random lengths in [min_len, max_len], redrawn
    whenever they land in the held-out set. Its held-out set has up to `n_valid` distinct sources spread evenly over
    the lengths, but never more than half of all sources of one length, so training still sees every length. Short
    lengths therefore get fewer held-out sources, and when the caps add up to less than n_valid, the held-out set is
    smaller than n_valid. A task from examples holds out its held-out pairs and trains on the others.

    `vocab` names the symbols (default: the task's own).
    """

    def __init__(self, config: DataConfig, vocab: Vocab | None = None):
        self.config = config
        self.task = task_of(config)
        symbols = self.task.symbols(config.n_symbols)
        self.vocab = Vocab(symbols) if vocab is None else vocab
        if self.vocab.n_symbols != len(symbols):
            raise ValueError(f"vocab has {self.vocab.n_symbols} symbols but the task has {len(symbols)}")
        self.valid_sources: list[list[int]] = self.task.held_out(config, _generator(config.seed, _VALID))
        self.valid: Batch = self.make_batch(self.valid_sources)  # row i holds valid_sources[i]
        self._held_out = set(map(tuple, self.valid_sources))
        self._train_generator = _generator(config.seed, _TRAIN)

    def train_batch(self, batch_size: int) -> Batch:
        """The next batch of the training stream: random sequences, none of them held out."""
        return self._sample(batch_size, self._train_generator)

    def fresh_examples(self, n: int, seed: int) -> Batch:
        """n new random examples from their own seed stream: never held out, but unlike the held-out set they may
        coincide with sequences the training stream has drawn (for a task from examples, they are its training
        pairs)."""
        return self._sample(n, _generator(seed, _FRESH))

    def make_batch(self, sources: Sequence[Sequence[int]]) -> Batch:
        """Batch of the given non-empty sequences of symbol indices, with targets from the task."""
        n = self.vocab.n_symbols
        src_flat, src_lengths = _flatten(sources, n, "sources")
        if len(src_lengths) == 0 or src_lengths.min() == 0:
            raise ValueError("sources must be one or more non-empty sequences")
        targets = [self.task.target(s, self.config.n_symbols) for s in sources]
        tgt_flat, tgt_lengths = _flatten(targets, n, f"outputs of task {self.task.name!r}")
        target = _pad(tgt_flat, tgt_lengths, int(tgt_lengths.max()) + 1)  # ends in at least one PAD
        tgt_in = target.roll(1, dims=1)  # a PAD comes round to the front ...
        tgt_in[:, 0] = Vocab.bos_id  # ... and becomes BOS
        tgt_out = target.scatter_(1, tgt_lengths[:, None], Vocab.eos_id)  # first PAD becomes EOS
        src = _pad(src_flat, src_lengths, int(src_lengths.max()))
        return Batch(src, tgt_in, tgt_out, n_tokens=len(tgt_flat) + len(sources))

    def _sample(self, n: int, generator: torch.Generator) -> Batch:
        """n random sequences of the task, none of them held out."""
        if n < 1:
            raise ValueError(f"batch size must be at least 1, got {n}")
        return self.make_batch(self.task.sample(self.config, n, generator, self._held_out))
