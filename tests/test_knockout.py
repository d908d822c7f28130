"""Head knockout: removal by zero or mean before W_O, proved against models whose weights do the same; the grid;
the `ablate` command's JSON and its errors."""

import json
from copy import deepcopy
from pathlib import Path

import pytest
import torch

import transformer.pairs as pairs_module
from tests.helpers.cli import run_cli
from tests.helpers.models import largest_checkpoint
from transformer.checkpoint import load_checkpoint
from transformer.cli import main
from transformer.figures.knockout import knockout_heatmaps
from transformer.inspection import ATTENTION_KINDS, attention_module
from transformer.knockout import (
    GRID_COLUMNS,
    Head,
    all_heads,
    attention_blocks,
    compare_outputs,
    grid_allowed,
    grid_cost,
    head_means,
    knocked_out,
    knockout_grid,
    knockout_set,
    parse_heads,
    sample_size,
    score,
    spread_sample,
)
from transformer.limits import (
    MAX_GRID_COST,
    MIN_GRID_SAMPLE,
    STEP_COST,
    STEP_WEIGHT_COST,
    evaluation_cost,
)
from transformer.model import ModelConfig, Transformer
from transformer.pairs import pairs_from_rows
from transformer.tasks import Batch, DataConfig, TaskData

pytestmark = pytest.mark.usefixtures("cli_one_thread")  # tests/conftest.py

ROOT = Path(__file__).resolve().parents[1]
REVERSE = ROOT / "checkpoints" / "reverse.pt"
SHIPPED = load_checkpoint(REVERSE)


@pytest.fixture(scope="module", params=[False, True], ids=["post-norm", "pre-norm"])
def model(request) -> Transformer:
    """A random 2-layer, 4-head model (fixed seed), post- or pre-norm."""
    torch.manual_seed(0)
    return Transformer(ModelConfig(n_layers=2, norm_first=request.param)).eval()


@pytest.fixture(scope="module")
def batch() -> Batch:
    """Held-out reverse sequences of lengths 1-6: padding on both sides."""
    return spread_sample(TaskData(DataConfig(task="reverse", min_len=1, max_len=6)), 40)


def logits(model: Transformer, batch: Batch) -> torch.Tensor:
    with torch.no_grad():
        return model(batch.src, batch.tgt_in)


def out_proj_inputs(model: Transformer, batch: Batch) -> dict[tuple[str, int], torch.Tensor]:
    """The input of W_O, (B, T, d_model), of every attention block in a forward pass of `batch`."""
    seen, handles = {}, []
    for kind, layer in attention_blocks(model):
        block = attention_module(model, kind, layer)
        record = lambda module, args, key=(kind, layer): seen.__setitem__(key, args[0].clone())  # noqa: E731
        handles.append(block.out_proj.register_forward_pre_hook(record))
    logits(model, batch)
    for handle in handles:
        handle.remove()
    return seen


def slot(model: Transformer, head: Head) -> slice:
    """The columns of W_O (and of the concatenated heads) that belong to `head`."""
    d_k = model.config.d_k
    return slice(head.head * d_k, (head.head + 1) * d_k)


def heads_of_every_kind(model: Transformer) -> list[Head]:
    return [Head(kind, 1, 2) for kind in ATTENTION_KINDS]


# ------------------------------------------------------------------------------------------- removal


def test_removing_no_head_reproduces_the_intact_model_exactly(model, batch):
    with knocked_out(model, []) as probe:
        assert torch.equal(logits(probe, batch), logits(model, batch))
    assert score(model, batch, SHIPPED.vocab) == score(model, batch, SHIPPED.vocab, [])


@pytest.mark.parametrize("kind", ATTENTION_KINDS)
def test_zeroing_a_head_is_zeroing_its_columns_of_W_O(model, batch, kind):
    head = Head(kind, 1, 2)
    reference = deepcopy(model)
    with torch.no_grad():
        attention_module(reference, kind, 1).out_proj.weight[:, slot(model, head)] = 0
    with knocked_out(model, [head]) as probe:
        got = logits(probe, batch)
    torch.testing.assert_close(got, logits(reference, batch))
    assert not torch.allclose(got, logits(model, batch), atol=1e-3)  # the head mattered


