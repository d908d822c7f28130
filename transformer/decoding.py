"""Decoding: turning the model's next-token distributions into output sequences.

Batched `greedy_decode`; `beam_search` for one source; `decode_steps` / `decode_all_steps`,
one `DecodeStep` record per generated token for the dashboard; and `teacher_forced` predictions.

Every function encodes the source once and runs the decoder one token per step on the model's `KVCache`, which
keeps past keys and values where that is exact and otherwise has each step recompute the whole prefix. Decoding
runs under `torch.no_grad()` with the model switched to eval mode (no dropout), and each module's own mode is
restored afterwards; the step generators restore it between steps, so the caller never sees the switch. A model
whose outputs are NaN or infinite raises `NonFiniteOutputError` (a ValueError) rather than decoding garbage.
"""

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import torch

from .i18n import N_, Message
from .limits import SAMPLING_TEMPERATURES
from .model import Transformer, check_finite

Strategy = Literal["greedy", "sample", "beam"]
Pick = Callable[[torch.Tensor], torch.Tensor]  # next-token logits (B, V) -> chosen ids (B,)
T = TypeVar("T")


@dataclass
class Beam:
    """One beam-search hypothesis kept at a step: a node of the beam tree."""

    tokens: list[int]  # BOS, then every token so far, this step's last
    score: float  # cumulative log-probability: sum of log p(token | prefix) over tokens[1:]
    parent: int  # index into the previous step's `beams` (0 at step 0: the lone BOS root)
    finished: bool  # ends with EOS: set aside, never extended


@dataclass
class DecodeStep:
    """Everything the dashboard shows for one generated token.

    For beam search, `prefix`, `probs`, `token` and the attention maps follow the best hypothesis of this step.
    """

    step: int  # 0 for the first generated token
    prefix: list[int]  # decoder input so far: BOS, then the tokens before this step
    probs: torch.Tensor  # (V,) the model's next-token distribution after `prefix` (before temperature and top-k)
    token: int  # the id chosen at this step
    cross_attention: list[torch.Tensor]  # per layer (H, S): this step's query over the source (PAD weight 0)
    self_attention: list[torch.Tensor]  # per layer (H, len(prefix)): this step's query over the prefix
    beams: list[Beam] = field(default_factory=list)  # beam search only: live hypotheses first, then finished


# ---------------------------------------------------------------------------------------------- public API


def greedy_decode(model: Transformer, src: torch.Tensor, bos_id: int, eos_id: int, max_len: int) -> torch.Tensor:
    """Batched greedy decoding: (B, S) source ids -> (B, <= max_len) output ids, BOS dropped, PAD after EOS.

    Stops when every sequence has produced EOS, or after `max_len` tokens.
    """
    max_len = _check_args(model, src, bos_id, eos_id, max_len)
    with _inference(model):
        tokens = [token for _, token, _, _ in _generate(model, src, bos_id, eos_id, max_len, _argmax, False)]
    out = torch.stack(tokens, dim=1)  # (B, T)
    is_eos = (out == eos_id).long()
    after_eos = is_eos.cumsum(dim=1) - is_eos > 0  # (B, T) an EOS came earlier in the row
    return out.masked_fill(after_eos, model.config.pad_id)


def sampling_probs(logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None) -> torch.Tensor:
    """softmax(logits / temperature) over the `top_k` most likely tokens only (all when None): (..., V) -> (..., V).

    Exactly `top_k` tokens are kept; among tokens tied at the k-th largest logit, those `torch.topk` picks.
    NonFiniteOutputError if the logits are not finite.
    """
    _check_sampling(temperature, top_k)
    logits = logits / temperature
    if top_k is not None and top_k < logits.size(-1):
        top = logits.topk(top_k, dim=-1).indices  # (..., k)
        kept = torch.zeros_like(logits, dtype=torch.bool).scatter_(-1, top, True)  # (..., V)
        logits = logits.masked_fill(~kept, float("-inf"))
    return check_finite(logits.softmax(dim=-1))


