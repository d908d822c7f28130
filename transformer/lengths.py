"""Length generalization: how a model does, length by length, on inputs it never trained on, including inputs
shorter or longer than any it saw. UI-free: one pandas row per length, and the wrong outputs.

Inside the trained lengths the inputs come from the run's held-out set, which training never drew; outside them
they are random, since training never drew those lengths at all.
"""

from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
import torch
import torch.nn.functional as F

from .decoding import greedy_decode
from .i18n import N_, Message
from .limits import MAX_PER_LENGTH, MAX_PROBE_COST, forward_cost
from .model import ModelConfig, Transformer
from .shares import percent
from .task import spoken
from .tasks import MAX_SEQ_LEN, DataConfig, TaskData, task_of
from .vocab import N_SPECIAL, Vocab

EXTRA_TOKENS = 4  # decoding may run this far past the expected output, so an output too long shows
SCORE_COLUMNS = ("length", "trained", "n", "exact_match", "symbols_right", "output_len", "target_len")


@dataclass
class LengthReport:
    """Scores per input length, and some wrong outputs to look at."""

    scores: pd.DataFrame  # one row per length, SCORE_COLUMNS
    mistakes: pd.DataFrame  # length, input, expected, output: up to `max_mistakes` wrong outputs per length


def unseen_sources(data: TaskData, length: int, n: int, seed: int) -> list[list[int]]:
    """Up to n source sequences of `length` (symbol indices) that training never drew: held-out ones inside the
    trained lengths (fewer than n where the held-out set has fewer), random ones of the task outside them, none
    where the task has no sources of that length (a task from examples has only its pairs')."""
    c = data.config
    if c.min_len <= length <= c.max_len:
        return [s for s in data.valid_sources if len(s) == length][:n]
    if length not in data.task.lengths:
        return []
    generator = torch.Generator().manual_seed(seed * (MAX_SEQ_LEN + 1) + length)
    return data.task.rows(length, n, c.n_symbols, generator).tolist()