@pytest.mark.parametrize("kind", ATTENTION_KINDS)
def test_mean_removal_is_a_constant_head_output_folded_into_the_bias_of_W_O(model, batch, kind):
    head = Head(kind, 0, 1)
    means = head_means(model, batch)
    reference = deepcopy(model)
    with torch.no_grad():
        w_o = attention_module(reference, kind, 0).out_proj
        w_o.bias += w_o.weight[:, slot(model, head)] @ means[kind, 0][slot(model, head)]
        w_o.weight[:, slot(model, head)] = 0
    with knocked_out(model, [head], means) as probe:
        torch.testing.assert_close(logits(probe, batch), logits(reference, batch))


def test_a_removed_head_changes_only_what_flows_through_it(model, batch):
    head = Head("decoder_self", 1, 3)
    intact = out_proj_inputs(model, batch)
    with knocked_out(model, [head]) as probe:
        removed = out_proj_inputs(probe, batch)
    others = [i for i in range(model.config.d_model) if i not in range(*slot(model, head).indices(10**6))]
    for key in attention_blocks(model):
        if key in (("decoder_self", 1), ("cross", 1)):
            continue  # the cross-attention after it reads the changed state
        torch.testing.assert_close(removed[key], intact[key], rtol=0, atol=0)  # the encoder and layer 0: untouched
    block = removed["decoder_self", 1]
    assert torch.equal(block[..., slot(model, head)], torch.zeros_like(block[..., slot(model, head)]))
    assert torch.equal(block[..., others], intact["decoder_self", 1][..., others])  # its other heads: untouched


@pytest.mark.parametrize("use_means", [False, True], ids=["zero", "mean"])
def test_a_head_whose_W_O_columns_are_zero_changes_nothing_when_removed(model, batch, use_means):
    silent = deepcopy(model)
    heads = heads_of_every_kind(model)
    with torch.no_grad():
        for head in heads:
            attention_module(silent, head.kind, head.layer).out_proj.weight[:, slot(model, head)] = 0
    means = head_means(silent, batch) if use_means else None
    with knocked_out(silent, heads, means) as probe:
        torch.testing.assert_close(logits(probe, batch), logits(silent, batch), rtol=0, atol=1e-6)


def test_head_means_leave_padding_out(model, batch):
    """The mean over a padded batch is the mean over its real positions, wherever they sit."""
    means = head_means(model, batch)
    alone = [
        head_means(model, Batch(batch.src[i : i + 1], batch.tgt_in[i : i + 1], batch.tgt_out[i : i + 1], 0))
        for i in range(3)
    ]
    pad = model.config.pad_id
    for kind, layer in attention_blocks(model):
        queries = batch.src if kind == "encoder" else batch.tgt_in
        counts = [(queries[i] != pad).sum() for i in range(3)]
        three = Batch(batch.src[:3], batch.tgt_in[:3], batch.tgt_out[:3], 0)
        pooled = sum(c * m[kind, layer] for c, m in zip(counts, alone)) / sum(counts)
        torch.testing.assert_close(head_means(model, three)[kind, layer], pooled)
    assert set(means) == set(attention_blocks(model))


def test_the_model_passed_in_keeps_no_hook_and_its_outputs(model, batch):
    before = logits(model, batch)
    with knocked_out(model, all_heads(model)) as probe:
        assert probe is not model
        assert torch.equal(logits(model, batch), before)
    hooks = [m._forward_pre_hooks for m in model.modules()] + [m._forward_pre_hooks for m in probe.modules()]
    assert not any(hooks)


# ---------------------------------------------------------------------------------------------- parsing


def test_parse_heads_reads_short_kinds_and_drops_repeats(model):
    heads = parse_heads("cross:1:3, enc:0:0,self:1:2,cross:1:3", model)
    assert heads == [Head("cross", 1, 3), Head("encoder", 0, 0), Head("decoder_self", 1, 2)]
    assert [h.label for h in heads] == ["cross:1:3", "enc:0:0", "self:1:2"]
    assert [parse_heads(h.label, model) for h in all_heads(model)] == [[h] for h in all_heads(model)]