def beam_search(
    model: Transformer,
    src: torch.Tensor,
    bos_id: int,
    eos_id: int,
    max_len: int,
    beam_width: int = 4,
    length_penalty: float = 0.0,
) -> tuple[list[int], float]:
    """Beam search for one source (1, S) -> (best output ids, BOS dropped, EOS kept; its summed log-probability).

    Keeps the `beam_width - n_finished` best live hypotheses at each step; one that ends with EOS is set aside
    as finished. Stops when `beam_width` hypotheses have finished, after `max_len` tokens (the live ones then
    compete too), or, with no length penalty, once a finished hypothesis scores at least as well as every live
    one (a live score can only fall, so none of them can win any more). The best hypothesis maximizes
    score / n_tokens ** length_penalty: 0 (the default) ranks by the plain summed log-probability, larger values
    favour longer outputs. The returned score is always the plain sum. beam_width=1 is greedy decoding.
    """
    max_len = _check_args(model, src, bos_id, eos_id, max_len, single=True)
    _check_beam(beam_width)
    candidates, beams = [], []
    steps = _beam_search_steps(model, src, bos_id, eos_id, max_len, beam_width, False, length_penalty == 0)
    for *_, beams in _run(model, steps):
        candidates += [b for b in beams if b.finished]
    candidates += [b for b in beams if not b.finished]  # still live at max_len
    best = max(candidates, key=lambda b: b.score / (len(b.tokens) - 1) ** length_penalty)
    return best.tokens[1:], best.score


def decode_steps(
    model: Transformer,
    src: torch.Tensor,
    bos_id: int,
    eos_id: int,
    max_len: int,
    strategy: Strategy = "greedy",
    temperature: float = 1.0,
    top_k: int | None = None,
    beam_width: int = 3,
    seed: int = 0,
) -> Iterator[DecodeStep]:
    """One `DecodeStep` per generated token of one source (1, S), ending after EOS or `max_len` tokens.

    "greedy" and "sample" (temperature, top_k, seeded by `seed`) follow one path and end when it emits EOS;
    "beam" (beam_width) ends when `beam_search` does. Arguments are checked at the call, not at the first step.
    """
    max_len = _check_args(model, src, bos_id, eos_id, max_len, single=True)
    if strategy == "greedy":
        steps = _path_steps(model, src, bos_id, eos_id, max_len, _argmax)
    elif strategy == "sample":
        _check_sampling(temperature, top_k)
        generator = torch.Generator(device=src.device).manual_seed(seed)
        steps = _path_steps(model, src, bos_id, eos_id, max_len, _sampler(temperature, top_k, generator))
    elif strategy == "beam":
        _check_beam(beam_width)
        steps = _beam_decode_steps(model, src, bos_id, eos_id, max_len, beam_width)
    else:
        raise ValueError(f"strategy must be 'greedy', 'sample' or 'beam', got {strategy!r}")
    return _run(model, steps)


def decode_all_steps(*args: Any, **kwargs: Any) -> list[DecodeStep]:
    """Every step of `decode_steps` at once: the same arguments, a list of `DecodeStep`s."""
    return list(decode_steps(*args, **kwargs))


def teacher_forced(model: Transformer, src: torch.Tensor, tgt_ids: Sequence[int] | torch.Tensor) -> list[int]:
    """The argmax prediction after each prefix of the true decoder input.

    src: (1, S); tgt_ids: BOS then the reference tokens (like `Batch.tgt_in`). Prediction i follows tgt_ids[: i + 1],
    so the list lines up with the reference tokens followed by EOS (like `Batch.tgt_out`).
    """
    _check_src(model, src, single=True)
    tgt = torch.as_tensor(tgt_ids, dtype=torch.long, device=src.device).reshape(1, -1)  # (1, T)
    if tgt.size(1) == 0:
        raise ValueError("tgt_ids is empty: it needs at least BOS")
    with _inference(model):
        logits = check_finite(model(src, tgt))  # (1, T, V)
    return logits[0].argmax(dim=-1).tolist()


# ------------------------------------------------------------------------------------------- decoding loops


