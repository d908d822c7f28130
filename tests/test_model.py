"""The model against PyTorch's reference modules on copied weights, and the masks proven by behaviour."""

import dataclasses

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from transformer.kernels import fused_is_faster, softmax
from transformer.masks import causal_mask, decoder_mask, padding_mask
from transformer.model import (
    ModelConfig,
    MultiHeadAttention,
    PositionwiseFeedForward,
    Transformer,
    scaled_dot_product_attention,
    sinusoidal_table,
)

D, H, FF = 32, 4, 64
TOL = dict(atol=1e-5, rtol=1e-5)


def ids(rows: list[list[int]], pad: int = 0) -> torch.Tensor:
    """Token rows right-padded to a (B, T) tensor."""
    width = max(map(len, rows))
    return torch.tensor([r + [pad] * (width - len(r)) for r in rows])


def copy_attention(ours: MultiHeadAttention, ref: nn.MultiheadAttention) -> None:
    with torch.no_grad():
        ref.in_proj_weight.copy_(ours.in_proj.weight)
        ref.in_proj_bias.copy_(ours.in_proj.bias)
        ref.out_proj.weight.copy_(ours.out_proj.weight)
        ref.out_proj.bias.copy_(ours.out_proj.bias)


def copy_ffn_and_norms(layer, ref) -> None:
    with torch.no_grad():
        ref.linear1.load_state_dict(layer.feed_forward.w_1.state_dict())
        ref.linear2.load_state_dict(layer.feed_forward.w_2.state_dict())
        for i, sub in enumerate(layer.sublayer):
            getattr(ref, f"norm{i + 1}").load_state_dict(sub.norm.state_dict())


@pytest.fixture(autouse=True)
def seed():
    torch.manual_seed(0)


def test_multi_head_attention_matches_pytorch():
    ours = MultiHeadAttention(ModelConfig(d_model=D, n_heads=H)).eval()
    ref = nn.MultiheadAttention(D, H, batch_first=True).eval()
    copy_attention(ours, ref)
    x, memory = torch.randn(3, 5, D), torch.randn(3, 7, D)
    src = ids([[5] * 7, [5] * 4, [5] * 2])
    # self-attention with a causal mask: PyTorch's True means "blocked", ours "may attend"
    want, want_w = ref(x, x, x, attn_mask=~causal_mask(5), average_attn_weights=False)
    got, got_w = ours(x, mask=causal_mask(5), need_weights=True)
    torch.testing.assert_close(got, want, **TOL)
    torch.testing.assert_close(got_w, want_w, **TOL)
    # cross-attention over a padded memory
    want, _ = ref(x, memory, memory, key_padding_mask=src == 0)
    got, _ = ours(x, memory, mask=padding_mask(src, 0))
    torch.testing.assert_close(got, want, **TOL)


def test_paper_matrices_are_views_of_the_projection():
    attn = MultiHeadAttention(ModelConfig(d_model=D, n_heads=H))
    stacked = torch.cat([attn.W_Q, attn.W_K, attn.W_V])
    assert stacked.shape == (3 * D, D) and torch.equal(stacked, attn.in_proj.weight)
    assert attn.W_O is attn.out_proj.weight


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_matches_pytorch(norm_first):
    model = Transformer(ModelConfig(d_model=D, n_heads=H, d_ff=FF, norm_first=norm_first)).eval()
    layer = model.encoder.layers[0]
    ref = nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, batch_first=True, norm_first=norm_first).eval()
    copy_attention(layer.self_attn, ref.self_attn)
    copy_ffn_and_norms(layer, ref)
    x, src = torch.randn(3, 6, D), ids([[5] * 6, [5] * 4, [5] * 1])
    got, _ = layer(x, padding_mask(src, 0))
    want = ref(x, src_key_padding_mask=src == 0)
    real = src != 0
    torch.testing.assert_close(got[real], want[real], **TOL)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_matches_pytorch(norm_first):
    model = Transformer(ModelConfig(d_model=D, n_heads=H, d_ff=FF, norm_first=norm_first)).eval()
    layer = model.decoder.layers[0]
    ref = nn.TransformerDecoderLayer(D, H, FF, dropout=0.0, batch_first=True, norm_first=norm_first).eval()
    copy_attention(layer.self_attn, ref.self_attn)
    copy_attention(layer.cross_attn, ref.multihead_attn)
    copy_ffn_and_norms(layer, ref)
    x, memory = torch.randn(2, 5, D), torch.randn(2, 6, D)
    src, tgt = ids([[5] * 6, [5] * 3]), ids([[1] + [5] * 4, [1, 5, 5]])
    got, _, _ = layer(x, memory, padding_mask(src, 0), decoder_mask(tgt, 0))
    want = ref(x, memory, tgt_mask=~causal_mask(5), tgt_key_padding_mask=tgt == 0, memory_key_padding_mask=src == 0)
    real = tgt != 0
    torch.testing.assert_close(got[real], want[real], **TOL)


