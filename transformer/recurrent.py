"""The recurrent baseline the Transformer replaced: the RNN encoder-decoder of Cho et al. (2014), with or without
the additive attention of Bahdanau et al. (2014, "RNNsearch"), one class per concept.

Sizes come from `ModelConfig`: the embedding size m, the hidden size n, the alignment size n' and the maxout size l
of the papers are all `d_model`; `architecture` picks the model ("gru": a fixed summary of the source,
"gru-attention": additive attention over it). Heads, layers, d_ff, dropout and the teaching switches are the
Transformer's own and are not read here. The model offers the interface the trainer and greedy decoding use
(`encode`, `decode` with a cache from `new_cache`, `forward(src, tgt)`), so both architectures train and are
scored the same way. `build_model` is the one place that picks a model class from a config.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

from .architectures import RECURRENT
from .i18n import N_
from .masks import padding_mask
from .model import AttentionMaps, ModelConfig, Transformer


class GRUCell(nn.Module):
    """The gated recurrent unit (Cho et al. 2014, section 2.3), one step, as `torch.nn.GRU` computes it:

        r  = σ(W_r x + b_ir + U_r h + b_hr)          reset gate
        z  = σ(W_z x + b_iz + U_z h + b_hz)          update gate
        h~ = tanh(W x + b_in + r ⊙ (U h + b_hn))     candidate state
        h' = (1 - z) ⊙ h~ + z ⊙ h

    Cho et al. reset h before the product, U (r ⊙ h); PyTorch and cuDNN reset after it, r ⊙ (U h), which lets
    U h for all three gates be one matrix multiply. The weights are laid out as nn.GRU's, [W_r; W_z; W] and
    [U_r; U_z; U], so they copy across.
    """

    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.weight_ih = nn.Parameter(torch.empty(3 * hidden_size, input_size))  # [W_r; W_z; W]
        self.weight_hh = nn.Parameter(torch.empty(3 * hidden_size, hidden_size))  # [U_r; U_z; U]
        self.bias_ih = nn.Parameter(torch.zeros(3 * hidden_size))
        self.bias_hh = nn.Parameter(torch.zeros(3 * hidden_size))

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        """x (B, input_size), h (B, hidden_size) -> the next state (B, hidden_size)."""
        x_r, x_z, x_n = F.linear(x, self.weight_ih, self.bias_ih).chunk(3, dim=-1)  # (B, n) each
        h_r, h_z, h_n = F.linear(h, self.weight_hh, self.bias_hh).chunk(3, dim=-1)  # (B, n) each
        r, z = torch.sigmoid(x_r + h_r), torch.sigmoid(x_z + h_z)
        candidate = torch.tanh(x_n + r * h_n)
        return (1 - z) * candidate + z * h


def unroll(cell: GRUCell, x: torch.Tensor, mask: torch.Tensor, backward: bool = False) -> torch.Tensor:
    """Run `cell` over x (B, S, input_size) from a zero state, last to first when `backward`: the states (B, S, n).

    Where mask (B, S) is False (padding) the state is carried over unchanged, so a right-padded sequence reads as
    if it ended at its last token: going forward the padding repeats the final state, going backward the state is
    still zero when the first real token comes.
    """
    h = x.new_zeros(x.size(0), cell.weight_hh.size(1))  # (B, n)
    states = [h] * x.size(1)
    for j in reversed(range(x.size(1))) if backward else range(x.size(1)):
        h = torch.where(mask[:, j, None], cell(x[:, j], h), h)
        states[j] = h
    return torch.stack(states, dim=1)  # (B, S, n)


class Encoder(nn.Module):
    """A bidirectional RNN (Bahdanau et al. 2014, section 3.2): the annotation of source token j is
    h_j = [→h_j; ←h_j], the forward state having read x_1..x_j and the backward one x_j..x_S."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.forward_rnn = GRUCell(config.d_model, config.d_model)
        self.backward_rnn = GRUCell(config.d_model, config.d_model)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """x (B, S, m) embedded source, mask (B, S) True at real tokens -> annotations (B, S, 2n)."""
        return torch.cat([unroll(self.forward_rnn, x, mask), unroll(self.backward_rnn, x, mask, backward=True)], -1)