def inputs_within_budget(config: ModelConfig, lengths: Sequence[int], n: int) -> int:
    """The most of `n` inputs per length that a length test of a model of `config` decodes within MAX_PROBE_COST
    multiply-adds (0 when not even one input per length fits: test fewer lengths)."""
    per_input = sum(forward_cost(config, 1, length + EXTRA_TOKENS) for length in lengths)
    return min(n, MAX_PROBE_COST // max(per_input, 1))


def testable_lengths(task: DataConfig, config: ModelConfig) -> range:
    """The input lengths a model of `config` trained on `task` can be tested at: those its task has inputs of
    (translate's sentences have 3 to 7 words), up to the longest its positional encoding covers."""
    defined = task_of(task).lengths
    return range(max(1, defined[0]), min(defined[-1], config.longest_sequence, MAX_SEQ_LEN) + 1)


def score_lengths(
    model: Transformer,
    vocab: Vocab,
    task: DataConfig,
    lengths: Sequence[int],
    n: int = 100,
    seed: int = 0,
    max_mistakes: int = 5,
) -> LengthReport:
    """Greedy-decode up to n unseen inputs of each length and score the outputs (see `LengthReport`).

    exact_match: the whole output right, EOS included. symbols_right: the target's symbols the output has at the
    same position. output_len and target_len: mean number of symbols before EOS (an output that never emits EOS
    counts every symbol decoded).
    """
    _check(model, lengths, n)
    data, device = TaskData(task, vocab), next(model.parameters()).device
    scores, mistakes = [], []
    for length in lengths:
        sources = unseen_sources(data, length, n, seed)
        if not sources or data.task.longest_target(length, task.n_symbols) > model.config.longest_sequence:
            continue  # a length the held-out set or the task leaves out, or whose outputs the model cannot hold
        batch = data.make_batch(sources)
        want = batch.tgt_out  # (B, W): target symbols, EOS, PAD
        got = greedy_decode(model, batch.src.to(device), vocab.bos_id, vocab.eos_id, want.size(1) + EXTRA_TOKENS)
        got = F.pad(got.cpu(), (0, max(0, want.size(1) - got.size(1))), value=vocab.pad_id)
        right = got[:, : want.size(1)] == want  # (B, W)
        exact = right.all(dim=1)  # (B,)
        symbols = want >= N_SPECIAL
        scores.append(
            {
                "length": length,
                "trained": task.min_len <= length <= task.max_len,
                "n": len(sources),
                "exact_match": exact.double().mean().item(),
                "symbols_right": (right & symbols).sum().item() / symbols.sum().item(),
                "output_len": _symbols_before_eos(got, vocab).double().mean().item(),
                "target_len": symbols.sum(dim=1).double().mean().item(),
            }
        )
        wrong: dict[str, int] = {}  # distinct inputs: short lengths have few, drawn again and again
        for row in (~exact).nonzero().flatten().tolist():
            wrong.setdefault(vocab.decode(batch.src[row].tolist()), row)
            if len(wrong) == max_mistakes:
                break
        for text, row in wrong.items():
            mistakes.append(
                {
                    "length": length,
                    "input": text,
                    "expected": vocab.decode(want[row].tolist()),
                    "output": output_text(got[row], vocab),
                }
            )
    return LengthReport(
        pd.DataFrame(scores, columns=list(SCORE_COLUMNS)),
        pd.DataFrame(mistakes, columns=["length", "input", "expected", "output"]),
    )


def _symbols_before_eos(ids: torch.Tensor, vocab: Vocab) -> torch.Tensor:
    """(B, T) decoded ids -> (B,) how many symbols come before the first EOS (all of them when there is none)."""
    return ((ids >= N_SPECIAL) & ((ids == vocab.eos_id).cumsum(dim=1) == 0)).sum(dim=1)


def output_text(ids: torch.Tensor, vocab: Vocab) -> str:
    """A decoded row up to its EOS, any PAD or BOS it wrote included (`Vocab.decode` would drop them, and a wrong
    output could then read like the right one)."""
    tokens = ids.tolist()
    return " ".join(vocab.tokens(tokens[: tokens.index(vocab.eos_id)] if vocab.eos_id in tokens else tokens))


def _check(model: Transformer, lengths: Sequence[int], n: int) -> None:
    longest = min(model.config.longest_sequence, MAX_SEQ_LEN)
    if not lengths:
        raise ValueError(N_("give at least one length to test"))
    bad = [length for length in lengths if not _whole(length) or not 1 <= length <= longest]
    if bad:
        problem = N_("lengths must be whole numbers from 1 to {longest} (this model's longest input), got {got}")
        raise ValueError(Message(problem, longest=longest, got=repr(bad[0])[:20]))
    if not _whole(n) or not 1 <= n <= MAX_PER_LENGTH:
        problem = N_("n must be a whole number from 1 to {most}, got {got}")
        raise ValueError(Message(problem, most=MAX_PER_LENGTH, got=repr(n)[:20]))


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def summary(scores: pd.DataFrame, task: DataConfig) -> list[Message]:
    """What a length test of a model trained on `task` shows, a sentence each: the lengths it trained on, the
    shorter ones, the longer ones (those tested)."""
    lines, length = [], scores["length"]
    trained, shorter, longer = scores[scores["trained"]], scores[length < task.min_len], scores[length > task.max_len]
    if len(trained):
        line = N_("At lengths it trained on ({lengths}): exact match {exact}.")
        lines.append(Message(line, lengths=_span(trained["length"], "d"), exact=_span(trained["exact_match"])))
    if len(shorter):
        line = N_("Shorter than any it trained on ({lengths}): exact match {exact}.")
        lines.append(Message(line, lengths=_span(shorter["length"], "d"), exact=_span(shorter["exact_match"])))
    if len(longer):
        line = N_(
            "Longer than any it trained on: exact match {exact}. Its outputs there average {output} symbols, where "
            "{target} were expected."
        )
        output, target = _span(longer["output_len"], ".1f"), _span(longer["target_len"], ".0f")
        lines.append(Message(line, exact=_longer_exact_match(longer), output=output, target=target))
    return lines


UNTESTED_PAIRS = N_(
    "This task's pairs have inputs of {sizes} symbols: lengths {lengths} have none, so the test leaves them out."
)
UNTESTED = N_(
    "The test leaves out lengths {lengths}: the held-out set has no input of them, or their outputs would not fit in "
    "this model."
)


def untested(scores: pd.DataFrame, lengths: Sequence[int], task: DataConfig) -> Message | None:
    """Which of the `lengths` asked for a test of a model trained on `task` left out, and why (a task from examples
    has inputs only at its pairs' lengths); None when it tested every one."""
    left = [str(length) for length in lengths if length not in set(scores["length"])]
    if not left:
        return None
    if task.pairs is not None:
        sizes = spoken(range(task.min_len, task.max_len + 1))
        return Message(UNTESTED_PAIRS, sizes=sizes, lengths=", ".join(left))
    return Message(UNTESTED, lengths=", ".join(left))


def _longer_exact_match(longer: pd.DataFrame) -> Message:
    """The exact match past the trained lengths: at the first length tested, and from which length on none is
    right, or else at the longest length tested."""
    first, last = longer.iloc[0], longer.iloc[-1]
    none_right = longer["exact_match"][::-1].cumsum()[::-1] == 0  # from here on, nothing is right
    exact, at, none_from = percent(first["exact_match"]), first["length"], longer.loc[none_right, "length"].min()
    if none_right.iloc[0]:
        return Message(N_("0% from length {none_from} on"), none_from=none_from)
    if none_right.any():
        both = N_("{exact} at length {length}, 0% from length {none_from} on")
        return Message(both, exact=exact, length=at, none_from=none_from)
    if len(longer) > 1:
        ends = N_("{exact} at length {length}, {last} at length {last_length}")
        return Message(ends, exact=exact, length=at, last=percent(last["exact_match"]), last_length=last["length"])
    return Message(N_("{exact} at length {length}"), exact=exact, length=at)


def _span(values: pd.Series, spec: str = "%") -> str:
    """'x' when every value reads the same, else 'x to y' ('x-y' for lengths, spec 'd'); spec '%': a `percent`."""
    shown = percent if spec == "%" else lambda value: format(value, spec)
    low, high = shown(values.min()), shown(values.max())
    if low == high:
        return low
    return f"{low}-{high}" if spec == "d" else Message(N_("{low} to {high}"), low=low, high=high)