def no_key_for_query_2(batch: int, length: int) -> torch.Tensor:
    """A causal (batch, 1, length, length) mask, except that query 2 of the second row may attend to no key."""
    mask = causal_mask(length).repeat(batch, 1, 1, 1)
    mask[1, 0, 2] = False
    return mask


@pytest.mark.parametrize("masked", [None, "causal", "padding", "no key"])
def test_fast_and_explicit_attention_agree(masked):
    q, k, v = torch.randn(3, 2, H, 5, 8).unbind(0)
    masks = {
        "causal": causal_mask(5),
        "padding": padding_mask(ids([[5] * 5, [5] * 2]), 0),
        "no key": no_key_for_query_2(2, 5),
    }
    mask = masks.get(masked)
    fast, none = scaled_dot_product_attention(q, k, v, mask)
    explicit, weights = scaled_dot_product_attention(q, k, v, mask, need_weights=True)
    assert none is None
    torch.testing.assert_close(fast, explicit, **TOL)
    attends = torch.ones(2, H, 5)
    if masked == "no key":  # a query with no key to see attends to nothing: weights and output 0, on both paths
        attends[1, :, 2] = 0
        assert torch.all(fast[1, :, 2] == 0) and torch.all(weights[1, :, 2] == 0)
    torch.testing.assert_close(weights.sum(-1), attends, **TOL)
    # is_causal (no mask tensor) is the same as the causal mask tensor, on both paths
    torch.testing.assert_close(
        scaled_dot_product_attention(q, k, v, is_causal=True)[0],
        scaled_dot_product_attention(q, k, v, causal_mask(5), need_weights=True)[0],
        **TOL,
    )


