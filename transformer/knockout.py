"""Head knockout: which attention heads does a trained model rely on? UI-free: tensors and pandas in and out.

A head is removed from one forward pass by replacing its slice (B, T, d_k) of the concatenated heads, just before
W_O, with zeros ("zero": the paper-style reading, as in Michel et al. 2019, "Are Sixteen Heads Really Better than
One?", which multiplies a head by a gate of 0) or with that head's mean output over the scored held-out sequences
("mean": keeps the input of W_O near what it was trained on, so a drop measures what the head tells apart rather
than the shift of removing its average). Removal hooks a private twin of the model, never the model passed in,
which may be shared read-only by every user of the app.
"""

import re
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

import pandas as pd
import torch
import torch.nn.functional as F

from .decoding import greedy_decode
from .inspection import ATTENTION_KINDS, attention_module, twin
from .lengths import output_text
from .limits import DECODE_ROWS, MAX_GRID_COST, MIN_GRID_SAMPLE, evaluation_cost
from .model import Transformer
from .tasks import Batch, DataConfig, TaskData, longest_sequence
from .vocab import Vocab

Ablation = Literal["zero", "mean"]
ABLATIONS = ("zero", "mean")
SHORT_KINDS = {"enc": "encoder", "self": "decoder_self", "cross": "cross"}  # the CLI's names of ATTENTION_KINDS
GRID_COLUMNS = ("kind", "layer", "head", "exact_match", "token_acc")
# Per attention block (kind, layer): each head's mean output over the scored sequences, as a (d_model,) vector
# laid out like the concatenated heads.
HeadMeans = dict[tuple[str, int], torch.Tensor]


@dataclass(frozen=True)
class Head:
    """One attention head: kind as in `ATTENTION_KINDS` ("encoder", "decoder_self", "cross"), layer and head 0-based."""

    kind: str
    layer: int
    head: int

    @property
    def label(self) -> str:
        """The CLI's name of the head, e.g. "cross:0:1"."""
        short = next(s for s, kind in SHORT_KINDS.items() if kind == self.kind)
        return f"{short}:{self.layer}:{self.head}"


def attention_blocks(model: Transformer) -> list[tuple[str, int]]:
    """(kind, layer) of every attention block, kind by kind (encoder, decoder self, cross), then layer."""
    return [(kind, layer) for kind in ATTENTION_KINDS for layer in range(model.config.n_layers)]


def all_heads(model: Transformer) -> list[Head]:
    """Every head of the model, block by block as in `attention_blocks`, then head."""
    return [Head(kind, layer, h) for kind, layer in attention_blocks(model) for h in range(model.config.n_heads)]


def parse_heads(text: str, model: Transformer) -> list[Head]:
    """Heads named "KIND:LAYER:HEAD" and separated by commas (KIND: enc, self or cross), e.g. "cross:0:1,self:0:2".
    ValueError, saying which item is wrong, for bad syntax or a kind, layer or head the model does not have."""
    c, heads = model.config, []
    for item in text.split(","):
        match = re.fullmatch(r"\s*(\w+):(\d{1,3}):(\d{1,3})\s*", item)
        if match is None:
            raise ValueError(f"heads are KIND:LAYER:HEAD separated by commas, like cross:0:1, got {item.strip()!r:.30}")
        short, layer, head = match[1], int(match[2]), int(match[3])
        if short not in SHORT_KINDS:
            raise ValueError(f"the kind of a head is one of {', '.join(SHORT_KINDS)}, got {short!r:.20}")
        if layer >= c.n_layers:
            raise ValueError(f"{item.strip()}: this model has layers 0 to {c.n_layers - 1}")
        if head >= c.n_heads:
            raise ValueError(f"{item.strip()}: this model has heads 0 to {c.n_heads - 1}")
        heads.append(Head(SHORT_KINDS[short], layer, head))
    return list(dict.fromkeys(heads))  # in the order given, each once


# ------------------------------------------------------------------------------------------------ removal


