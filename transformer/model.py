"""The encoder-decoder Transformer of "Attention Is All You Need" (Vaswani et al., 2017), one class per concept.

Read top to bottom in the order of the paper: embeddings and positional encoding (3.4, 3.5), scaled dot-product
and multi-head attention (3.2), the position-wise feed-forward network (3.3), the residual + LayerNorm sublayer
connection (5.4 / 3.1), encoder and decoder stacks (3.1), and the generator (3.4). Batch first everywhere.
Masks follow `transformer.masks`: boolean, True = may attend.

What the paper does not describe lives beside it, one idea a module: which attention kernel is faster
(`kernels`), the generator dropout draws from (`dropout`), the keys and values kept while decoding step by step
(`kv_cache`), and the switch to the recurrent baseline (`architectures`).
"""

import math
from dataclasses import asdict, dataclass
from typing import Literal, get_args

import torch
import torch.nn as nn
import torch.nn.functional as F

from .architectures import Architecture
from .config_checks import require_all
from .dropout import dropout, dropout_generator
from .i18n import N_, Message
from .kernels import fused_is_faster, softmax
from .kv_cache import KVCache, extend
from .masks import causal_mask, decoder_mask, padding_mask

Positional = Literal["sinusoidal", "learned", "none"]
# Attention weights by kind ("encoder", "decoder_self", "cross"): one (B, H, T_query, T_key) tensor per layer.
AttentionMaps = dict[str, list[torch.Tensor]]


@dataclass
class ModelConfig:
    """Every size and switch of the model. Defaults are the fast classroom model that solves reverse in seconds."""

    vocab_size: int = 13  # PAD, BOS, EOS + 10 digits
    d_model: int = 32
    n_heads: int = 4
    n_layers: int = 1  # per stack: N encoder layers and N decoder layers
    d_ff: int = 128
    dropout: float = 0.0
    max_len: int = 64  # longest sequence the positional encoding covers (target length includes BOS)
    pad_id: int = 0
    # Teaching switches
    positional: Positional = "sinusoidal"  # "sinusoidal" (the paper's), "learned", or "none"
    norm_first: bool = False  # False: post-norm, LayerNorm(x + Sublayer(x)) as in the paper; True: pre-norm
    causal_mask: bool = True  # False lets the decoder see the future during training
    scale_scores: bool = True  # False drops the 1/sqrt(d_k) in attention
    tie_weights: bool = False  # generator shares the embedding matrix (the paper does)
    architecture: Architecture = "transformer"  # or the recurrent baseline, "gru" / "gru-attention"

    def __post_init__(self) -> None:
        divisible = N_("d_model ({d_model}) must be divisible by n_heads ({n_heads})")
        require_all(
            (self.vocab_size >= 4, Message(N_("vocab_size must be at least 4"))),
            (self.d_model >= 1 and self.n_heads >= 1, Message(N_("d_model and n_heads must be positive"))),
            (
                self.n_heads >= 1 and self.d_model % self.n_heads == 0,
                Message(divisible, d_model=self.d_model, n_heads=self.n_heads),
            ),
            (self.n_layers >= 1 and self.d_ff >= 1, Message(N_("n_layers and d_ff must be positive"))),
            (0.0 <= self.dropout < 1.0, Message(N_("dropout must be in [0, 1)"))),
            (self.max_len >= 2, Message(N_("max_len must be at least 2"))),
            (0 <= self.pad_id < self.vocab_size, Message(N_("pad_id must be a valid token id"))),
            (self.positional in get_args(Positional), Message(N_("positional must be sinusoidal, learned or none"))),
            (
                self.architecture in get_args(Architecture),
                Message(N_("architecture must be transformer, gru or gru-attention")),
            ),
        )

    @property
    def d_k(self) -> int:
        return self.d_model // self.n_heads

    @property
    def longest_sequence(self) -> int:
        """The longest source or target the model reads: the decoder input, BOS + target, must fit max_len."""
        return self.max_len - 1

    def to_dict(self) -> dict:
        return asdict(self)


