"""What the masks are for: each mask as a grid, attention with and without its masks, and two experiments that change
an input where a mask should hide the change (a later target token, more padding), with the mask and without it.
UI-free: tensors and pandas DataFrames in and out; the model passed in is never changed (see `inspection.twin`).
"""

from dataclasses import dataclass

import pandas as pd
import torch
import torch.nn.functional as F

from .i18n import N_, Message
from .inspection import ATTENTION_KINDS, attention_module, model_device, twin
from .masks import causal_mask, decoder_mask, padding_mask
from .model import AttentionMaps, MultiHeadAttention, Transformer
from .tasks import DataConfig, task_of
from .vocab import Vocab

CHANGED_TOLERANCE = 1e-5  # relative to the values' size: above it a difference is a change, not float32 rounding


def mask_grids(src: torch.Tensor, tgt: torch.Tensor, pad_id: int) -> dict[str, torch.Tensor]:
    """The masks of row 0 of a (src, tgt) batch as (queries, keys) grids, True = may attend:
    "padding" (encoder self-attention, S x S), "causal" (T x T), "combined" (decoder self-attention, T x T) and
    "cross" (T x S)."""
    S, T = src.size(1), tgt.size(1)
    src_keys = padding_mask(src, pad_id)[0, 0]  # (1, S)
    return {
        "padding": src_keys.expand(S, S),
        "causal": causal_mask(T),
        "combined": decoder_mask(tgt, pad_id, causal=True)[0, 0],
        "cross": src_keys.expand(T, S),
    }


@dataclass
class MaskedAttention:
    """Attention weights of every layer and head, per kind, (B, H, T_q, T_k) each, with and without the masks."""

    masked: AttentionMaps  # the model's own weights, masks applied
    unmasked: AttentionMaps  # softmax(Q K^T * scale) of the same queries and keys, no padding or causal mask


def attention_before_after(model: Transformer, src: torch.Tensor, tgt: torch.Tensor) -> MaskedAttention:
    """The model's attention weights on (src, tgt), and the same scores softmaxed without any mask.

    "Unmasked" is recomputed from the very queries and keys of the masked forward pass (each attention block's
    input is captured by a hook), not by running the model again without masks, which would change every later
    layer's input too. So unmasked weights restricted to the allowed keys and renormalized equal the masked ones.
    """
    probe = twin(model)
    inputs: dict[str, list] = {kind: [] for kind in ATTENTION_KINDS}
    handles = []
    for kind in ATTENTION_KINDS:
        for layer in range(model.config.n_layers):

            def record(module, args, kwargs, output, kind=kind):
                memory = args[1] if len(args) > 1 else kwargs.get("memory")
                inputs[kind].append(_unmasked_weights(module, args[0], memory))

            block = attention_module(probe, kind, layer)
            handles.append(block.register_forward_hook(record, with_kwargs=True))
    try:
        with torch.no_grad():
            _, maps = probe(src.to(model_device(probe)), tgt.to(model_device(probe)), return_attention=True)
    finally:
        for handle in handles:
            handle.remove()
    return MaskedAttention(maps, inputs)


def _unmasked_weights(block: MultiHeadAttention, x: torch.Tensor, memory: torch.Tensor | None) -> torch.Tensor:
    """softmax(Q K^T * scale) for queries from x (B, T, d) and keys from memory (or x): (B, H, T, T_k)."""
    d_model = x.size(-1)
    bias = block.in_proj.bias
    q = block.split_heads(F.linear(x, block.W_Q, bias[:d_model]))
    k = block.split_heads(F.linear(x if memory is None else memory, block.W_K, bias[d_model : 2 * d_model]))
    return ((q @ k.transpose(-2, -1)) * block.scale).softmax(dim=-1)


# ----------------------------------------------------------------------------------- masking experiments


@dataclass
class MaskingResult:
    """Outputs before and after a change to the input, once with the mask in question and once without it.

    Each table has one row per compared position: position, input token, output before / after (argmax token
    and its probability), the largest difference of `measure` there, and whether it changed.
    """

    description: Message  # what was changed, e.g. "decoder input position 3: 4 → 5"
    measure: str  # "probability" or "logit" (marked with N_): what `max |Δ|` compares
    with_mask: pd.DataFrame
    without_mask: pd.DataFrame

    @staticmethod
    def max_diff(table: pd.DataFrame) -> float:
        return float(table["max |Δ|"].max())

    @staticmethod
    def n_changed(table: pd.DataFrame) -> int:
        return int(table["changed?"].sum())