def head_means(model: Transformer, batch: Batch) -> HeadMeans:
    """Each head's output (the input of W_O) averaged over the real positions of `batch`, teacher-forced: queries
    are source positions in the encoder, decoder-input positions in the decoder; padding is left out."""
    probe, pad = twin(model), model.config.pad_id
    real = {"encoder": batch.src != pad, "decoder_self": batch.tgt_in != pad, "cross": batch.tgt_in != pad}
    means: HeadMeans = {}
    handles = []
    for kind, layer in attention_blocks(model):

        def record(module, args, kind=kind, layer=layer) -> None:
            positions = real[kind].to(args[0].device)  # (B, T)
            means[kind, layer] = args[0][positions].mean(dim=0)  # (d_model,)

        block = attention_module(probe, kind, layer)
        handles.append(block.out_proj.register_forward_pre_hook(record))
    try:
        with torch.inference_mode():
            device = next(probe.parameters()).device
            probe(batch.src.to(device), batch.tgt_in.to(device))
    finally:
        for handle in handles:
            handle.remove()
    return means


@contextmanager
def knocked_out(model: Transformer, heads: Iterable[Head], means: HeadMeans | None = None) -> Iterator[Transformer]:
    """A twin of `model` with `heads` removed inside the block: zeroed, or replaced by `means` (from `head_means`)
    when given. The model passed in is never changed."""
    probe = twin(model)
    with _removed(probe, [heads], means):
        yield probe


@contextmanager
def _removed(model: Transformer, removals: Sequence[Iterable[Head]], means: HeadMeans | None) -> Iterator[None]:
    """Hook `model` itself so that, inside the block, a batch of len(removals) equal blocks of rows has the heads
    of removals[i] removed in its i-th block (one set: in every row of any batch); the hooks go when it ends."""
    c, keeps = model.config, {}
    weight = model.generator.proj.weight
    for i, heads in enumerate(removals):
        for head in heads:
            if not 0 <= head.head < c.n_heads:
                raise ValueError(f"head must be in 0..{c.n_heads - 1}, got {head.head}")
            keep = keeps.setdefault((head.kind, head.layer), weight.new_ones(len(removals), c.d_model))  # (E, d_model)
            keep[i, head.head * c.d_k : (head.head + 1) * c.d_k] = 0
    handles = []
    try:
        for (kind, layer), keep in keeps.items():
            fill = torch.zeros_like(keep) if means is None else (1 - keep) * means[kind, layer].to(keep)  # (E, d_model)

            def replace(module, args, keep=keep[:, None, None], fill=fill[:, None, None]) -> tuple[torch.Tensor]:
                blocks = args[0].unflatten(0, (keep.size(0), -1))  # (E, B / E, T, d_model)
                return ((blocks * keep + fill).flatten(0, 1),)  # (B, T, d_model): the removed heads' slices replaced

            block = attention_module(model, kind, layer)
            handles.append(block.out_proj.register_forward_pre_hook(replace))
        yield
    finally:
        for handle in handles:
            handle.remove()


# ------------------------------------------------------------------------------------------------ scoring


@dataclass
class KnockoutGrid:
    """Held-out scores of a model intact and with each head removed alone, and the sample they were scored on."""

    intact: dict[str, float]  # exact_match, token_acc
    heads: pd.DataFrame  # GRID_COLUMNS, one row per head in `all_heads` order
    ablation: Ablation
    batch: Batch  # the held-out sequences scored
    means: HeadMeans | None  # what "mean" removal puts in place of a head; None for "zero"
    n_held_out: int  # held-out sequences the run has

    @property
    def n(self) -> int:
        return self.batch.src.size(0)