@pytest.mark.parametrize(
    "text, message",
    [
        ("cross-0-1", "heads are KIND:LAYER:HEAD"),
        ("cross:0", "heads are KIND:LAYER:HEAD"),
        ("", "heads are KIND:LAYER:HEAD"),
        ("cross:0:1,", "heads are KIND:LAYER:HEAD"),
        ("dec:0:1", "the kind of a head is one of enc, self, cross"),
        ("cross:2:0", "cross:2:0: this model has layers 0 to 1"),
        ("enc:0:4", "enc:0:4: this model has heads 0 to 3"),
    ],
)
def test_parse_heads_says_what_is_wrong(model, text, message):
    with pytest.raises(ValueError, match=message):
        parse_heads(text, model)


@pytest.mark.parametrize(
    "head, message",
    [
        (Head("cross", 0, 4), "head must be in 0..3"),
        (Head("cross", 2, 0), "layer must be in 0..1"),
        (Head("x", 0, 0), "kind"),
    ],
)
def test_removing_a_head_the_model_lacks_is_an_error(model, head, message):
    with pytest.raises(ValueError, match=message), knocked_out(model, [head]):
        pass


# --------------------------------------------------------------------------------------------- the grid


@pytest.mark.heavy
def test_the_grid_scores_each_head_removed_alone_beside_the_intact_model():
    model, vocab = SHIPPED.model, SHIPPED.vocab
    grid = knockout_grid(model, vocab, SHIPPED.task, n=60)
    assert grid.n == 60 and grid.n_held_out == 1000 and grid.means is None
    assert list(grid.heads.columns) == list(GRID_COLUMNS)
    assert [Head(*row[:3]) for row in grid.heads.itertuples(index=False)] == all_heads(model)
    assert grid.intact == score(model, grid.batch, vocab)
    for row in grid.heads.itertuples(index=False):  # scored 12 sets at once, as each alone scores
        assert {"exact_match": row.exact_match, "token_acc": row.token_acc} == score(
            model, grid.batch, vocab, [Head(*row[:3])]
        )
    assert (grid.heads["exact_match"] < grid.intact["exact_match"]).any()


@pytest.mark.parametrize("task", ["repeat", "pairs"])
def test_the_grid_runs_on_a_gallery_task_and_a_task_from_examples(task):
    rows = [(f"row {i}", f"{a} {b}", f"{b} {b}") for i, (a, b) in enumerate(zip("abcdefg", "gfedcba"), 1)]
    config = (
        DataConfig.from_pairs(pairs_from_rows(rows, "mine"))
        if task == "pairs"
        else DataConfig(task, 2, 4, 5, n_valid=40)
    )
    data = TaskData(config)
    model = Transformer(ModelConfig(vocab_size=len(data.vocab), d_model=16, n_heads=2, d_ff=32)).eval()
    grid = knockout_grid(model, data.vocab, config)
    assert grid.n_held_out == len(data.valid_sources) and grid.n == min(grid.n_held_out, grid.batch.src.size(0))
    assert len(grid.heads) == len(all_heads(model))


def test_mean_removal_grid_carries_its_means():
    grid = knockout_grid(SHIPPED.model, SHIPPED.vocab, SHIPPED.task, "mean", n=30)
    assert set(grid.means) == set(attention_blocks(SHIPPED.model))
    head = Head("encoder", 0, 1)
    row = grid.heads.iloc[1]
    assert dict(row[["exact_match", "token_acc"]]) == score(
        SHIPPED.model, grid.batch, SHIPPED.vocab, [head], grid.means
    )
    with pytest.raises(ValueError, match="ablation must be zero or mean"):
        knockout_grid(SHIPPED.model, SHIPPED.vocab, SHIPPED.task, "half", n=5)


