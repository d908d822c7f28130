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
from .i18n import DEFAULT_LANGUAGE, N_, Message, Translator, joined, translator
from .limits import MAX_PER_LENGTH, MAX_PROBE_COST, forward_cost
from .model import ModelConfig, Transformer
from .shares import percent
from .task import spoken
from .tasks import MAX_SEQ_LEN, DataConfig, TaskData, task_of
from .vocab import N_SPECIAL, Vocab

EXTRA_TOKENS = 4  # decoding may run this far past the expected output, so an output too long shows
SCORE_COLUMNS = ("length", "trained", "n", "exact_match", "symbols_right", "output_len", "target_len")
ENGLISH = translator(DEFAULT_LANGUAGE)  # `untested`'s default translator


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


def trained_lengths(task: DataConfig) -> tuple[int, ...]:
    """The input lengths a run of `task` trained on, shortest first: min_len to max_len for a task chosen by name,
    its training pairs' lengths for a task from examples (its held-out pairs may be of other lengths)."""
    if task.pairs is not None:
        return task.pairs.train_lengths
    return tuple(range(task.min_len, task.max_len + 1))


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
    data, device, trained = TaskData(task, vocab), next(model.parameters()).device, set(trained_lengths(task))
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
                "trained": length in trained,
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


def summary(scores: pd.DataFrame, task: DataConfig, lengths: Sequence[int] | None = None) -> list[Message]:
    """What a length test of a model trained on `task` shows, a sentence each: the lengths it trained on, the
    shorter ones, the longer ones (those tested). `lengths`: those the test asked for, whose trained ones are named
    even where the test scored none of their inputs (`untested` says why); by default, the trained lengths scored."""
    lines, length, trained = [], scores["length"], trained_lengths(task)
    low, high = (trained[0], trained[-1]) if trained else (0, MAX_SEQ_LEN + 1)  # no training pair: none is either
    scored, shorter, longer = scores[scores["trained"]], scores[length < low], scores[length > high]
    if len(scored):
        named = scored["length"].tolist() if lengths is None else [n for n in lengths if n in set(trained)]
        line = N_("At lengths it trained on ({lengths}): exact match {exact}.")
        lines.append(Message(line, lengths=_runs(named), exact=_span(scored["exact_match"])))
    if len(shorter):
        line = N_("Shorter than any it trained on ({lengths}): exact match {exact}.")
        lines.append(Message(line, lengths=_span(shorter["length"], "d"), exact=_span(shorter["exact_match"])))
    if len(longer):
        line = N_(
            "Longer than any it trained on: exact match {exact}. Its outputs there average {output} symbols, against "
            "{target} expected."
        )
        whole = (longer["target_len"] % 1 == 0).all()  # one length an input (reverse); a mean where it varies (dedup)
        output, target = _span(longer["output_len"], ".1f"), _span(longer["target_len"], ".0f" if whole else ".1f")
        lines.append(Message(line, exact=_longer_exact_match(longer), output=output, target=target))
    return lines


def untested(scores: pd.DataFrame, lengths: Sequence[int], task: DataConfig, tr: Translator = ENGLISH) -> list[str]:
    """Which of the `lengths` asked for a test of a model trained on `task` left out, and why, in `tr`'s language: a
    paragraph per reason, none when it tested every one. A task from examples has inputs only at its pairs' lengths,
    and is tested on its held-out pairs only: a length whose pairs are all training pairs has none to test."""
    left = [length for length in lengths if length not in set(scores["length"])]
    reasons = []
    if left and task.pairs is not None:
        train, held = set(task.pairs.train_lengths), set(task.pairs.held_out_lengths)
        absent, unheld = [n for n in left if n not in train | held], [n for n in left if n in train - held]
        left = [n for n in left if n not in absent and n not in unheld]  # outputs the model cannot hold
        if absent:
            reasons.append(
                tr.ngettext(
                    "This task's pairs have inputs of {sizes} symbols: length {lengths} has none, so the test leaves "
                    "it out.",
                    "This task's pairs have inputs of {sizes} symbols: lengths {lengths} have none, so the test leaves "
                    "them out.",
                    len(absent),
                    sizes=spoken(range(task.min_len, task.max_len + 1)),
                    lengths=_listed(absent),
                )
            )
        if unheld:
            reasons.append(
                tr.ngettext(
                    "Length {lengths} has no pair in the held-out set, so the test cannot score it: the model trained "
                    "on every pair of that length.",
                    "Lengths {lengths} have no pair in the held-out set, so the test cannot score them: the model "
                    "trained on every pair of those lengths.",
                    len(unheld),
                    lengths=_listed(unheld),
                )
            )
    if left:
        reasons.append(
            tr.ngettext(
                "The test leaves out length {lengths}: the held-out set has no input of it, or its outputs would not "
                "fit in this model.",
                "The test leaves out lengths {lengths}: the held-out set has no input of them, or their outputs would "
                "not fit in this model.",
                len(left),
                lengths=_listed(left),
            )
        )
    return reasons


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


def _runs(lengths: Sequence[int]) -> str:
    """Lengths as runs of consecutive ones, shortest first: "3-6", "4", or "2, 4-6" where some are missing."""
    runs: list[list[int]] = []
    for length in sorted(lengths):
        if runs and length == runs[-1][-1] + 1:
            runs[-1].append(length)
        else:
            runs.append([length])
    return ", ".join(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs)


def _listed(lengths: Sequence[int]) -> str:
    """Lengths as a list in words: "6", "6 and 7", "1, 3 and 4"."""
    if len(lengths) == 1:
        return str(lengths[0])
    return Message(N_("{some} and {last}"), some=joined(map(str, lengths[:-1]), N_(", ")), last=lengths[-1])


def _span(values: pd.Series, spec: str = "%") -> str:
    """'x' when every value reads the same, else 'x to y' ('x-y' for lengths, spec 'd'); spec '%': a `percent`."""
    shown = percent if spec == "%" else lambda value: format(value, spec)
    low, high = shown(values.min()), shown(values.max())
    if low == high:
        return low
    return f"{low}-{high}" if spec == "d" else Message(N_("{low} to {high}"), low=low, high=high)
