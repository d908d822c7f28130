from copy import deepcopy

import pytest
import torch

from tests.helpers.models import hooks_left, random_model
from transformer.inspection import (
    config_table,
    embed_with_position,
    logit_lens,
    module_table,
    parameter_summary,
    position_similarity,
    positional_table,
    positions_trained,
    random_pair,
    sample_batch,
    twin,
)
from transformer.model import ModelConfig, Transformer, sinusoidal_table
from transformer.tasks import DataConfig
from transformer.training import TrainConfig, Trainer
from transformer.vocab import Vocab

VOCAB = Vocab.digits(10)
TASK = DataConfig(task="reverse", min_len=2, max_len=7)


@pytest.fixture(scope="module")
def model() -> Transformer:
    return random_model(n_layers=2)


@pytest.mark.parametrize(
    "changes", [{"n_layers": 2}, {"norm_first": True, "tie_weights": True, "positional": "learned"}]
)
def test_module_table_shapes_and_parameters(changes):
    model = random_model(**changes)
    c = model.config
    src, tgt = sample_batch(TASK, VOCAB, c.max_len)
    S, T, d = src.size(1), tgt.size(1), c.d_model
    assert (S, T) == (TASK.max_len, TASK.max_len + 1)
    table = module_table(model, src, tgt).set_index("module")
    assert table["parameters"].sum() == model.num_parameters()
    for i in range(c.n_layers):
        enc, dec = f"encoder.layers.{i}", f"decoder.layers.{i}"
        assert table.loc[f"{enc}.self_attn", "input shape"] == f"1×{S}×{d}"
        assert table.loc[f"{dec}.cross_attn", "input shape"] == f"1×{T}×{d}, 1×{S}×{d}"
        assert table.loc[f"{dec}.cross_attn", "output shape"] == f"1×{T}×{d}"
        assert table.loc[f"{dec}.self_attn", "paper name"] == "Masked Multi-Head Attention"
        for name in (f"{enc}.self_attn", f"{dec}.self_attn", f"{dec}.cross_attn"):
            assert table.loc[name, "parameters"] == 4 * d * d + 4 * d  # W_Q, W_K, W_V, W_O and biases
        for name in (f"{enc}.feed_forward", f"{dec}.feed_forward"):
            assert table.loc[name, "parameters"] == 2 * d * c.d_ff + c.d_ff + d
            assert table.loc[name, "paper name"] == "Feed Forward"
        norms = [f"{enc}.sublayer.{j}" for j in range(2)] + [f"{dec}.sublayer.{j}" for j in range(3)]
        assert all(table.loc[norms, "parameters"] == 2 * d)  # LayerNorm gain and bias
    assert table.loc["embed", "output shape"] == f"1×{S}×{d} ; 1×{T}×{d}"
    assert table.loc["generator", "output shape"] == f"1×{T}×{c.vocab_size}"
    # tied: the generator's weight is counted with the embedding, only its bias is its own
    assert table.loc["generator", "parameters"] == c.vocab_size * (1 if c.tie_weights else d + 1)
    assert ("encoder.norm" in table.index) == c.norm_first
    summary = parameter_summary(table.reset_index())
    assert summary.iloc[-1].tolist() == ["total", model.num_parameters()]
    assert hooks_left(model) == 0


def test_config_table_names_the_switches():
    table = config_table(ModelConfig(norm_first=True, causal_mask=False)).set_index("setting")["value"]
    assert table["norm_first"].startswith("pre-norm") and table["positional"] == "sinusoidal"
    assert table["causal_mask"] == "False" and table["d_k"] == "8"


def test_twin_copies_weights_not_modules(model):
    copy = twin(model, causal_mask=False)
    assert copy.config.causal_mask is False and model.config.causal_mask is True
    assert all(
        torch.equal(a, b) and a.data_ptr() != b.data_ptr()
        for a, b in zip(model.state_dict().values(), copy.state_dict().values())
    )


