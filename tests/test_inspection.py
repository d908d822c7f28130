from copy import deepcopy

import pytest
import torch

from tests.helpers import hooks_left, random_model
from transformer.figures.attention import (
    architecture_diagram,
    attention_heatmaps,
    embedding_heatmap,
    mask_heatmap,
    position_similarity_heatmap,
    positional_curves,
    positional_heatmap,
    projection_heatmaps,
)
from transformer.inspection import (
    attention_projections,
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
    assert table["norm placement"].startswith("pre-norm")
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


def test_learned_positions_training_never_reached_stay_random():
    trainer = Trainer(ModelConfig(positional="learned"), DataConfig("copy", 1, 4, n_valid=50), TrainConfig(steps=300))
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


def test_figures(model):
    labels = ["<s>", "3", "3", "<pad>"]  # repeated labels keep their own rows
    fig = mask_heatmap(torch.ones(4, 4, dtype=torch.bool).tril(), labels, labels, "causal")
    assert len(fig.data) == 1  # "<s>" escaped, or Plotly reads it as strike-through HTML
    assert list(fig.layout.yaxis.ticktext) == ["&lt;s&gt;", "3", "3", "&lt;pad&gt;"]
    assert list(fig.data[0].colorbar.ticktext) == ["blocked", "may attend"]
    fig = attention_heatmaps(torch.rand(4, 4, 3).softmax(-1), labels, labels[:3], "weights")
    assert len(fig.data) == 4 and [a.text for a in fig.layout.annotations] == [f"head {h}" for h in range(4)]
    assert len(attention_heatmaps(torch.rand(6, 2, 2), labels[:2], labels[:2], "w").data) == 6
    # 3 heads two to a row: queries labelled beside heads 0 and 2, keys under heads 1 and 2 (nothing below head 1)
    layout = attention_heatmaps(torch.rand(3, 4, 3), labels, labels[:3], "w", per_row=2).layout
    assert [layout[f"yaxis{n}"].showticklabels for n in ("", "2", "3")] == [True, False, True]
    assert [layout[f"xaxis{n}"].showticklabels for n in ("", "2", "3")] == [False, True, True]
    title = mask_heatmap(
        torch.ones(2, 2, dtype=torch.bool), labels[:2], labels[:2], "Padding + causal: what the decoder uses"
    ).layout.title.text
    assert title == "Padding + causal: what the<br>decoder uses"  # lines of at most 30 characters
    fig = projection_heatmaps(attention_projections(model, "cross", 1), n_heads=4, title="W")
    assert len(fig.data) == 4 and len(fig.layout.shapes) == 4 * 3  # 3 head boundaries in each matrix
    assert [fig.layout[f"yaxis{n}"].showticklabels for n in ("", "2", "3", "4")] == [True, False, False, False]
    table = sinusoidal_table(16, 8)
    assert len(positional_heatmap(table).data) == 1
    fig = position_similarity_heatmap(position_similarity(table), 5, "alike")
    assert fig.data[0].z.shape == (16, 16) and (fig.data[0].zmin, fig.data[0].zmax) == (-1, 1)
    assert [(shape.x0, shape.x1, shape.y0, shape.y1) for shape in fig.layout.shapes] == [
        (4.5, 4.5, -0.5, 4.5),
        (-0.5, 4.5, 4.5, 4.5),
    ]
    assert position_similarity_heatmap(position_similarity(table), None, "alike").layout.shapes == ()
    fig = positional_curves(table, [0, 1, 6])
    assert [t.name for t in fig.data] == ["dim 0 (sin)", "dim 1 (cos)", "dim 6 (sin)"]
    fig = embedding_heatmap({"a": torch.ones(3, 8), "b": torch.zeros(3, 8)}, ["1", "2", "1"], "e")
    assert len(fig.data) == 2 and fig.layout.yaxis2.ticktext == ("1", "2", "1")  # panels stacked: tokens beside each

    def labels(fig) -> list[str]:
        return [a.text.replace("<br>", " ") for a in fig.layout.annotations]  # box labels wrap over lines

    texts = labels(architecture_diagram(2, True, False, "learned", True))
    assert "Multi-Head Attention (unmasked!)" in texts and "LayerNorm" in texts and "2×" in texts
    texts = labels(architecture_diagram(1, False, True, "sinusoidal", False))
    assert "Masked Multi-Head Attention" in texts and "Add & Norm" in texts and "LayerNorm" not in texts


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
