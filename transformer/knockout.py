"""Head knockout: which attention heads does a trained model rely on? UI-free: tensors and pandas in and out.

A head is removed from one forward pass by replacing its slice (B, T, d_k) of the concatenated heads, just before
W_O, with zeros ("zero": the paper-style reading, as in Michel et al. 2019, "Are Sixteen Heads Really Better than
One?", which multiplies a head by a gate of 0) or with that head's mean output over the scored held-out sequences
("mean": keeps the input of W_O near what it was trained on, so a drop measures what the head tells apart rather
than the shift of removing its average). Removal hooks a private twin of the model, never the model passed in,
which may be shared read-only by every user of the app.
"""

import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

import pandas as pd
import torch

from .decoding import greedy_decode
from .inspection import ATTENTION_KINDS, attention_module, twin
from .lengths import output_text
from .model import Transformer
from .tasks import Batch, DataConfig, TaskData
from .training import evaluate
from .vocab import Vocab

Ablation = Literal["zero", "mean"]
ABLATIONS = ("zero", "mean")
SHORT_KINDS = {"enc": "encoder", "self": "decoder_self", "cross": "cross"}  # the CLI's names of ATTENTION_KINDS
# One grid may cost this many parameter-tokens (parameters x (source + target tokens) x sequences x evaluations):
# 2-4 s of one core for the shipped models (2026-11-25, shared 2-core lab machine, one torch thread: reverse.pt and
# copy.pt score all 1,000 held-out sequences, sort.pt 305). Past it a grid scores fewer held-out sequences, but
# MIN_SAMPLE at least: the app's largest model (d_model 256, 4 + 4 layers of 16 heads, 193 evaluations) then takes
# about 40 s (measured the same way on an untrained one), since even a few sequences cost that many decodings.
GRID_BUDGET = 1.5e10
MIN_SAMPLE = 10
# Past this many (evaluations x layers per stack) a grid is refused outright: each evaluation decodes through every
# layer whatever the sample, so the app's largest model (193 evaluations x 4 layers) costs about 40 s even at
# MIN_SAMPLE. The Train page's largest model (73 x 3) stays within it.
MAX_GRID_LAYER_EVALS = 250
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
    with _removed(probe, heads, means):
        yield probe


@contextmanager
def _removed(model: Transformer, heads: Iterable[Head], means: HeadMeans | None) -> Iterator[None]:
    """Hook `model` itself so that `heads` are removed inside the block; the hooks go when it ends."""
    d_k, blocks = model.config.d_k, {}
    for head in heads:
        if not 0 <= head.head < model.config.n_heads:
            raise ValueError(f"head must be in 0..{model.config.n_heads - 1}, got {head.head}")
        blocks.setdefault((head.kind, head.layer), []).append(head.head)
    handles = []
    try:
        for (kind, layer), removed in blocks.items():
            block = attention_module(model, kind, layer)
            weight = block.out_proj.weight
            keep = torch.ones(weight.size(1), dtype=weight.dtype, device=weight.device)  # (d_model,)
            for h in removed:
                keep[h * d_k : (h + 1) * d_k] = 0
            fill = torch.zeros_like(keep) if means is None else (1 - keep) * means[kind, layer].to(keep)  # (d_model,)

            def replace(module, args, keep=keep, fill=fill) -> tuple[torch.Tensor]:
                return (args[0] * keep + fill,)  # (B, T, d_model): the removed heads' slices replaced

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


def grid_allowed(model: Transformer) -> bool:
    """Whether a grid of every head of `model` stays within a shared server's bound (MAX_GRID_LAYER_EVALS)."""
    return (len(all_heads(model)) + 1) * model.config.n_layers <= MAX_GRID_LAYER_EVALS


def sample_size(model: Transformer, held_out: Batch, evaluations: int) -> int:
    """How many held-out sequences `evaluations` scorings of `model` may use within GRID_BUDGET (at least
    MIN_SAMPLE, at most all of them)."""
    pad, n = model.config.pad_id, held_out.src.size(0)
    tokens = int((held_out.src != pad).sum() + (held_out.tgt_out != pad).sum()) / n  # per sequence
    affordable = int(GRID_BUDGET / (evaluations * model.num_parameters() * tokens))
    return min(n, max(MIN_SAMPLE, affordable))


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
    with knocked_out(model, heads, means) as probe:
        return _score(probe, batch, vocab)


def _score(model: Transformer, batch: Batch, vocab: Vocab) -> dict[str, float]:
    with torch.inference_mode():
        scores = evaluate(model, batch.to(next(model.parameters()).device), vocab.bos_id, vocab.eos_id)
    return {"exact_match": scores["exact_match"], "token_acc": scores["token_acc"]}


def knockout_grid(
    model: Transformer, vocab: Vocab, task: DataConfig, ablation: Ablation = "zero", n: int | None = None
) -> KnockoutGrid:
    """Held-out scores with each head removed alone, next to the intact model's. `n`: held-out sequences to score;
    None chooses as many as GRID_BUDGET allows (`sample_size`)."""
    heads = all_heads(model)
    batch, means, total = _sample(model, vocab, task, ablation, n, len(heads) + 1)
    probe = twin(model)
    intact, rows = _score(probe, batch, vocab), []
    for head in heads:
        with _removed(probe, [head], means):
            rows.append({"kind": head.kind, "layer": head.layer, "head": head.head, **_score(probe, batch, vocab)})
    grid = pd.DataFrame(rows, columns=list(GRID_COLUMNS))
    return KnockoutGrid(intact, grid, ablation, batch, means, total)


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
    batch, means, total = _sample(model, vocab, task, ablation, n, len(all_heads(model)) + 1)
    return {
        "ablation": ablation,
        "n": batch.src.size(0),
        "n_held_out": total,
        "intact": score(model, batch, vocab),
        "removed": [head.label for head in heads],
        "knocked_out": score(model, batch, vocab, heads, means),
    }


def _sample(model, vocab, task, ablation: Ablation, n: int | None, evaluations: int):
    """The held-out sample to score (n sequences, or as many as `evaluations` scorings may use), the means that
    "mean" removal puts in place of a head (None for "zero"), and the held-out set's size."""
    if ablation not in ABLATIONS:
        raise ValueError(f"ablation must be zero or mean, got {ablation!r:.20}")
    data = TaskData(task, vocab)
    batch = spread_sample(data, sample_size(model, data.valid, evaluations) if n is None else n)
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