def _diff_table(
    vocab: Vocab, tokens: list[int], before: torch.Tensor, after: torch.Tensor, logits: bool
) -> pd.DataFrame:
    """Compare (T, V) logits position by position; `logits` picks what the difference measures."""
    p_before, p_after = before.softmax(-1), after.softmax(-1)
    diff = ((after - before) if logits else (p_after - p_before)).abs().amax(dim=-1)
    scale = before.abs().amax(dim=-1).clamp(min=1.0) if logits else 1.0  # confident models have logits of 20 and more
    out_before, out_after = p_before.argmax(-1), p_after.argmax(-1)
    return pd.DataFrame(
        {
            "position": range(len(tokens)),
            "input token": vocab.tokens(tokens),
            "output before": vocab.tokens(out_before.tolist()),
            "p before": p_before.gather(-1, out_before[:, None])[:, 0].tolist(),
            "output after": vocab.tokens(out_after.tolist()),
            "p after": p_after.gather(-1, out_after[:, None])[:, 0].tolist(),
            "max |Δ|": diff.tolist(),
            "changed?": (diff > CHANGED_TOLERANCE * scale).tolist(),
        }
    )


def _logits(model: Transformer, src: list[int], tgt: list[int], mask_padding: bool = True) -> torch.Tensor:
    """(T, V) logits of one source and decoder input."""
    device = model_device(model)
    with torch.no_grad():
        return model(torch.tensor([src], device=device), torch.tensor([tgt], device=device), mask_padding=mask_padding)[
            0
        ]


def _check_pair(model: Transformer, src_ids: list[int], tgt_ids: list[int], extra: int = 0) -> None:
    longest = max(len(src_ids), len(tgt_ids) + 1) + extra  # the decoder input has BOS
    if not src_ids or not tgt_ids:
        raise ValueError(N_("type a source and a target with at least one symbol each"))
    if longest > model.config.max_len:
        too_long = N_("{longest} positions do not fit this model's max_len {max_len}: use fewer")
        raise ValueError(Message(too_long, longest=longest, max_len=model.config.max_len))


def peek_at_future(
    model: Transformer, vocab: Vocab, task: DataConfig, src_ids: list[int], tgt_ids: list[int], change_at: int
) -> MaskingResult:
    """Change the decoder input at position `change_at` (1 = the first target token; 0 is BOS) to the next symbol
    a target of `task` can hold, and compare the output distributions at every earlier position: with the causal mask
    on, then off (twins of the model with its weights). Differences are in probability."""
    _check_pair(model, src_ids, tgt_ids)
    tgt_in = [vocab.bos_id, *tgt_ids]
    if not 1 <= change_at < len(tgt_in):
        problem = N_("change position must be in 1..{top}, got {got}")
        raise ValueError(Message(problem, top=len(tgt_in) - 1, got=change_at))
    changed = list(tgt_in)
    old = changed[change_at]
    changed[change_at] = vocab.symbol_id(_next_target_symbol(task, vocab.symbol_index(old)))
    tables = []
    causal = model if model.config.causal_mask else twin(model, causal_mask=True)
    for m in (causal, twin(model, causal_mask=False)):
        before, after = _logits(m, src_ids, tgt_in), _logits(m, src_ids, changed)
        tables.append(_diff_table(vocab, tgt_in[:change_at], before[:change_at], after[:change_at], logits=False))
    old_token, new_token = vocab.tokens([old, changed[change_at]])
    changed_at = N_("decoder input position {position}: {old} → {new}")
    what = Message(changed_at, position=change_at, old=old_token, new=new_token)
    return MaskingResult(what, N_("probability"), *tables)


def _next_target_symbol(task: DataConfig, symbol: int) -> int:
    """The symbol after `symbol` among those a target of `task` can hold, round to the first after the last;
    ValueError when they are `symbol` alone."""
    others = [s for s in task_of(task).target_symbols(task.n_symbols) if s != symbol]
    if not others:
        raise ValueError(N_("the task's targets hold no other symbol to change this one into"))
    return min((s for s in others if s > symbol), default=others[0])


def pad_more(model: Transformer, vocab: Vocab, src_ids: list[int], tgt_ids: list[int], extra: int) -> MaskingResult:
    """Append `extra` PAD tokens to the source and to the decoder input, and compare the logits at the real
    positions: with the padding masks (the model's normal forward), then with `mask_padding=False`."""
    if extra < 1:
        raise ValueError(Message(N_("add at least one PAD, got {got}"), got=extra))
    _check_pair(model, src_ids, tgt_ids, extra)
    tgt_in = [vocab.bos_id, *tgt_ids]
    pads = [vocab.pad_id] * extra
    before = _logits(model, src_ids, tgt_in)
    T = len(tgt_in)
    tables = [
        _diff_table(vocab, tgt_in, before, _logits(model, src_ids + pads, tgt_in + pads, mask)[:T], logits=True)
        for mask in (True, False)
    ]
    what = Message(N_("{extra} PAD appended to the source and to the decoder input"), extra=extra)
    return MaskingResult(what, N_("logit"), *tables)