class Embeddings(nn.Module):
    """Token embedding scaled by sqrt(d_model) (section 3.4)."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.lut = nn.Embedding(config.vocab_size, config.d_model)
        self.scale = math.sqrt(config.d_model)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.lut(ids) * self.scale  # (B, T, d_model)


def sinusoidal_table(max_len: int, d_model: int) -> torch.Tensor:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(...): a (max_len, d_model) table."""
    position = torch.arange(max_len).unsqueeze(1)  # (max_len, 1)
    div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))  # (ceil(d_model/2),)
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(position * div_term)
    table[:, 1::2] = torch.cos(position * div_term[: d_model // 2])
    return table


class PositionalEncoding(nn.Module):
    """Adds position information to the embeddings, then dropout (section 3.5): sinusoidal, learned, or none."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.kind = config.positional
        self.p_drop = config.dropout
        if self.kind == "learned":
            self.learned = nn.Embedding(config.max_len, config.d_model)
        elif self.kind == "sinusoidal":  # a fixed table, rebuilt on load rather than stored in checkpoints
            self.register_buffer("pe", sinusoidal_table(config.max_len, config.d_model), persistent=False)

    def table(self) -> torch.Tensor | None:
        """The (max_len, d_model) encoding added at each position, or None when there is none."""
        if self.kind == "learned":
            return self.learned.weight
        return self.pe if self.kind == "sinusoidal" else None

    def forward(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:
        """x: (B, T, d_model) embeddings of positions start..start+T-1."""
        table = self.table()
        if table is not None:
            x = x + table[start : start + x.size(1)]
        return dropout(x, self.p_drop, self.training)


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    is_causal: bool = False,
    scale: float | None = None,
    dropout_p: float = 0.0,
    need_weights: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V (section 3.2.1).

    q: (B, H, T_q, d_k), k and v: (B, H, T_k, d_k); mask broadcasts to (B, H, T_q, T_k), True = may attend.
    Two paths give the same output: the explicit one computes the formula op by op and can return the
    (B, H, T_q, T_k) weights; the fused `F.scaled_dot_product_attention` kernel never forms them. The explicit
    path runs when `need_weights` is set or when it is the faster one (`fused_is_faster`); the weights come back
    only with `need_weights`, else None. A query whose every key is masked attends to nothing: its weights and its
    output are 0 on both paths (the fused kernel's convention; softmax over no key alone would give 0/0 = NaN).
    """
    scale = 1.0 / math.sqrt(q.size(-1)) if scale is None else scale
    own_rng = dropout_p > 0 and dropout_generator() is not None  # the fused kernel draws globally
    if not need_weights and not own_rng and fused_is_faster(q, k):
        out = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale
        )
        return out, None
    if is_causal:
        mask = causal_mask(q.size(-2), q.device)
    scores = (q @ k.transpose(-2, -1)) * scale  # (B, H, T_q, T_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = softmax(scores)
    if mask is not None and not is_causal:  # a causal mask leaves every query its own position
        weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)  # queries with no key: 0, not NaN
    out = dropout(weights, dropout_p, training=True) @ v  # (B, H, T_q, d_k); dropout_p is 0 in eval mode
    return out, weights if need_weights else None


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1..head_h) W_O, head_i = Attention(Q W_Q_i, K W_K_i, V W_V_i) (3.2.2).

    W_Q, W_K and W_V are stored stacked in one (3 d_model, d_model) projection, the layout of
    `nn.MultiheadAttention`, so self-attention projects Q, K and V in a single matrix multiply. The properties
    `W_Q`, `W_K`, `W_V` and `W_O` show them as the paper's four matrices.
    """

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.n_heads, self.d_k = config.n_heads, config.d_k
        self.in_proj = nn.Linear(config.d_model, 3 * config.d_model)  # [W_Q; W_K; W_V]
        self.out_proj = nn.Linear(config.d_model, config.d_model)  # W_O
        self.p_drop = config.dropout
        self.scale = 1.0 / math.sqrt(self.d_k) if config.scale_scores else 1.0

    @property
    def W_Q(self) -> torch.Tensor:
        return self.in_proj.weight.chunk(3)[0]

    @property
    def W_K(self) -> torch.Tensor:
        return self.in_proj.weight.chunk(3)[1]

    @property
    def W_V(self) -> torch.Tensor:
        return self.in_proj.weight.chunk(3)[2]

    @property
    def W_O(self) -> torch.Tensor:
        return self.out_proj.weight

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, n * d_model) -> (B, n * H, T, d_k): the heads of n side-by-side projections (Q, K, V: n = 3)."""
        B, T, _ = x.shape
        return x.view(B, T, -1, self.d_k).transpose(1, 2)

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        is_causal: bool = False,
        cache: dict[str, torch.Tensor] | None = None,
        need_weights: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Self-attention over x (B, T, d_model), or attention from x to `memory` (B, S, d_model) when given.

        `cache` (decoding one step at a time): self-attention appends this step's keys and values to it;
        cross-attention projects the memory once and reuses it.
        """
        d_model = x.size(-1)
        if memory is None:
            q, k, v = self.split_heads(self.in_proj(x)).chunk(3, dim=1)  # one fused projection, (B, H, T, d_k) each
            if cache is not None:
                k, v = extend(cache, k, v)  # (B, H, t, d_k): the earlier positions' keys and values, then these
        else:
            w, b = self.in_proj.weight, self.in_proj.bias
            q = self.split_heads(F.linear(x, w[:d_model], b[:d_model]))  # (B, H, T, d_k)
            if cache is not None and "k" in cache:
                k, v = cache["k"], cache["v"]
            else:
                kv = F.linear(memory, w[d_model:], b[d_model:])  # (B, S, 2 d_model): K and V side by side
                k, v = self.split_heads(kv).chunk(2, dim=1)  # (B, H, S, d_k) each
                if cache is not None:  # read at every step: contiguous, for the explicit path's matmuls
                    cache["k"], cache["v"] = k.contiguous(), v.contiguous()
        dropout_p = self.p_drop if self.training else 0.0
        y, weights = scaled_dot_product_attention(q, k, v, mask, is_causal, self.scale, dropout_p, need_weights)
        y = y.transpose(1, 2).reshape(x.shape)  # (B, T, d_model): concatenate the heads
        return self.out_proj(y), weights


class PositionwiseFeedForward(nn.Module):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2, applied at each position (section 3.3)."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.w_1 = nn.Linear(config.d_model, config.d_ff)
        self.w_2 = nn.Linear(config.d_ff, config.d_model)
        self.p_drop = config.dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w_2(dropout(F.relu(self.w_1(x)), self.p_drop, self.training))  # (B, T, d_model)


class SublayerConnection(nn.Module):
    """Residual connection and LayerNorm around a sublayer (section 5.4).

    Post-norm (the paper's): LayerNorm(x + Dropout(Sublayer(x))).
    Pre-norm (the Annotated Transformer's): x + Dropout(Sublayer(LayerNorm(x))).
    """

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.norm = nn.LayerNorm(config.d_model)
        self.p_drop = config.dropout
        self.norm_first = config.norm_first

    def forward(self, x: torch.Tensor, sublayer) -> torch.Tensor:
        if self.norm_first:
            return x + dropout(sublayer(self.norm(x)), self.p_drop, self.training)
        return self.norm(x + dropout(sublayer(x), self.p_drop, self.training))


class EncoderLayer(nn.Module):
    """Self-attention, then feed-forward, each wrapped in a SublayerConnection (section 3.1)."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(config)
        self.feed_forward = PositionwiseFeedForward(config)
        self.sublayer = nn.ModuleList([SublayerConnection(config) for _ in range(2)])

    def forward(self, x: torch.Tensor, src_mask: torch.Tensor | None, need_weights: bool = False):
        weights = []
        around_attn, around_ffn = self.sublayer
        x = around_attn(x, lambda y: _keep(weights, self.self_attn(y, mask=src_mask, need_weights=need_weights)))
        return around_ffn(x, self.feed_forward), weights[0]  # (B, S, d_model), (B, H, S, S) or None


class DecoderLayer(nn.Module):
    """Masked self-attention, encoder-decoder (cross) attention, then feed-forward (section 3.1)."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(config)
        self.cross_attn = MultiHeadAttention(config)
        self.feed_forward = PositionwiseFeedForward(config)
        self.sublayer = nn.ModuleList([SublayerConnection(config) for _ in range(3)])

    def forward(self, x, memory, src_mask, tgt_mask, tgt_is_causal=False, cache=None, need_weights=False):
        """x: (B, T, d_model) target states; memory: (B, S, d_model) encoder output."""
        self_cache = cross_cache = None
        if cache is not None:
            self_cache, cross_cache = cache.setdefault("self", {}), cache.setdefault("cross", {})
        weights = []
        around_self, around_cross, around_ffn = self.sublayer  # unpacked once: indexing costs a call per use
        x = around_self(
            x, lambda y: _keep(weights, self.self_attn(y, None, tgt_mask, tgt_is_causal, self_cache, need_weights))
        )
        x = around_cross(
            x, lambda y: _keep(weights, self.cross_attn(y, memory, src_mask, False, cross_cache, need_weights))
        )
        return around_ffn(x, self.feed_forward), weights[0], weights[1]


def _keep(store: list, output_and_weights: tuple[torch.Tensor, torch.Tensor | None]) -> torch.Tensor:
    """Stash a sublayer's attention weights and pass its output on."""
    store.append(output_and_weights[1])
    return output_and_weights[0]


class Encoder(nn.Module):
    """A stack of N encoder layers, with a final LayerNorm when pre-norm leaves the output unnormalized."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.layers = nn.ModuleList([EncoderLayer(config) for _ in range(config.n_layers)])
        self.norm = nn.LayerNorm(config.d_model) if config.norm_first else nn.Identity()

    def forward(self, x, src_mask, need_weights=False) -> tuple[torch.Tensor, list]:
        maps = []
        for layer in self.layers:
            x, w = layer(x, src_mask, need_weights)
            maps.append(w)
        return self.norm(x), maps


class Decoder(nn.Module):
    """A stack of N decoder layers, with a final LayerNorm for pre-norm."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.layers = nn.ModuleList([DecoderLayer(config) for _ in range(config.n_layers)])
        self.norm = nn.LayerNorm(config.d_model) if config.norm_first else nn.Identity()

    def forward(self, x, memory, src_mask, tgt_mask, tgt_is_causal=False, cache=None, need_weights=False):
        self_maps, cross_maps = [], []
        for i, layer in enumerate(self.layers):
            x, w_self, w_cross = layer(
                x, memory, src_mask, tgt_mask, tgt_is_causal, None if cache is None else cache.layers[i], need_weights
            )
            self_maps.append(w_self)
            cross_maps.append(w_cross)
        return self.norm(x), self_maps, cross_maps


class Generator(nn.Module):
    """Final linear projection to vocabulary logits (softmax is left to the loss or the decoder)."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.proj = nn.Linear(config.d_model, config.vocab_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x)  # (B, T, vocab_size)


class Transformer(nn.Module):
    """The encoder-decoder: Transformer(config)(src, tgt) -> logits (B, T, vocab_size).

    src (B, S) and tgt (B, T) are int64 token ids, right-padded with config.pad_id. One embedding matrix is
    shared by source and target (they share a vocabulary), and with the generator when `tie_weights`.
    """

    def __init__(self, config: ModelConfig, rng: torch.Generator | None = None):
        super().__init__()
        self.config = config
        self.embed = Embeddings(config)
        self.positional = PositionalEncoding(config)
        self.encoder = Encoder(config)
        self.decoder = Decoder(config)
        self.generator = Generator(config)
        self.init_weights(rng)
        if config.tie_weights:
            self.generator.proj.weight = self.embed.lut.weight

    @torch.no_grad()
    def init_weights(self, rng: torch.Generator | None = None) -> None:
        """Xavier-uniform for every matrix (as the Annotated Transformer), PyTorch's default U(-1/sqrt(fan_in),
        1/sqrt(fan_in)) for linear biases, LayerNorm at 1 and 0. With `rng` (a run's own generator) every draw comes
        from it, the biases drawn again; without, from PyTorch's process-wide generator."""
        for module in self.modules():
            if rng is not None and isinstance(module, nn.Linear) and module.bias is not None:
                bound = 1 / math.sqrt(module.in_features)
                nn.init.uniform_(module.bias, -bound, bound, generator=rng)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p, generator=rng)

    def src_mask(self, src: torch.Tensor, mask_padding: bool = True) -> torch.Tensor | None:
        """(B, 1, 1, S) padding mask, or None when nothing is padded (the fast kernels then need no mask).

        ValueError for a source made only of padding: its queries would have no key to attend to.
        """
        pad = self.config.pad_id
        if src.size(1) == 0:
            raise ValueError(N_("the source sequences are empty: give every source at least one token"))
        if not mask_padding or not bool((src == pad).any()):
            return None
        mask = padding_mask(src, pad)  # (B, 1, 1, S)
        if not bool(mask.any(dim=-1).all()):
            raise ValueError(N_("a source sequence is only padding: give every source at least one token"))
        return mask

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor | None, need_weights: bool = False):
        """src (B, S) -> memory (B, S, d_model) and the encoder self-attention maps."""
        self._check_length(src)
        return self.encoder(self.positional(self.embed(src)), src_mask, need_weights)

    def decode(
        self,
        tgt: torch.Tensor,
        memory: torch.Tensor,
        src_mask: torch.Tensor | None,
        cache: KVCache | None = None,
        start: int = 0,
        mask_padding: bool = True,
        need_weights: bool = False,
    ):
        """tgt (B, T) at positions start..start+T-1 -> logits (B, T, V), decoder self- and cross-attention maps.

        With a `cache` (from `new_cache`), pass only the newest token(s): past positions are read from the cache, or
        recomputed where it keeps tokens, and no target token is masked as padding (decoding feeds back whatever it
        generated).
        """
        self._check_length(tgt, start)
        if cache is not None and not cache.keeps_states:
            return self._decode_whole_prefix(tgt, memory, src_mask, cache, start, need_weights)
        pad, causal = self.config.pad_id, self.config.causal_mask
        tgt_mask, tgt_is_causal = None, False
        if cache is None:
            if mask_padding and bool((tgt == pad).any()):
                tgt_mask = decoder_mask(tgt, pad, causal)  # (B, 1, T, T)
            elif causal:
                tgt_is_causal = True
        elif causal and tgt.size(1) > 1:  # several new tokens: each sees the cached past and the new ones before it
            tgt_mask = causal_mask(tgt.size(1), tgt.device, past=start)  # (T, start + T)
        x = self.positional(self.embed(tgt), start)
        x, self_maps, cross_maps = self.decoder(x, memory, src_mask, tgt_mask, tgt_is_causal, cache, need_weights)
        return self.generator(x), self_maps, cross_maps

    def _decode_whole_prefix(self, tgt, memory, src_mask, cache: KVCache, start: int, need_weights: bool):
        """`decode` on a cache that keeps tokens (no causal mask): every decoder layer over the whole prefix again,
        no position masked (the encoder's keys and values still come from the cache); the new positions' rows."""
        cache.tokens = tgt if cache.tokens is None else torch.cat([cache.tokens, tgt], dim=1)  # (B, start + T)
        x = self.positional(self.embed(cache.tokens))
        x, self_maps, cross_maps = self.decoder(x, memory, src_mask, None, False, cache, need_weights)
        rows = [m if m is None else m[:, :, start:] for m in self_maps + cross_maps]  # (B, H, T, T_k) or None
        return self.generator(x[:, start:]), rows[: len(self_maps)], rows[len(self_maps) :]

    @property
    def cache_is_exact(self) -> bool:
        """Whether cached keys and values of past target positions stay what the whole prefix gives (see `KVCache`)."""
        return self.config.causal_mask or self.config.n_layers == 1

    @property
    def token_embeddings(self) -> torch.Tensor:
        """The embedding table, one row per token of the vocabulary: (vocab_size, d_model)."""
        return self.embed.lut.weight

    def new_cache(self) -> KVCache:
        """An empty cache for step-by-step decoding: keys and values where that is exact, else the tokens."""
        return KVCache(len(self.decoder.layers), self.cache_is_exact)

    def forward(
        self, src: torch.Tensor, tgt: torch.Tensor, return_attention: bool = False, mask_padding: bool = True
    ) -> torch.Tensor | tuple[torch.Tensor, AttentionMaps]:
        """Teacher-forced logits (B, T, V); with `return_attention`, also every layer's and head's weights."""
        self.check_ids(src, "src")
        self.check_ids(tgt, "tgt")
        src_mask = self.src_mask(src, mask_padding)
        memory, enc_maps = self.encode(src, src_mask, return_attention)
        logits, self_maps, cross_maps = self.decode(
            tgt, memory, src_mask, mask_padding=mask_padding, need_weights=return_attention
        )
        if not return_attention:
            return logits
        return logits, {"encoder": enc_maps, "decoder_self": self_maps, "cross": cross_maps}

    def _check_length(self, ids: torch.Tensor, start: int = 0) -> None:
        if ids.dim() != 2 or ids.dtype != torch.long:
            raise ValueError(f"expected int64 token ids of shape (B, T), got {tuple(ids.shape)} {ids.dtype}")
        if start + ids.size(1) > self.config.max_len:
            too_long = N_("sequence of length {length} exceeds the model's max_len {max_len}")
            raise ValueError(Message(too_long, length=start + ids.size(1), max_len=self.config.max_len))

    def check_ids(self, ids: torch.Tensor, name: str = "ids") -> None:
        """ValueError unless `ids` is an int64 (B, T) tensor of token ids that this model can read."""
        self._check_length(ids)
        n = self.config.vocab_size
        if ids.numel() and bool(((ids < 0) | (ids >= n)).any()):
            low, high = int(ids.min()), int(ids.max())
            unknown = N_("{name} holds token ids from {low} to {high}; this model reads 0 to {top}")
            raise ValueError(Message(unknown, name=name, low=low, high=high, top=n - 1))

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


class NonFiniteOutputError(ValueError):
    """The model computed NaN or infinity where a next-token distribution should be: its weights are finite but
    large enough (or broken enough) that its outputs overflow, so there is nothing to decode or score."""


def check_finite(scores: torch.Tensor) -> torch.Tensor:
    """`scores` (logits or probabilities) unchanged, or NonFiniteOutputError if any is NaN or infinite."""
    if not bool(torch.isfinite(scores).all()):
        raise NonFiniteOutputError(
            N_(
                "the model's outputs are not finite numbers (NaN or infinity), so they are no next-token "
                "distribution: its weights are too large for float32"
            )
        )
    return scores