def test_shipped_reverse_fails_without_its_cross_attention():
    cross = [h for h in all_heads(SHIPPED.model) if h.kind == "cross"]
    result = knockout_set(SHIPPED.model, SHIPPED.vocab, SHIPPED.task, cross, n=100)
    assert result["intact"]["exact_match"] == 1.0
    assert result["knocked_out"]["exact_match"] == 0.0
    outputs = compare_outputs(
        SHIPPED.model, spread_sample(TaskData(SHIPPED.task, SHIPPED.vocab), 100), SHIPPED.vocab, cross
    )
    assert list(outputs.columns) == ["input", "expected", "intact", "knocked out"] and len(outputs) == 5
    assert (outputs["intact"] == outputs["expected"]).all() and (outputs["knocked out"] != outputs["expected"]).all()


def test_the_sample_is_the_most_the_grid_cost_allows_and_spreads_over_the_lengths():
    data = TaskData(SHIPPED.task, SHIPPED.vocab)
    n = sample_size(SHIPPED.model, data.valid)
    assert MIN_GRID_SAMPLE < n < 1000
    assert grid_cost(SHIPPED.model, n, 10) <= MAX_GRID_COST < grid_cost(SHIPPED.model, n + 1, 10)
    largest = Transformer(ModelConfig(d_model=256, n_heads=16, n_layers=4, d_ff=1024))  # the app's largest
    assert sample_size(largest, data.valid) == MIN_GRID_SAMPLE
    lengths = (spread_sample(data, 20).src != 0).sum(dim=1)
    assert (lengths.min(), lengths.max()) == (1, 10)  # the first rows alone would all be short
    with pytest.raises(ValueError, match="at least 1 sequence"):
        spread_sample(data, 0)


NARROW = ModelConfig(vocab_size=13, d_model=8, n_heads=8, n_layers=3, d_ff=16)  # the Train form's, many heads


def test_the_cost_of_scoring_counts_each_decoding_step_layer_and_head():
    one_head, one_layer = ModelConfig(**{**vars(NARROW), "n_heads": 1}), ModelConfig(**{**vars(NARROW), "n_layers": 1})
    cost = evaluation_cost(NARROW, 10, 24)
    assert cost > evaluation_cost(one_head, 10, 24) and cost > evaluation_cost(one_layer, 10, 24)
    assert evaluation_cost(NARROW, 1, 24) > 24 * 3 * 10**7  # each of 25 steps x 3 layers: a fixed cost
    assert evaluation_cost(NARROW, 251, 24) > evaluation_cost(NARROW, 250, 24) + 25 * 3 * 10**7  # a second chunk
    recomputed = evaluation_cost(ModelConfig(**{**vars(NARROW), "causal_mask": False}), 10, 24, recompute=True)
    fixed = 25 * 3 * (STEP_COST + STEP_WEIGHT_COST * 8**2)  # the same 25 steps through 3 layers
    # The whole prefix at each step: 25 + 325 decoder positions per sequence instead of 25 + 25, 7x the work.
    assert recomputed - fixed == pytest.approx(7 * (cost - fixed), rel=1e-9)


def test_a_narrow_model_with_many_heads_scores_fewer_sequences_and_a_heavy_one_is_refused():
    task = DataConfig(task="reverse", min_len=1, max_len=24)  # the Train form's longest inputs
    narrow, data = Transformer(NARROW), TaskData(task)
    n = sample_size(narrow, data.valid)
    assert MIN_GRID_SAMPLE <= n < 100 and grid_cost(narrow, n, 24) <= MAX_GRID_COST
    widest = ModelConfig(vocab_size=13, d_model=128, n_heads=8, n_layers=3, d_ff=512)  # the Train form's largest
    assert not grid_allowed(Transformer(widest), task)
    assert grid_allowed(Transformer(widest), DataConfig(task="reverse", min_len=6, max_len=8))  # the form's default
    assert not grid_allowed(Transformer(ModelConfig(d_model=256, n_heads=16, n_layers=4, d_ff=1024)), task)