def _generate(model, src, bos_id, eos_id, max_len, pick: Pick, need_weights: bool):
    """Yield (logits (B, V), tokens (B,), self maps, cross maps) per step until every row has emitted EOS."""
    memory, src_mask = _encode(model, src)
    cache = model.new_cache()
    token = torch.full((src.size(0),), bos_id, dtype=torch.long, device=src.device)  # (B,)
    done = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
    for step in range(max_len):
        logits, self_maps, cross_maps = model.decode(
            token[:, None], memory, src_mask, cache, start=step, need_weights=need_weights
        )
        logits = check_finite(logits[:, -1])  # (B, V)
        token = pick(logits)  # (B,)
        yield logits, token, self_maps, cross_maps
        done |= token == eos_id
        if bool(done.all()):
            return


def _path_steps(model, src, bos_id, eos_id, max_len, pick: Pick) -> Iterator[DecodeStep]:
    """Greedy or sampled `DecodeStep`s of the single row in src (1, S)."""
    prefix = [bos_id]
    steps = _generate(model, src, bos_id, eos_id, max_len, pick, True)
    for step, (logits, token, self_maps, cross_maps) in enumerate(steps):
        yield _record(step, prefix, int(token[0]), logits, self_maps, cross_maps, row=0)
        prefix.append(int(token[0]))