class AdditiveAttention(nn.Module):
    """The alignment model (Bahdanau et al. 2014, section 3.1 and appendix A.1.2):

        e_ij = v_a^T tanh(W_a s_{i-1} + U_a h_j),   α_ij = softmax_j(e_ij),   c_i = Σ_j α_ij h_j

    a small feed-forward network scoring how well decoder state s_{i-1} matches each annotation h_j.
    """

    def __init__(self, state_size: int, annotation_size: int, alignment_size: int):
        super().__init__()
        self.W_a = nn.Linear(state_size, alignment_size, bias=False)
        self.U_a = nn.Linear(annotation_size, alignment_size, bias=False)
        self.v_a = nn.Linear(alignment_size, 1, bias=False)

    def keys(self, annotations: torch.Tensor) -> torch.Tensor:
        """U_a h_j for every source token, (B, S, 2n) -> (B, S, n'): it does not depend on i, so computed once."""
        return self.U_a(annotations)

    def forward(
        self, s: torch.Tensor, keys: torch.Tensor, annotations: torch.Tensor, mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """s (B, n) state s_{i-1}, keys (B, S, n') from `keys`, annotations (B, S, 2n), mask (B, S) True at real
        tokens -> context c_i (B, 2n) and weights α_i (B, S), 0 at padding."""
        e = self.v_a(torch.tanh(self.W_a(s)[:, None] + keys)).squeeze(-1)  # (B, S)
        alpha = e.masked_fill(~mask, float("-inf")).softmax(dim=-1)  # (B, S)
        return (alpha[:, None] @ annotations).squeeze(1), alpha  # (B, 2n), (B, S)


class DeepOutput(nn.Module):
    """The output layer with a maxout hidden layer (Bahdanau et al. 2014, appendix A.2.2; Cho et al. 2014, A.1.1):
    t~_i = U_o s_i + V_o E y_{i-1} + C_o c_i, t_i = max(t~_i,2j-1, t~_i,2j) over pairs, logits = W_o t_i."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        d = config.d_model
        self.hidden = nn.Linear(d + d + 2 * d, 2 * d)  # [U_o V_o C_o]: from [s_i; E y_{i-1}; c_i]
        self.W_o = nn.Linear(d, config.vocab_size)

    def forward(self, s: torch.Tensor, y: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        """s (B, T, n), y (B, T, m), c (B, T, 2n) -> logits (B, T, V)."""
        t = self.hidden(torch.cat([s, y, c], dim=-1)).unflatten(-1, (-1, 2)).amax(dim=-1)  # (B, T, l) maxout
        return self.W_o(t)


class Decoder(nn.Module):
    """s_i = GRU([E y_{i-1}; c_i], s_{i-1}) from s_0 = tanh(W_s ←h_1) (Bahdanau et al. 2014, appendix A.2.2).

    With attention, c_i = AdditiveAttention(s_{i-1}, h); without, every c_i is the same fixed summary of the
    source, c = [→h_S; ←h_1], the encoder's last states in each direction (Cho et al. 2014, section 2.2).
    """

    def __init__(self, config: ModelConfig, attention: bool):
        super().__init__()
        d = config.d_model
        self.W_s = nn.Linear(d, d)
        self.attention = AdditiveAttention(d, 2 * d, d) if attention else None
        self.rnn = GRUCell(d + 2 * d, d)
        self.output = DeepOutput(config)

    def start(self, annotations: torch.Tensor) -> dict[str, torch.Tensor]:
        """What decoding a source needs before its first step, from annotations (B, S, 2n): the state s_0 (B, n)
        and the keys U_a h_j (B, S, n') with attention, else the summary c (B, 2n)."""
        d = annotations.size(-1) // 2
        start = {"s": torch.tanh(self.W_s(annotations[:, 0, d:]))}  # ←h_1: the backward pass ends on token 1
        if self.attention is not None:
            start["keys"] = self.attention.keys(annotations)
        else:  # going forward, padding carries the last real token's state to position S
            start["c"] = torch.cat([annotations[:, -1, :d], annotations[:, 0, d:]], dim=-1)
        return start

    def forward(
        self, y: torch.Tensor, annotations: torch.Tensor, mask: torch.Tensor, state: dict[str, torch.Tensor]
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """y (B, T, m) embedded previous tokens, from `state` (from `start`, or as an earlier call left it; it is
        updated) -> logits (B, T, V) and the attention weights (B, T, S), None without attention."""
        s, states, contexts, weights = state["s"], [], [], []
        for i in range(y.size(1)):
            if self.attention is None:
                c = state["c"]  # (B, 2n)
            else:
                c, alpha = self.attention(s, state["keys"], annotations, mask)  # (B, 2n), (B, S)
                weights.append(alpha)
            s = self.rnn(torch.cat([y[:, i], c], dim=-1), s)  # (B, n)
            states.append(s)
            contexts.append(c)
        state["s"] = s
        logits = self.output(torch.stack(states, dim=1), y, torch.stack(contexts, dim=1))  # (B, T, V)
        return logits, torch.stack(weights, dim=1) if weights else None


class RNNEncoderDecoder(nn.Module):
    """The RNN encoder-decoder: RNNEncoderDecoder(config)(src, tgt) -> logits (B, T, vocab_size).

    src (B, S) and tgt (B, T) are int64 token ids, right-padded with config.pad_id; one embedding matrix E is
    shared by source and target (one vocabulary). The additive attention's weights come back as a decoder's
    cross-attention does, one layer of one head, so attention views read them like the Transformer's.
    """

    def __init__(self, config: ModelConfig, rng: torch.Generator | None = None):
        super().__init__()
        if config.architecture not in RECURRENT:
            raise ValueError(f"architecture must be one of {', '.join(RECURRENT)}, got {config.architecture!r}")
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.d_model)  # E
        self.encoder = Encoder(config)
        self.decoder = Decoder(config, attention=config.architecture == "gru-attention")
        self.init_weights(rng)

    @torch.no_grad()
    def init_weights(self, rng: torch.Generator | None = None) -> None:
        """Xavier-uniform for every matrix, zero biases; every draw from `rng` when given."""
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p, generator=rng)
            else:
                nn.init.zeros_(p)

    def src_mask(self, src: torch.Tensor, mask_padding: bool = True) -> torch.Tensor:
        """(B, 1, 1, S) True at real tokens: the recurrence always needs it (`mask_padding` is the Transformer's).
        ValueError for a source made only of padding: attention would have no token to weigh."""
        mask = padding_mask(src, self.config.pad_id)  # (B, 1, 1, S)
        if src.size(1) == 0 or not bool(mask.any(dim=-1).all()):
            raise ValueError(N_("a source sequence is empty or only padding: give every source at least one token"))
        return mask

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor, need_weights: bool = False):
        """src (B, S) -> annotations (B, S, 2n), and no self-attention maps."""
        self.check_ids(src, "src")
        return self.encoder(self.embed(src), src_mask[:, 0, 0]), []

    def decode(
        self,
        tgt: torch.Tensor,
        memory: torch.Tensor,
        src_mask: torch.Tensor,
        cache: dict | None = None,
        start: int = 0,
        mask_padding: bool = True,
        need_weights: bool = False,
    ):
        """tgt (B, T) -> logits (B, T, V), no self-attention maps, and the attention weights as one (B, 1, T, S)
        cross-attention map ([] without attention). With a `cache` (from `new_cache`), pass only the newest
        token(s): the cache carries the decoder state from one call to the next."""
        self.check_ids(tgt, "tgt")
        if cache is None:
            cache = self.decoder.start(memory)
        elif not cache:
            cache.update(self.decoder.start(memory))
        logits, alpha = self.decoder(self.embed(tgt), memory, src_mask[:, 0, 0], cache)
        return logits, [], [] if alpha is None else [alpha[:, None]]

    @property
    def token_embeddings(self) -> torch.Tensor:
        """The embedding table E, one row per token of the vocabulary: (vocab_size, d_model)."""
        return self.embed.weight

    def new_cache(self) -> dict:
        """An empty decoder state, filled by the first `decode` call."""
        return {}

    def forward(
        self, src: torch.Tensor, tgt: torch.Tensor, return_attention: bool = False, mask_padding: bool = True
    ) -> torch.Tensor | tuple[torch.Tensor, AttentionMaps]:
        """Teacher-forced logits (B, T, V); with `return_attention`, also the additive attention as "cross"."""
        src_mask = self.src_mask(src)
        memory, _ = self.encode(src, src_mask)
        logits, _, cross = self.decode(tgt, memory, src_mask)
        return (logits, {"encoder": [], "decoder_self": [], "cross": cross}) if return_attention else logits

    def check_ids(self, ids: torch.Tensor, name: str = "ids") -> None:
        """ValueError unless `ids` is an int64 (B, T) tensor of ids below vocab_size, T within max_len."""
        if ids.dim() != 2 or ids.dtype != torch.long:
            raise ValueError(f"{name} must be int64 token ids of shape (B, T), got {tuple(ids.shape)} {ids.dtype}")
        n, longest = self.config.vocab_size, self.config.max_len
        if ids.size(1) > longest or (ids.numel() and bool(((ids < 0) | (ids >= n)).any())):
            raise ValueError(f"{name} must hold at most {longest} token ids per row, each from 0 to {n - 1}")

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


def build_model(config: ModelConfig, rng: torch.Generator | None = None) -> Transformer | RNNEncoderDecoder:
    """The model `config.architecture` names, its starting weights drawn from `rng` when given."""
    return RNNEncoderDecoder(config, rng) if config.architecture in RECURRENT else Transformer(config, rng)


def cross_attention_shape(config: ModelConfig) -> tuple[int, int]:
    """(layers, heads) of the cross-attention maps a model of `config` returns: none without attention."""
    if config.architecture in RECURRENT:
        return (1, 1) if config.architecture == "gru-attention" else (0, 1)
    return config.n_layers, config.n_heads