def test_positional_table_and_embeddings():
    model = random_model(positional="none")
    table, label = positional_table(model)
    assert "none" in label and torch.equal(table, sinusoidal_table(64, 32))
    before, after = embed_with_position(model, [3, 4, 3])
    assert torch.equal(before, after) and torch.equal(before[0], before[2])
    model = random_model()
    before, after = embed_with_position(model, [3, 4, 3])
    torch.testing.assert_close(after - before, model.positional.table()[:3])
    with pytest.raises(ValueError):
        embed_with_position(model, [])


def test_sinusoidal_positions_are_as_alike_as_their_distance_says():
    similarity = position_similarity(sinusoidal_table(40, 32))
    assert similarity.shape == (40, 40)
    torch.testing.assert_close(similarity.diagonal(), torch.ones(40))
    for offset in (1, 5, 20):  # every diagonal is one value: the similarity depends on the distance only
        diagonal = similarity.diagonal(offset)
        torch.testing.assert_close(diagonal, diagonal[:1].expand_as(diagonal))
    assert similarity[0, 1] > similarity[0, 2] > similarity[0, 3]  # neighbours are the most alike


@pytest.mark.heavy
def test_learned_positions_training_never_reached_stay_random():
    model = ModelConfig(positional="learned", d_model=16, n_heads=2, d_ff=32)  # the size does not matter here
    trainer = Trainer(model, DataConfig("copy", 1, 4, n_valid=50), TrainConfig(steps=50, early_stop=False))
    initial = trainer.model.positional.table().detach().clone()
    trainer.run()
    reached = positions_trained(trainer.data.config, trainer.vocab)
    assert reached == 5  # BOS + 4 target symbols
    table = trainer.model.positional.table().detach()
    assert not torch.equal(table[:reached], initial[:reached])
    assert torch.equal(table[reached:], initial[reached:])  # never in a forward pass: no gradient, no change


def test_random_pair_follows_the_task():
    src_ids, tgt_ids = random_pair(TASK, VOCAB, 4, seed=1)
    assert 2 <= len(src_ids) <= 4 and tgt_ids == src_ids[::-1]
    assert random_pair(TASK, VOCAB, 4, seed=1) == (src_ids, tgt_ids)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-norm", "pre-norm"])
def test_logit_lens_reads_each_decoder_layer_as_if_the_stack_ended_there(norm_first):
    torch.manual_seed(0)
    model = Transformer(ModelConfig(n_layers=3, norm_first=norm_first)).eval()
    src, prefix = torch.tensor([[3, 4, 5, 6, 0]]), [1, 7, 8]
    lens = logit_lens(model, src, prefix)
    assert lens.shape == (3, model.config.vocab_size)
    for n in (1, 2, 3):
        short = deepcopy(model)
        short.decoder.layers = short.decoder.layers[:n]  # the decoder's final LayerNorm (pre-norm) stays
        with torch.no_grad():
            torch.testing.assert_close(lens[n - 1], short(src, torch.tensor([prefix]))[0, -1].softmax(dim=-1))
    assert not any(m._forward_hooks for m in model.modules())


@pytest.mark.parametrize("causal_mask", [True, False])
def test_logit_lens_last_row_is_the_decoding_steps_distribution_with_a_generated_pad_in_the_prefix(causal_mask):
    model = random_model(n_layers=2, causal_mask=causal_mask)
    src, prefix = torch.tensor([[3, 4, 5, 6, 0]]), [1, 7, 0, 8]  # decoding fed back a PAD it generated
    with torch.no_grad():  # what decoding computes at the step after `prefix`: one token at a time on its cache
        src_mask = model.src_mask(src)
        memory, _ = model.encode(src, src_mask)
        cache = model.new_cache()
        for t, token in enumerate(prefix):
            logits = model.decode(torch.tensor([[token]]), memory, src_mask, cache, start=t)[0]
    torch.testing.assert_close(logit_lens(model, src, prefix)[-1], logits[0, -1].softmax(-1), atol=1e-5, rtol=0)