def _beam_search_steps(model, src, bos_id, eos_id, max_len, beam_width: int, need_weights: bool, stop_early: bool):
    """Yield (logits (K, V), self maps, cross maps, beams) per step; rows are the K live beams of the step before.

    `beams` lists the hypotheses kept at this step, live ones first so that live beam i is cache row i next.
    `stop_early`: end once the best finished score is at least every live score (right for plain summed scores).
    """
    memory, src_mask = _encode(model, src)
    cache = model.new_cache()
    live, n_finished, best_finished = [Beam([bos_id], 0.0, 0, False)], 0, float("-inf")
    for step in range(max_len):
        last = torch.tensor([[b.tokens[-1]] for b in live], device=src.device)  # (K, 1)
        logits, self_maps, cross_maps = model.decode(
            last, memory, src_mask, cache, start=step, need_weights=need_weights
        )
        logits = check_finite(logits[:, -1])  # (K, V)
        past = torch.tensor([[b.score] for b in live], device=src.device)  # (K, 1)
        scores = (past + logits.log_softmax(dim=-1)).flatten()  # (K * V,) every one-token extension
        top, flat = scores.topk(min(beam_width - n_finished, scores.numel()))  # best first
        rows, tokens = (flat // logits.size(1)).tolist(), (flat % logits.size(1)).tolist()
        beams = [Beam(live[r].tokens + [t], s, r, t == eos_id) for s, r, t in zip(top.tolist(), rows, tokens)]
        beams.sort(key=lambda b: b.finished)  # stable: live first, each group still best first
        yield logits, self_maps, cross_maps, beams
        live = [b for b in beams if not b.finished]
        n_finished += len(beams) - len(live)
        best_finished = max([best_finished] + [b.score for b in beams if b.finished])
        if not live or (stop_early and best_finished >= live[0].score):
            return
        cache.reorder(torch.tensor([b.parent for b in live], device=src.device))


def _beam_decode_steps(model, src, bos_id, eos_id, max_len, beam_width) -> Iterator[DecodeStep]:
    """Beam-search `DecodeStep`s, following the best hypothesis of each step."""
    steps = _beam_search_steps(model, src, bos_id, eos_id, max_len, beam_width, True, stop_early=True)
    for step, (logits, self_maps, cross_maps, beams) in enumerate(steps):
        best = max(beams, key=lambda b: b.score)
        yield _record(step, best.tokens[:-1], best.tokens[-1], logits, self_maps, cross_maps, best.parent, beams)


def _record(step, prefix, token, logits, self_maps, cross_maps, row: int, beams=()) -> DecodeStep:
    """A `DecodeStep` from batch row `row` of one step's logits (K, V) and attention maps (K, H, 1, T_k)."""
    return DecodeStep(
        step=step,
        prefix=list(prefix),
        probs=logits[row].softmax(dim=-1).cpu(),  # (V,)
        token=token,
        cross_attention=[m[row, :, -1].cpu() for m in cross_maps],  # per layer (H, S)
        self_attention=[m[row, :, -1].cpu() for m in self_maps],  # per layer (H, len(prefix))
        beams=list(beams),
    )


# ------------------------------------------------------------------------------------------------- helpers


def _encode(model: Transformer, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
    """src (B, S) -> memory (B, S, d_model) and its padding mask."""
    src_mask = model.src_mask(src)
    memory, _ = model.encode(src, src_mask)
    return memory, src_mask


def _argmax(logits: torch.Tensor) -> torch.Tensor:
    return logits.argmax(dim=-1)  # (B,)


def _sampler(temperature: float, top_k: int | None, generator: torch.Generator) -> Pick:
    """A `Pick` that draws each row's token from `sampling_probs`."""
    return lambda logits: torch.multinomial(sampling_probs(logits, temperature, top_k), 1, generator=generator)[:, 0]


@contextmanager
def _inference(model: Transformer):
    """Eval mode and no autograd inside the block; every module's own mode comes back after it."""
    training = [m for m in model.modules() if m.training]  # usually none: models in hand are in eval mode
    for m in training:
        m.training = False
    try:
        with torch.inference_mode():
            yield
    finally:
        for m in training:
            m.training = True


def _run(model: Transformer, steps: Iterator[T]) -> Iterator[T]:
    """Advance `steps` one item at a time under `_inference`, giving the caller its own modes between items."""
    while True:
        with _inference(model):
            item = next(steps, None)
        if item is None:
            return
        yield item


# ------------------------------------------------------------------------------------------ argument checks


def _check_args(model, src, bos_id, eos_id, max_len: int, single: bool = False) -> int:
    """Validate the shared arguments; returns max_len clamped to the model's positions.

    Generating n tokens feeds BOS and the first n - 1 of them to the decoder: n positions, so up to max_len.
    """
    _check_src(model, src, single)
    vocab = model.config.vocab_size
    for name, i in (("bos_id", bos_id), ("eos_id", eos_id)):
        if not 0 <= i < vocab:
            raise ValueError(f"{name} must be a token id in [0, {vocab}), got {i}")
    if max_len < 1:
        raise ValueError(f"max_len must be at least 1, got {max_len}")
    return min(max_len, model.config.max_len)


def _check_src(model: Transformer, src: torch.Tensor, single: bool = False) -> None:
    if not isinstance(src, torch.Tensor) or src.dim() != 2 or src.dtype != torch.long:
        got = f"{tuple(src.shape)} {src.dtype}" if isinstance(src, torch.Tensor) else type(src).__name__
        raise ValueError(f"src must be an int64 tensor of token ids of shape (B, S), got {got}")
    if src.numel() == 0:
        raise ValueError(f"src is empty: shape {tuple(src.shape)}")
    if src.size(1) > model.config.max_len:
        too_long = N_("src length {length} exceeds the model's max_len {max_len}")
        raise ValueError(Message(too_long, length=src.size(1), max_len=model.config.max_len))
    model.check_ids(src, "src")
    if not bool((src != model.config.pad_id).any(dim=1).all()):
        raise ValueError(N_("every src row needs at least one non-PAD token"))
    if single and src.size(0) != 1:
        raise ValueError(f"this decoder takes one source of shape (1, S), got batch size {src.size(0)}")


def _check_sampling(temperature: float, top_k: int | None) -> None:
    low, high = SAMPLING_TEMPERATURES
    if isinstance(temperature, bool) or not isinstance(temperature, int | float) or not low <= temperature <= high:
        raise ValueError(f"temperature must be from {low} to {high}, got {str(temperature)[:20]}")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
        raise ValueError(f"top_k must be None or an integer >= 1, got {top_k!r}")


def _check_beam(beam_width: int) -> None:
    if isinstance(beam_width, bool) or not isinstance(beam_width, int) or beam_width < 1:
        raise ValueError(f"beam_width must be an integer >= 1, got {beam_width!r}")
