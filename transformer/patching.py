"""Activation patching: where does the information of a clean input flow through the model? UI-free.

Two inputs differ in a source token or a few: the clean one and the corrupted one. The model is run on both,
teacher-forced on the clean input's answer (the task's output for it). Then the corrupted run is repeated with one
activation copied in from the clean run, and the probability of the clean answer is measured again. The share of
the log-probability the corruption took away that the patch brings back is

    recovered = (log p_patched - log p_corrupted) / (log p_clean - log p_corrupted)

1 means that activation alone carries everything the changed token tells the model; 0 that it carries none of it.
Log-probabilities add up over the answer's tokens, so patches that each mend one output token add up too, where
the probability of the whole answer, a product, would show nothing until every token is mended.
A patch site is one head's output (its slice of the concatenated heads, just before W_O, at every position) or the
residual stream of one stack at one position after `layer` layers (0: the embeddings with their positions).
Patching nothing gives the corrupted run exactly; patching the stream at every position of any encoder layer
gives the clean run exactly. Hooks go on a private twin of the model, never on the model passed in.
"""

import math
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

import pandas as pd
import torch

from .i18n import N_, Message, message_of
from .inspection import attention_module, twin
from .knockout import Head, all_heads
from .limits import MAX_GRID_COST, MAX_PATCH_RUNS, check_probe_cost, patching_cost
from .model import Transformer, check_finite
from .tasks import DataConfig, task_of
from .vocab import Vocab

MIN_GAP = 1e-3  # below this difference between log p_clean and log p_corrupted there is nothing to recover
HEAD_COLUMNS = ("kind", "layer", "head", "p", "recovered")
STREAM_COLUMNS = ("stack", "layer", "position", "p", "recovered")


@dataclass(frozen=True)
class StreamSite:
    """The residual stream of one stack ("encoder" or "decoder") at one position, after `layer` layers."""

    stack: Literal["encoder", "decoder"]
    layer: int
    position: int


Site = Head | StreamSite
Point = tuple  # where a hook goes: ("stream", stack, layer) or ("head", kind, layer)
Activations = dict[Point, torch.Tensor]  # (1, T, d_model) at each hook point
Edit = Callable[[torch.Tensor], torch.Tensor]  # what a hook does to the activation it sees


def _point(site: Site) -> Point:
    return ("stream", site.stack, site.layer) if isinstance(site, StreamSite) else ("head", site.kind, site.layer)


def _hook(model: Transformer, point: Point, edit: Edit) -> torch.utils.hooks.RemovableHandle:
    """Hook `edit(x) -> x` on the (1, T, d_model) activation at `point`."""
    if point[0] == "head":  # the concatenated heads, the input of W_O
        block = attention_module(model, point[1], point[2]).out_proj
        return block.register_forward_pre_hook(lambda module, args: (edit(args[0]),))
    stack, layer = (model.encoder if point[1] == "encoder" else model.decoder), point[2]
    if layer == 0:  # the stack's input: the embeddings and positions
        return stack.layers[0].register_forward_pre_hook(lambda module, args: (edit(args[0]), *args[1:]))
    return stack.layers[layer - 1].register_forward_hook(lambda module, args, out: (edit(out[0]), *out[1:]))


@contextmanager
def _hooks(model: Transformer, edits: dict[Point, Edit]) -> Iterator[None]:
    handles = [_hook(model, point, edit) for point, edit in edits.items()]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def record_run(model: Transformer, src: torch.Tensor, tgt_in: torch.Tensor, sites: Sequence[Site]):
    """The logits (1, T, V) of the source `src` (1, S), teacher-forced on `tgt_in` (1, T), and its activations at each
    hook point of `sites`: what `patched_run` copies in. Hooks go on `model`: pass a twin."""
    seen: Activations = {}

    def keep(point: Point) -> Edit:
        def edit(x: torch.Tensor) -> torch.Tensor:
            seen[point] = x.clone()
            return x

        return edit

    points = {_point(site) for site in sites}
    with _hooks(model, {point: keep(point) for point in points}), torch.inference_mode():
        return model(src, tgt_in), seen


def _patch(site: Site, clean: torch.Tensor, d_k: int) -> tuple[tuple, torch.Tensor]:
    """The edit that copies `site`'s part of the clean activation (1, T, d_model) into a run."""
    if isinstance(site, StreamSite):
        part = (slice(None), site.position)  # (1, d_model) at one position
    else:
        part = (Ellipsis, slice(site.head * d_k, (site.head + 1) * d_k))  # (1, T, d_k): one head, every position
    return part, clean[part]


def patched_run(
    probe: Transformer, corrupted: torch.Tensor, tgt_in: torch.Tensor, sites: Sequence[Site], clean: Activations
) -> torch.Tensor:
    """Logits (1, T, V) of the `corrupted` source (1, S), teacher-forced on `tgt_in` (1, T), with the `clean`
    activations (from `record_run` on the same model) at `sites` patched in. Hooks go on `probe`: pass a twin."""
    parts: dict[Point, list] = {}
    for site in sites:
        parts.setdefault(_point(site), []).append(_patch(site, clean[_point(site)], probe.config.d_k))

    def edit(patches: list) -> Edit:
        def replace(x: torch.Tensor) -> torch.Tensor:
            x = x.clone()
            for part, value in patches:
                x[part] = value
            return x

        return replace

    with _hooks(probe, {point: edit(patches) for point, patches in parts.items()}), torch.inference_mode():
        return probe(corrupted, tgt_in)