def grid_cost(model: Transformer, n: int, length: int) -> int:
    """Multiply-add equivalents (`limits.evaluation_cost`) of a grid of `model` on `n` held-out sequences of up to
    `length` tokens, scored as `knockout_grid` scores them: as many evaluations stacked in one pass as DECODE_ROWS
    sequences allow."""
    evaluations, per_pass = len(all_heads(model)) + 1, max(1, DECODE_ROWS // n)
    full, rest = divmod(evaluations, per_pass)
    recompute = not model.config.causal_mask  # decoding without the causal mask reruns the prefix at each step
    cost = full * evaluation_cost(model.config, per_pass * n, length, recompute)
    return cost + (evaluation_cost(model.config, rest * n, length, recompute) if rest else 0)


def grid_allowed(model: Transformer, task: DataConfig) -> bool:
    """Whether a grid of every head of `model` on `task`'s held-out sequences stays within a shared server's bound
    (MAX_GRID_COST) with MIN_GRID_SAMPLE of them."""
    return grid_cost(model, min(MIN_GRID_SAMPLE, task.n_valid), longest_sequence(task)) <= MAX_GRID_COST


def sample_size(model: Transformer, held_out: Batch) -> int:
    """How many of the `held_out` sequences one grid of `model` may score within MAX_GRID_COST: all of them at most,
    MIN_GRID_SAMPLE at least (`grid_allowed` says whether that many fit)."""
    total, length = held_out.src.size(0), max(held_out.src.size(1), held_out.tgt_out.size(1) - 1)  # sources, targets
    affordable = bisect_right(range(1, total + 1), MAX_GRID_COST, key=lambda n: grid_cost(model, n, length))
    return min(total, max(MIN_GRID_SAMPLE, affordable))


def spread_sample(data: TaskData, n: int) -> Batch:
    """n of the run's held-out sequences, spread evenly over the set (it runs through the lengths in order)."""
    total = len(data.valid_sources)
    if n < 1:
        raise ValueError(f"the sample needs at least 1 sequence, got {n}")
    n = min(n, total)
    return data.make_batch([data.valid_sources[i * total // n] for i in range(n)])


def score(
    model: Transformer, batch: Batch, vocab: Vocab, heads: Iterable[Head] = (), means: HeadMeans | None = None
) -> dict[str, float]:
    """Greedy exact match and teacher-forced token accuracy on `batch` with `heads` removed (see `knocked_out`)."""
    return _scores(twin(model), batch, vocab, [heads], means)[0]


def _scores(
    model: Transformer, batch: Batch, vocab: Vocab, removals: Sequence[Iterable[Head]], means: HeadMeans | None
) -> list[dict[str, float]]:
    """`score` of `batch` with each set of `removals` removed from `model` (hooked in place): len(removals) copies
    of the batch in one pass, or one set DECODE_ROWS sequences at a time."""
    sets, n, device = len(removals), batch.src.size(0), next(model.parameters()).device
    size, counts = n if sets > 1 else DECODE_ROWS, 0
    with _removed(model, removals, means):
        for i in range(0, n, size):
            rows = [t[i : i + size].repeat(sets, 1).to(device) for t in (batch.src, batch.tgt_in, batch.tgt_out)]
            counts = counts + _counts(model, vocab, *rows).unflatten(0, (sets, -1)).sum(dim=1)  # (sets, 3)
    return [{"exact_match": int(right) / n, "token_acc": (tokens / real).item()} for right, tokens, real in counts]


def _counts(model: Transformer, vocab: Vocab, src, tgt_in, tgt_out) -> torch.Tensor:
    """(B, 3) for each sequence: whether greedy decoding gets it exactly right (output and EOS), the target tokens
    the teacher-forced pass gets right, and the target's real tokens."""
    pad, width = model.config.pad_id, tgt_out.size(1)
    with torch.inference_mode():
        real = tgt_out != pad  # (B, T)
        right = (model(src, tgt_in).argmax(dim=-1) == tgt_out) & real  # (B, T)
        got = greedy_decode(model, src, vocab.bos_id, vocab.eos_id, width)  # (B, <= T)
        got = F.pad(got, (0, width - got.size(1)), value=pad)  # (B, T)
    return torch.stack([(got == tgt_out).all(dim=1).long(), right.sum(dim=1), real.sum(dim=1)], dim=1)


def knockout_grid(
    model: Transformer, vocab: Vocab, task: DataConfig, ablation: Ablation = "zero", n: int | None = None
) -> KnockoutGrid:
    """Held-out scores with each head removed alone, next to the intact model's. `n`: held-out sequences to score;
    None chooses as many as MAX_GRID_COST allows (`sample_size`)."""
    heads = all_heads(model)
    batch, means, total = _sample(model, vocab, task, ablation, n)
    removals = [[]] + [[head] for head in heads]  # intact first
    per_pass, probe, scores = max(1, DECODE_ROWS // batch.src.size(0)), twin(model), []
    for i in range(0, len(removals), per_pass):
        scores += _scores(probe, batch, vocab, removals[i : i + per_pass], means)
    rows = [{"kind": h.kind, "layer": h.layer, "head": h.head, **s} for h, s in zip(heads, scores[1:])]
    return KnockoutGrid(scores[0], pd.DataFrame(rows, columns=list(GRID_COLUMNS)), ablation, batch, means, total)


def knockout_set(
    model: Transformer,
    vocab: Vocab,
    task: DataConfig,
    heads: Sequence[Head],
    ablation: Ablation = "zero",
    n: int | None = None,
) -> dict:
    """Held-out scores with `heads` removed together, next to the intact model's, as plain data (the CLI's JSON).
    `n` as in `knockout_grid`, whose sample this is for the same model and n."""
    batch, means, total = _sample(model, vocab, task, ablation, n)
    return {
        "ablation": ablation,
        "n": batch.src.size(0),
        "n_held_out": total,
        "intact": score(model, batch, vocab),
        "removed": [head.label for head in heads],
        "knocked_out": score(model, batch, vocab, heads, means),
    }


def _sample(model, vocab, task, ablation: Ablation, n: int | None):
    """The held-out sample to score (n sequences, or as many as a grid may use), the means that "mean" removal puts
    in place of a head (None for "zero"), and the held-out set's size."""
    if ablation not in ABLATIONS:
        raise ValueError(f"ablation must be zero or mean, got {ablation!r:.20}")
    data = TaskData(task, vocab)
    batch = spread_sample(data, sample_size(model, data.valid) if n is None else n)
    return batch, head_means(model, batch) if ablation == "mean" else None, len(data.valid_sources)


def compare_outputs(
    model: Transformer,
    batch: Batch,
    vocab: Vocab,
    heads: Sequence[Head],
    means: HeadMeans | None = None,
    k: int = 5,
) -> pd.DataFrame:
    """k of `batch`'s sequences spread evenly over it, greedy-decoded intact and with `heads` removed: columns
    input, expected, intact, knocked out (symbols up to EOS, any PAD or BOS written shown)."""
    rows = [i * batch.src.size(0) // k for i in range(min(k, batch.src.size(0)))]
    src, want = batch.src[rows], batch.tgt_out[rows]  # (k, S), (k, T)
    device, max_len = next(model.parameters()).device, want.size(1)
    intact = greedy_decode(model, src.to(device), vocab.bos_id, vocab.eos_id, max_len).cpu()
    with knocked_out(model, heads, means) as probe:
        removed = greedy_decode(probe, src.to(device), vocab.bos_id, vocab.eos_id, max_len).cpu()
    return pd.DataFrame(
        {
            "input": [vocab.decode(s.tolist()) for s in src],
            "expected": [vocab.decode(w.tolist()) for w in want],
            "intact": [output_text(ids, vocab) for ids in intact],
            "knocked out": [output_text(ids, vocab) for ids in removed],
        }
    )


def grid_dict(grid: KnockoutGrid) -> dict:
    """The grid as plain data (the CLI's JSON): intact scores, then one entry per head."""
    return {
        "ablation": grid.ablation,
        "n": grid.n,
        "n_held_out": grid.n_held_out,
        "intact": grid.intact,
        "heads": grid.heads.to_dict(orient="records"),
    }