def test_the_grid_figure_draws_each_kind_layer_by_head():
    grid = knockout_grid(SHIPPED.model, SHIPPED.vocab, SHIPPED.task, n=20)
    figure = knockout_heatmaps(grid.heads, grid.intact["token_acc"], "token_acc")
    heatmaps = [trace for trace in figure.data if trace.type == "heatmap"]  # each with its numbers' trace
    assert len(heatmaps) == 3 and len(figure.data) == 6
    for trace, kind in zip(heatmaps, ATTENTION_KINDS):
        want = grid.heads[grid.heads["kind"] == kind]["token_acc"].tolist()
        assert trace.z.tolist() == [want]  # one layer, four heads
    with pytest.raises(ValueError, match="metric must be one of"):
        knockout_heatmaps(grid.heads, 1.0, "loss")


# ------------------------------------------------------------------------------------------------- CLI


def test_ablate_prints_the_grid_as_json(capsys):
    status, out, err = run_cli(capsys, "ablate", str(REVERSE), "--n", "30")
    assert status == 0 and err == ""
    result = json.loads(out)
    assert set(result) == {"ablation", "n", "n_held_out", "intact", "heads"}
    assert result["ablation"] == "zero" and result["n"] == 30 and result["n_held_out"] == 1000
    assert set(result["intact"]) == {"exact_match", "token_acc"}
    assert len(result["heads"]) == 12 and all(set(e) == set(GRID_COLUMNS) for e in result["heads"])
    assert [(e["kind"], e["layer"], e["head"]) for e in result["heads"][4:6]] == [
        ("decoder_self", 0, 0),
        ("decoder_self", 0, 1),
    ]


def test_ablate_heads_scores_a_chosen_set(capsys):
    status, out, _ = run_cli(
        capsys, "ablate", str(REVERSE), "--heads", "cross:0:1,self:0:2", "--ablation", "mean", "--n", "40"
    )
    result = json.loads(out)
    assert status == 0 and result["removed"] == ["cross:0:1", "self:0:2"] and result["ablation"] == "mean"
    assert result["knocked_out"]["exact_match"] < result["intact"]["exact_match"] == 1.0


@pytest.mark.parametrize(
    "args, message",
    [
        (["--heads", "cross:0"], "error: heads are KIND:LAYER:HEAD"),
        (["--heads", "attn:0:0"], "error: the kind of a head is one of enc, self, cross"),
        (["--heads", "cross:1:0"], "error: cross:1:0: this model has layers 0 to 0"),
        (["--heads", "self:0:9"], "error: self:0:9: this model has heads 0 to 3"),
        (["--n", "0"], "error: --n must be at least 1, got 0"),
    ],
)
def test_ablate_bad_arguments_are_one_line_errors(capsys, args, message):
    status, out, err = run_cli(capsys, "ablate", str(REVERSE), *args)
    assert status == 2 and out == "" and err.startswith(message) and err.count("\n") == 1


@pytest.mark.parametrize("content", [None, b"not a checkpoint"], ids=["missing", "bad"])
def test_ablate_a_missing_or_bad_checkpoint_is_a_one_line_error(capsys, tmp_path, content):
    path = tmp_path / "model.pt"
    if content is not None:
        path.write_bytes(content)
    status, out, err = run_cli(capsys, "ablate", str(path))
    assert status == 2 and out == "" and err.startswith("error: ") and err.count("\n") == 1


def test_ablate_bad_ablation_is_a_usage_error(capsys):
    assert main(["ablate", str(REVERSE), "--ablation", "half"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'half'" in err and len(err.strip().splitlines()) == 1


def test_the_largest_task_from_examples_is_scored_as_a_named_task_of_its_lengths_and_never_parsed_again(monkeypatch):
    data, task, vocab = largest_checkpoint()
    loaded = load_checkpoint(data)
    named = DataConfig("reverse", task.max_len, task.max_len, task.n_symbols)
    own, same_lengths = TaskData(loaded.task, vocab), TaskData(named)
    assert own.valid.src.size(1) == same_lengths.valid.src.size(1) and len(own.valid_sources) <= named.n_valid
    assert sample_size(loaded.model, own.valid) == sample_size(loaded.model, same_lengths.valid)
    built = []
    monkeypatch.setattr(pairs_module.PairsTask, "__init__", lambda *_: built.append(1))
    grid = knockout_grid(loaded.model, vocab, loaded.task, n=1)
    assert grid.n == 1 and not built  # the pairs were parsed and encoded once, by the load
