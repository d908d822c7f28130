"""Toy sequence-to-sequence tasks on symbol indices, and their training / held-out data.

A task is one function from a source sequence of symbol indices (0 .. n_symbols-1) to its
target sequence. To add a task, write the function and decorate it:

    @register_task("reverse", "Output the input backwards.")
    def reverse(seq: list[int], n_symbols: int) -> list[int]:
        return seq[::-1]

Token ids follow `Vocab`: PAD=0, BOS=1, EOS=2, and symbol index i has id i + 3.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate, chain

import torch

from .limits import MAX_SEED, MAX_SEQ_LEN, MAX_VALID
from .vocab import MAX_SYMBOLS, N_SPECIAL, Vocab

TaskFn = Callable[[list[int], int], list[int]]  # (source symbol indices, n_symbols) -> target


@dataclass(frozen=True)
class Task:
    """A registered task: `fn(seq, n_symbols)` maps a source sequence to its target."""

    name: str
    description: str
    fn: TaskFn


TASKS: dict[str, Task] = {}


def register_task(name: str, description: str) -> Callable[[TaskFn], TaskFn]:
    """Decorator that adds `fn(seq, n_symbols) -> target` to TASKS (re-registering a name replaces it)."""

    def decorator(fn: TaskFn) -> TaskFn:
        TASKS[name] = Task(name, description, fn)
        return fn

    return decorator


def get_task(name: str) -> Task:
    """The registered task called `name`."""
    if not isinstance(name, str) or name not in TASKS:
        raise ValueError(f"unknown task {str(name)[:40]!r}; choose one of: {', '.join(TASKS)}")
    return TASKS[name]


@register_task("copy", "Output the input unchanged.")
def copy(seq: list[int], n_symbols: int) -> list[int]:
    return seq


@register_task("reverse", "Output the input backwards.")
def reverse(seq: list[int], n_symbols: int) -> list[int]:
    return seq[::-1]


@register_task("sort", "Output the input's symbols in ascending order.")
def sort(seq: list[int], n_symbols: int) -> list[int]:
    return sorted(seq)


@register_task("increment", "Add one to every symbol; the last symbol wraps around to the first.")
def increment(seq: list[int], n_symbols: int) -> list[int]:
    return [(s + 1) % n_symbols for s in seq]


@register_task("swap_pairs", "Swap neighbours: 1 2 3 4 5 -> 2 1 4 3 5.")
def swap_pairs(seq: list[int], n_symbols: int) -> list[int]:
    out = list(seq)
    even = len(seq) - len(seq) % 2  # an odd last symbol stays where it is
    out[0:even:2], out[1:even:2] = seq[1:even:2], seq[0:even:2]
    return out


@dataclass(frozen=True)
class DataConfig:
    """Which task to learn and how its sequences are drawn."""

    task: str = "reverse"
    min_len: int = 1
    max_len: int = 16  # source lengths are uniform in [min_len, max_len]
    n_symbols: int = 10
    seed: int = 0
    n_valid: int = 1000  # held-out set size (see TaskData for when it is smaller)

    def __post_init__(self):
        get_task(self.task)
        for name in ("min_len", "max_len", "n_symbols", "seed", "n_valid"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"{name} must be an integer, got {type(value).__name__}")
        if not 1 <= self.min_len <= self.max_len <= MAX_SEQ_LEN:
            raise ValueError(
                f"need 1 <= min_len <= max_len <= {MAX_SEQ_LEN}, got min_len={self.min_len}, max_len={self.max_len}"
            )
        if not 2 <= self.n_symbols <= MAX_SYMBOLS:
            raise ValueError(f"n_symbols must be in 2..{MAX_SYMBOLS}, got {self.n_symbols}")
        if not 1 <= self.n_valid <= MAX_VALID:
            raise ValueError(f"n_valid must be in 1..{MAX_VALID:,}, got {self.n_valid}")
        if not 0 <= self.seed <= MAX_SEED:
            raise ValueError(f"seed must be in 0..{MAX_SEED}, got {self.seed}")


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

    Training sequences have uniformly random lengths in [min_len, max_len] and uniformly random
    symbols, redrawn whenever they land in the held-out set.

    The held-out set has up to `n_valid` distinct sequences spread evenly over the lengths, but
    never more than half of all possible sequences of one length, so training still sees every
    length. Short lengths therefore get fewer held-out sequences, and when the caps add up to
    less than n_valid, the held-out set is smaller than n_valid.
    """

    def __init__(self, config: DataConfig, vocab: Vocab | None = None):
        self.config = config
        self.task = get_task(config.task)
        self.vocab = Vocab.digits(config.n_symbols) if vocab is None else vocab
        if self.vocab.n_symbols != config.n_symbols:
            raise ValueError(f"vocab has {self.vocab.n_symbols} symbols but config.n_symbols is {config.n_symbols}")
        self.valid_sources: list[list[int]] = self._held_out_sources(_generator(config.seed, _VALID))
        self.valid: Batch = self.make_batch(self.valid_sources)  # row i holds valid_sources[i]
        self._held_out = set(map(tuple, self.valid_sources))
        self._train_generator = _generator(config.seed, _TRAIN)

    def train_batch(self, batch_size: int) -> Batch:
        """The next batch of the training stream: random sequences, none of them held out."""
        return self._sample(batch_size, self._train_generator)

    def fresh_examples(self, n: int, seed: int) -> Batch:
        """n new random examples from their own seed stream: never held out, but unlike the
        held-out set they may coincide with sequences the training stream has drawn."""
        return self._sample(n, _generator(seed, _FRESH))

    def make_batch(self, sources: Sequence[Sequence[int]]) -> Batch:
        """Batch of the given non-empty sequences of symbol indices, with targets from the task."""
        n = self.config.n_symbols
        src_flat, src_lengths = _flatten(sources, n, "sources")
        if len(src_lengths) == 0 or src_lengths.min() == 0:
            raise ValueError("sources must be one or more non-empty sequences")
        targets = [self.task.fn(list(s), n) for s in sources]  # copies: a task may edit `seq` in place
        tgt_flat, tgt_lengths = _flatten(targets, n, f"outputs of task {self.task.name!r}")
        target = _pad(tgt_flat, tgt_lengths, int(tgt_lengths.max()) + 1)  # ends in at least one PAD
        tgt_in = target.roll(1, dims=1)  # a PAD comes round to the front ...
        tgt_in[:, 0] = Vocab.bos_id  # ... and becomes BOS
        tgt_out = target.scatter_(1, tgt_lengths[:, None], Vocab.eos_id)  # first PAD becomes EOS
        src = _pad(src_flat, src_lengths, int(src_lengths.max()))
        return Batch(src, tgt_in, tgt_out, n_tokens=len(tgt_flat) + len(sources))

    def _held_out_sources(self, generator: torch.Generator) -> list[list[int]]:
        """Distinct random sequences for the held-out set, in random order."""
        c = self.config
        lengths = range(c.min_len, c.max_len + 1)
        # Share n_valid evenly; capacity grows with length, so what short lengths can't take rolls over.
        sources, left = [], c.n_valid
        for i, length in enumerate(lengths):
            count = min(c.n_symbols**length // 2, left // (len(lengths) - i))
            sources += self._distinct(length, count, generator).tolist()
            left -= count
        return [sources[i] for i in torch.randperm(len(sources), generator=generator).tolist()]

    def _distinct(self, length: int, count: int, generator: torch.Generator) -> torch.Tensor:
        """`count` distinct random sequences of one length; count must be at most half of all of them."""
        rows = torch.empty(0, length, dtype=torch.int64)
        while len(rows) < count:
            more = torch.randint(self.config.n_symbols, (2 * count, length), generator=generator)
            rows = torch.unique(torch.cat([rows, more]), dim=0)
        return rows[torch.randperm(len(rows), generator=generator)[:count]]

    def _sample(self, n: int, generator: torch.Generator) -> Batch:
        """n random sequences with uniform lengths, none of them held out."""
        if n < 1:
            raise ValueError(f"batch size must be at least 1, got {n}")
        c = self.config
        lengths = torch.randint(c.min_len, c.max_len + 1, (n,), generator=generator).tolist()
        sources = self._draw(lengths, generator)
        redo = [i for i, s in enumerate(sources) if tuple(s) in self._held_out]
        while redo:  # at most half of any length is held out, so each redraw succeeds w.p. >= 1/2
            for i, s in zip(redo, self._draw([lengths[i] for i in redo], generator)):
                sources[i] = s
            redo = [i for i in redo if tuple(sources[i]) in self._held_out]
        return self.make_batch(sources)

    def _draw(self, lengths: list[int], generator: torch.Generator) -> list[list[int]]:
        """Uniformly random sequences of the given lengths."""
        symbols = torch.randint(self.config.n_symbols, (sum(lengths),), generator=generator).tolist()
        return [symbols[end - n : end] for end, n in zip(accumulate(lengths), lengths)]