def test_the_fused_kernel_runs_except_for_big_batches_of_short_sequences_on_a_cpu():
    def qk(batch: int, keys: int, grad: bool, queries: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        q = torch.zeros(batch, H, keys if queries is None else queries, 8, requires_grad=grad)
        return q, torch.zeros(batch, H, keys, 8)

    assert not fused_is_faster(*qk(128, 11, grad=True))  # a training batch of the default task
    assert not fused_is_faster(*qk(64, 9, grad=True))  # a batch of the Train page's default run: 9 keys, d_k 8
    assert fused_is_faster(*qk(64, 7, grad=True))  # 7 keys: the kernel is faster again
    assert fused_is_faster(*qk(128, 11, grad=False))  # the same batch at inference
    assert fused_is_faster(*qk(128, 33, grad=True))  # longer sequences
    assert fused_is_faster(*qk(8, 11, grad=True))  # a small batch: 8 * 4 * 11 * 11 scores
    assert not fused_is_faster(*qk(1000, 17, grad=False, queries=1))  # a step of batched greedy decoding
    assert fused_is_faster(*qk(1, 17, grad=False, queries=1))  # a step of decoding one sequence
    assert fused_is_faster(*qk(1000, 33, grad=False, queries=1))  # longer sequences


@pytest.mark.parametrize("keys", [3, 9, 15, 16, 40])
def test_softmax_written_out_or_not_is_torchs_softmax_and_its_gradient(keys):
    """Below 16 keys it is computed as exp(s - max) / sum, above by PyTorch's kernel: the same values and gradients to
    float32 rounding, masked (-inf) scores included, and large scores do not overflow."""
    scores = (torch.randn(64, 4, 9, keys) * 30).masked_fill(torch.rand(64, 1, 9, keys) < 0.3, float("-inf"))
    scores[..., 0] = 100.0  # every row keeps a key, and exp(100) alone would overflow float32
    ours, theirs = (scores.clone().requires_grad_() for _ in range(2))
    torch.testing.assert_close(softmax(ours), theirs.softmax(-1), **TOL)
    grad = torch.randn(scores.shape)
    softmax(ours).backward(grad)
    theirs.softmax(-1).backward(grad)
    torch.testing.assert_close(ours.grad, theirs.grad, **TOL)


@pytest.mark.parametrize("masked", [None, "causal", "padding", "no key"])
def test_training_through_the_explicit_path_gives_the_fused_kernels_outputs_and_gradients(masked):
    q, k, v = torch.randn(3, 128, H, 11, 8).unbind(0)
    padding = padding_mask(ids([[5] * 11, [5] * 4] * 64), 0)
    mask = {"causal": causal_mask(11), "padding": padding, "no key": no_key_for_query_2(128, 11)}.get(masked)
    inputs = [t.clone().requires_grad_() for t in (q, k, v)]
    assert not fused_is_faster(*inputs[:2])
    out, weights = scaled_dot_product_attention(*inputs, mask)  # takes the explicit path
    assert weights is None  # computed, but not asked for
    fused_inputs = [t.clone().requires_grad_() for t in (q, k, v)]
    fused = torch.nn.functional.scaled_dot_product_attention(*fused_inputs, attn_mask=mask)
    torch.testing.assert_close(out, fused, **TOL)
    grad = torch.randn_like(out)
    out.backward(grad)
    fused.backward(grad)
    for ours, reference in zip(inputs, fused_inputs, strict=True):
        torch.testing.assert_close(ours.grad, reference.grad, **TOL)


def test_whole_model_attention_maps_and_paths_agree():
    model = Transformer(ModelConfig(n_layers=2)).eval()
    src, tgt = ids([[4, 5, 6, 7], [8, 9]]), ids([[1, 7, 6, 5, 4], [1, 9, 8]])
    logits, maps = model(src, tgt, return_attention=True)
    torch.testing.assert_close(logits, model(src, tgt), **TOL)
    assert [m.shape for m in maps["encoder"]] == [(2, 4, 4, 4)] * 2
    assert [m.shape for m in maps["decoder_self"]] == [(2, 4, 5, 5)] * 2
    assert [m.shape for m in maps["cross"]] == [(2, 4, 5, 4)] * 2
    assert maps["cross"][0][1, :, :, 2:].abs().max() == 0  # padded source positions get no attention
    assert maps["decoder_self"][0][0, :, 0, 1:].abs().max() == 0  # the first position sees only itself


def test_sinusoidal_table_follows_the_formula():
    table = sinusoidal_table(50, 16)
    pos, i = 7, 3
    assert table[pos, 2 * i] == pytest.approx(torch.sin(torch.tensor(pos / 10000 ** (2 * i / 16))).item(), abs=1e-6)
    assert table[pos, 2 * i + 1] == pytest.approx(torch.cos(torch.tensor(pos / 10000 ** (2 * i / 16))).item(), abs=1e-6)


def test_embeddings_are_scaled_by_sqrt_d_model():
    model = Transformer(ModelConfig(positional="none"))
    token = torch.tensor([[5]])
    torch.testing.assert_close(model.embed(token)[0, 0], model.embed.lut.weight[5] * D**0.5)


# --- masks, proven by behaviour -------------------------------------------------------------------------------

SRC = ids([[4, 5, 6, 7, 8]])
TGT = ids([[1, 8, 7, 6, 5, 4]])


def outputs_after_changing_the_last_target_token(config: ModelConfig) -> tuple[torch.Tensor, torch.Tensor]:
    model = Transformer(config).eval()
    changed = TGT.clone()
    changed[0, -1] = 11
    return model(SRC, TGT)[:, :-1], model(SRC, changed)[:, :-1]


def test_causal_mask_hides_the_future():
    before, after = outputs_after_changing_the_last_target_token(ModelConfig())
    torch.testing.assert_close(before, after, atol=1e-6, rtol=0)


def test_without_the_causal_mask_the_future_leaks():
    before, after = outputs_after_changing_the_last_target_token(ModelConfig(causal_mask=False))
    assert (before - after).abs().max() > 1e-3


@pytest.mark.parametrize("norm_first", [False, True])
def test_extra_padding_does_not_change_real_positions(norm_first):
    model = Transformer(ModelConfig(norm_first=norm_first, n_layers=2)).eval()
    padded_src, padded_tgt = (
        torch.cat([SRC, torch.zeros(1, 4, dtype=torch.long)], 1),
        torch.cat([TGT, torch.zeros(1, 3, dtype=torch.long)], 1),
    )
    base = model(SRC, TGT)
    torch.testing.assert_close(model(padded_src, padded_tgt)[:, : TGT.size(1)], base, atol=1e-5, rtol=0)
    # and the padding mask is what does it: without it the outputs drift
    drifted = model(padded_src, padded_tgt, mask_padding=False)[:, : TGT.size(1)]
    assert (drifted - base).abs().max() > 1e-3


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("n_layers", [1, 2])
def test_each_step_of_decoding_with_a_cache_is_the_last_row_of_its_whole_prefix(causal, n_layers):
    model = Transformer(ModelConfig(n_layers=n_layers, causal_mask=causal)).eval()
    src, tgt = ids([[4, 5, 6], [7, 8]]), torch.tensor([[1, 6, 5, 4, 0], [1, 8, 0, 2, 3]])  # PAD fed back as a token
    src_mask = model.src_mask(src)
    memory, _ = model.encode(src, src_mask)
    cache = model.new_cache()
    steps = [model.decode(tgt[:, t : t + 1], memory, src_mask, cache, start=t)[0] for t in range(tgt.size(1))]
    prefixes = [model.decode(tgt[:, : t + 1], memory, src_mask, mask_padding=False)[0][:, -1:] for t in range(5)]
    torch.testing.assert_close(torch.cat(steps, 1), torch.cat(prefixes, 1), **TOL)
    assert cache.keeps_states == (causal or n_layers == 1)  # without the mask, deeper layers' keys go stale
    if causal:  # each position sees only what came before it: the steps are one teacher-forced pass
        whole = model.decode(tgt, memory, src_mask, mask_padding=False)[0]
        torch.testing.assert_close(torch.cat(steps, 1), whole, **TOL)


@pytest.mark.parametrize("split", [0, 2])
def test_a_cache_given_several_target_tokens_at_once_still_hides_the_future(split):
    model = Transformer(ModelConfig(n_layers=2)).eval()
    src, tgt = ids([[4, 5, 6], [7, 8]]), torch.tensor([[1, 6, 5, 4, 9], [1, 8, 7, 2, 3]])
    full = model(src, tgt)
    src_mask = model.src_mask(src)
    memory, _ = model.encode(src, src_mask)
    cache = model.new_cache()
    first = model.decode(tgt[:, :split], memory, src_mask, cache)[0] if split else full[:, :0]
    rest = model.decode(tgt[:, split:], memory, src_mask, cache, start=split)[0]
    torch.testing.assert_close(torch.cat([first, rest], 1), full, **TOL)


@pytest.mark.parametrize("src", [ids([[0, 0, 0], [4, 5, 6]]), torch.zeros(2, 0, dtype=torch.long)])
def test_a_source_of_only_padding_is_refused_rather_than_read_as_nan(src):
    model = Transformer(ModelConfig()).eval()
    with pytest.raises(ValueError, match="at least one token"):
        model(src, ids([[1, 4], [1, 5]]))
    with torch.no_grad():  # the padding mask is what refuses it: unmasked, the row is finite (and meaningless)
        assert src.numel() == 0 or torch.isfinite(model(src, ids([[1, 4], [1, 5]]), mask_padding=False)).all()


def test_switches_change_the_model():
    base = ModelConfig()
    assert Transformer(dataclasses.replace(base, positional="none")).positional.table() is None
    assert Transformer(dataclasses.replace(base, positional="learned")).positional.table().requires_grad
    tied = Transformer(dataclasses.replace(base, tie_weights=True))
    assert tied.generator.proj.weight is tied.embed.lut.weight
    assert isinstance(Transformer(dataclasses.replace(base, norm_first=True)).encoder.norm, nn.LayerNorm)


def test_scale_scores_off_drops_the_1_over_sqrt_d_k():
    config = ModelConfig(d_model=D, n_heads=H)
    scaled, unscaled = MultiHeadAttention(config), MultiHeadAttention(dataclasses.replace(config, scale_scores=False))
    unscaled.load_state_dict(scaled.state_dict())
    x = torch.randn(2, 5, D)
    q, k, _ = scaled.in_proj(x).split(D, dim=2)
    q, k = scaled.split_heads(q), scaled.split_heads(k)  # (B, H, T, d_k)
    for attention, scores in ((scaled, q @ k.transpose(-2, -1) / (D // H) ** 0.5), (unscaled, q @ k.transpose(-2, -1))):
        _, weights = attention(x, need_weights=True)
        torch.testing.assert_close(weights, scores.softmax(dim=-1), **TOL)


@pytest.mark.parametrize(
    "bad",
    [
        dict(d_model=30, n_heads=4),
        dict(dropout=1.5),
        dict(positional="rotary"),
        dict(n_layers=0),
        dict(pad_id=99),
        dict(n_heads=0),
    ],
)
def test_bad_config_is_refused(bad):
    with pytest.raises(ValueError):
        ModelConfig(**bad)


def test_too_long_or_wrong_type_input_is_refused():
    model = Transformer(ModelConfig(max_len=8))
    with pytest.raises(ValueError, match="max_len"):
        model(torch.full((1, 9), 4), torch.full((1, 3), 4))
    with pytest.raises(ValueError, match="int64"):
        model(torch.zeros(1, 3), torch.zeros(1, 3))
    with pytest.raises(ValueError, match="src holds token ids from 4 to 13; this model reads 0 to 12"):
        model(torch.tensor([[4, 13]]), torch.full((1, 3), 4))
    with pytest.raises(ValueError, match="tgt holds token ids from -1 to 4"):
        model(torch.full((1, 3), 4), torch.tensor([[4, -1]]))


def test_feed_forward_dropout_acts_in_training_only():
    ffn = PositionwiseFeedForward(ModelConfig(dropout=0.5))
    x = torch.randn(4, 6, 32)
    torch.manual_seed(0)
    assert not torch.equal(ffn.train()(x), ffn(x))  # two different dropout masks
    hidden = torch.relu(ffn.w_1(x))
    seen = []
    ffn.w_2.register_forward_hook(lambda module, args, out: seen.append(args[0]))
    ffn(x)
    dropped = (seen[0] == 0) & (hidden != 0)
    assert 0.4 < dropped.sum() / (hidden != 0).sum() < 0.6  # about half the active units zeroed
    assert torch.equal(ffn.eval()(x), ffn(x))


def test_dropout_sits_where_the_paper_puts_it_and_costs_no_call_at_rate_zero(monkeypatch):
    src, tgt = torch.randint(3, 13, (2, 5)), torch.randint(3, 13, (2, 4))
    model = Transformer(ModelConfig(dropout=0.1))
    assert not torch.equal(model.train()(src, tgt), model(src, tgt))  # two different dropout masks
    assert torch.equal(model.eval()(src, tgt), model(src, tgt))
    rates = []
    monkeypatch.setattr(F, "dropout", lambda x, p, *args, **kwargs: rates.append(p) or x)
    model.train()(src, tgt)
    # After each positional encoding (source and target), inside each FFN (one per stack), and on each sublayer's
    # output (2 per encoder layer, 3 per decoder layer); attention weights take the rate inside the fused kernel.
    assert rates == [0.1] * (2 + 2 + 2 + 3)
    rates.clear()
    Transformer(ModelConfig(dropout=0.0)).train()(src, tgt)
    model.eval()(src, tgt)
    assert rates == []