def answer_log_probability(logits: torch.Tensor, answer: torch.Tensor) -> float:
    """The log-probability, teacher-forced, of the whole `answer` (1, T) under `logits` (1, T, V).
    NonFiniteOutputError if the logits are not finite."""
    return check_finite(logits).log_softmax(dim=-1).gather(-1, answer[..., None]).sum().item()


# ------------------------------------------------------------------------------------------------ the grid


@dataclass
class PatchingGrid:
    """How much of the clean answer's probability each patch site brings back into the corrupted run."""

    clean: list[str]  # source tokens
    corrupted: list[str]
    answer: list[str]  # the clean input's answer, then EOS: what each decoder position predicts
    log_p_clean: float  # log p(answer | clean source)
    log_p_corrupted: float  # log p(answer | corrupted source)
    heads: pd.DataFrame  # HEAD_COLUMNS, one row per head as in `all_heads`
    stream: pd.DataFrame  # STREAM_COLUMNS: encoder layers 0..N by source position, decoder 1..N by target position

    @property
    def p_clean(self) -> float:
        return math.exp(self.log_p_clean)

    @property
    def p_corrupted(self) -> float:
        return math.exp(self.log_p_corrupted)

    @property
    def recoverable(self) -> bool:
        """Whether the corruption moves the answer's probability enough for `recovered` to mean something."""
        return abs(self.log_p_clean - self.log_p_corrupted) >= MIN_GAP


def patching_pair(task: DataConfig, sources: Sequence[Sequence[int]], n_symbols: int) -> tuple[list[int], list[int]]:
    """A clean input and a corrupted one to start patching from: the first of `sources` (indices of the task's
    `n_symbols` symbols) that one changed symbol keeps an input of the task and gives another answer, and that change
    (the symbol nearest the middle that can, to the first symbol after it that does). A change that leaves the
    answer as it was (dedup's 4 into a 5 already there) has nothing to recover, and add's "+" changed into a digit is
    no addition. Where no source has such a change (a task of given pairs knows the targets of its pairs only), the
    first with its middle symbol changed to the next one."""
    rule = task_of(task)

    def target(source: list[int]) -> list[int] | None:
        try:
            return rule.target(source, task.n_symbols)
        except ValueError:
            return None

    for clean in map(list, sources):
        answer, middle = target(clean), len(clean) // 2
        for at in sorted(range(len(clean)), key=lambda i: (abs(i - middle), i)):
            for step in range(1, n_symbols):
                changed = [*clean[:at], (clean[at] + step) % n_symbols, *clean[at + 1 :]]
                if target(changed) not in (None, answer):
                    return clean, changed
    clean = list(sources[0])
    middle = len(clean) // 2
    return clean, [*clean[:middle], (clean[middle] + 1) % n_symbols, *clean[middle + 1 :]]


def _ids(vocab: Vocab, text: str, longest: int, symbols: Collection[int] | None, which: str) -> list[int]:
    """`text`'s token ids, each of `symbols` (`Vocab.encode`); ValueError that names `which` input does not read."""
    try:
        return vocab.encode(text, longest, symbols)
    except ValueError as err:
        raise ValueError(Message(N_("{reason} ({which})"), which=Message(which), reason=message_of(err))) from err


def pair_ids(
    vocab: Vocab, clean: str, corrupted: str, longest: int, symbols: Collection[int] | None = None
) -> tuple[list[int], list[int]]:
    """Token ids of a clean and a corrupted input, each of `symbols` (a task's source symbols; any, if None);
    ValueError unless each reads, they are as long and they differ somewhere (one that does not read is named)."""
    clean_ids = _ids(vocab, clean, longest, symbols, N_("the clean input"))
    corrupted_ids = _ids(vocab, corrupted, longest, symbols, N_("the corrupted input"))
    if len(clean_ids) != len(corrupted_ids):
        as_long = N_(
            "the corrupted input must be as long as the clean one ({clean} symbols), got {corrupted}: change a "
            "symbol, do not add or remove one"
        )
        raise ValueError(Message(as_long, clean=len(clean_ids), corrupted=len(corrupted_ids)))
    if clean_ids == corrupted_ids:
        raise ValueError(N_("the two inputs are the same: change at least one symbol of the corrupted one"))
    return clean_ids, corrupted_ids


def stream_sites(model: Transformer, src_len: int, tgt_len: int) -> list[StreamSite]:
    """Every residual-stream site: encoder layers 0..N at each source position, then decoder layers 1..N at each
    target position (the decoder's input is the same in both runs, so its layer 0 is left out)."""
    n = model.config.n_layers
    encoder = [StreamSite("encoder", layer, p) for layer in range(n + 1) for p in range(src_len)]
    return encoder + [StreamSite("decoder", layer, t) for layer in range(1, n + 1) for t in range(tgt_len)]


def check_patching_cost(model: Transformer, src_len: int, tgt_len: int) -> None:
    """ValueError when one grid would cost more than a Knockout grid may (MAX_GRID_COST: `patching_cost` counts each
    pass's layers), run more than MAX_PATCH_RUNS passes, or cost more multiply-adds than one probe may."""
    runs = 2 + len(all_heads(model)) + len(stream_sites(model, src_len, tgt_len))
    cost = patching_cost(model.config, runs, src_len)
    if cost > MAX_GRID_COST:
        n = model.config.n_layers
        too_costly = N_(
            "patching every site of this model on {length} symbols takes {runs:,} runs through its {n} encoder "
            "and {n} decoder layers, {factor}x the work one request may do: use a shorter input, or a model with "
            "fewer layers"
        )
        factor = math.ceil(cost / MAX_GRID_COST)
        raise ValueError(Message(too_costly, length=src_len, runs=runs, n=n, factor=factor))
    if runs > MAX_PATCH_RUNS:
        too_many = N_(
            "patching every site of this model on {length} symbols takes {runs:,} runs, more than the {most:,} one "
            "request may do: use a shorter input"
        )
        raise ValueError(Message(too_many, length=src_len, runs=runs, most=MAX_PATCH_RUNS))
    check_probe_cost(model.config, 1, src_len, passes=runs)


def patching_grid(model: Transformer, vocab: Vocab, task: DataConfig, clean: str, corrupted: str) -> PatchingGrid:
    """Patch each head's output and the residual stream at each layer and position, one site at a time, from the
    `clean` input (space-separated symbols) into the `corrupted` one; the answer is `task`'s target of the clean
    input. ValueError for inputs the model cannot read, of different lengths, equal, without a target (a source
    that no pair of a task from examples has), or past the work one request may do; NonFiniteOutputError (a
    ValueError) if the model's outputs are not finite."""
    rule = task_of(task)
    sources = rule.source_symbols(task.n_symbols)
    clean_ids, corrupted_ids = pair_ids(vocab, clean, corrupted, model.config.longest_sequence, sources)
    symbols = [vocab.symbol_index(i) for i in clean_ids]
    target = [vocab.symbol_id(s) for s in rule.target(symbols, task.n_symbols)]
    if len(target) + 1 > model.config.max_len:
        too_long = N_("the answer to this input is longer than the model's {most} tokens")
        raise ValueError(Message(too_long, most=model.config.max_len - 1))
    heads, streams = all_heads(model), stream_sites(model, len(clean_ids), len(target) + 1)
    check_patching_cost(model, len(clean_ids), len(target) + 1)
    device = next(model.parameters()).device
    src, bad = (torch.tensor([ids], device=device) for ids in (clean_ids, corrupted_ids))  # (1, S)
    tgt_in = torch.tensor([[vocab.bos_id, *target]], device=device)  # (1, T)
    answer = torch.tensor([[*target, vocab.eos_id]], device=device)  # (1, T)
    probe = twin(model)
    logits, activations = record_run(probe, src, tgt_in, [*heads, *streams])
    log_p_clean = answer_log_probability(logits, answer)
    log_p_corrupted = answer_log_probability(patched_run(probe, bad, tgt_in, [], activations), answer)
    gap = log_p_clean - log_p_corrupted

    def measure(site: Site) -> dict:
        log_p = answer_log_probability(patched_run(probe, bad, tgt_in, [site], activations), answer)
        recovered = (log_p - log_p_corrupted) / gap if abs(gap) >= MIN_GAP else math.nan
        return {"p": math.exp(log_p), "recovered": recovered}

    head_rows = [{"kind": h.kind, "layer": h.layer, "head": h.head, **measure(h)} for h in heads]
    stream_rows = [{"stack": s.stack, "layer": s.layer, "position": s.position, **measure(s)} for s in streams]
    return PatchingGrid(
        vocab.tokens(clean_ids),
        vocab.tokens(corrupted_ids),
        vocab.tokens(answer[0].tolist()),
        log_p_clean,
        log_p_corrupted,
        pd.DataFrame(head_rows, columns=list(HEAD_COLUMNS)),
        pd.DataFrame(stream_rows, columns=list(STREAM_COLUMNS)),
    )


def grid_dict(grid: PatchingGrid) -> dict:
    """The grid as plain JSON-able data (the CLI's output); a recovered fraction that means nothing is None."""

    def records(table: pd.DataFrame) -> list[dict]:
        return [
            {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
            for row in table.to_dict(orient="records")
        ]

    return {
        "clean": grid.clean,
        "corrupted": grid.corrupted,
        "answer": grid.answer,
        "p_clean": grid.p_clean,
        "p_corrupted": grid.p_corrupted,
        "heads": records(grid.heads),
        "stream": records(grid.stream),
    }
