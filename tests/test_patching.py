"""Activation patching: the clean run's activations copied into the corrupted run, one site at a time."""

import json
import math
from pathlib import Path

import pytest
import torch

import transformer.patching as patching
from transformer.checkpoint import load_checkpoint
from transformer.inspection import attention_module, twin
from transformer.knockout import Head, all_heads
from transformer.limits import MAX_LAYERS, MAX_PATCH_RUNS, check_probe_cost
from transformer.model import ModelConfig, Transformer
from transformer.pairs import pairs_from_rows
from transformer.patching import (
    StreamSite,
    check_patching_cost,
    grid_dict,
    pair_ids,
    patched_run,
    patching_grid,
    record_run,
    stream_sites,
)
from transformer.settings import TRAIN_FORM_LIMITS
from transformer.tasks import GALLERY, TASKS, DataConfig, TaskData, get_task
from transformer.vocab import Vocab

ROOT = Path(__file__).resolve().parents[1]
VOCAB = Vocab.digits(10)


@pytest.fixture(scope="module", params=[False, True], ids=["post-norm", "pre-norm"])
def model() -> Transformer:
    config = ModelConfig(vocab_size=len(VOCAB), d_model=16, n_heads=2, n_layers=2, d_ff=32)
    return Transformer(config, rng=torch.Generator().manual_seed(0)).eval()


def pair() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    clean = torch.tensor([[VOCAB.symbol_id(s) for s in (3, 1, 4, 1, 5)]])  # (1, S)
    corrupted = clean.clone()
    corrupted[0, 2] = VOCAB.symbol_id(9)  # one source token changed
    tgt_in = torch.tensor([[VOCAB.bos_id, *(VOCAB.symbol_id(s) for s in (5, 1, 4, 1, 3))]])  # (1, T)
    return clean, corrupted, tgt_in


def run_with_patches(model, clean, corrupted, tgt_in, sites) -> torch.Tensor:
    """What `patching_grid` does for each site: record the clean run on a twin, then run the corrupted source on
    the twin with the clean activations at `sites` patched in."""
    probe = twin(model)
    _, activations = record_run(probe, clean, tgt_in, sites)
    return patched_run(probe, corrupted, tgt_in, sites, activations)


def test_patching_nothing_gives_the_corrupted_run_exactly(model):
    clean, corrupted, tgt_in = pair()
    with torch.inference_mode():
        want = model(corrupted, tgt_in)
    assert torch.equal(run_with_patches(model, clean, corrupted, tgt_in, []), want)


@pytest.mark.parametrize("layer", [0, 1, 2])
def test_patching_every_encoder_position_gives_the_clean_run_exactly(model, layer):
    clean, corrupted, tgt_in = pair()
    with torch.inference_mode():
        want, other = model(clean, tgt_in), model(corrupted, tgt_in)
    sites = [StreamSite("encoder", layer, p) for p in range(clean.size(1))]
    got = run_with_patches(model, clean, corrupted, tgt_in, sites)
    assert torch.equal(got, want) and not torch.equal(got, other)


def test_patching_every_position_of_the_last_decoder_layer_gives_the_clean_run_exactly(model):
    clean, corrupted, tgt_in = pair()
    with torch.inference_mode():
        want = model(clean, tgt_in)
    sites = [StreamSite("decoder", 2, t) for t in range(tgt_in.size(1))]
    assert torch.equal(run_with_patches(model, clean, corrupted, tgt_in, sites), want)


def test_a_head_patch_replaces_that_heads_slice_and_nothing_else(model):
    clean, corrupted, tgt_in = pair()
    seen = []  # the input of W_O, the concatenated heads (1, T, d_model), at each run
    w_o = attention_module(model, "cross", 1).out_proj
    handle = w_o.register_forward_hook(lambda module, args, output: seen.append(args[0].clone()))
    try:
        with torch.inference_mode():
            model(clean, tgt_in)
            model(corrupted, tgt_in)
        run_with_patches(model, clean, corrupted, tgt_in, [Head("cross", 1, 1)])  # its twin is a copy, hook and all
    finally:
        handle.remove()
    clean_heads, corrupted_heads, _, patched = seen  # the twin's runs: clean (recorded), then patched
    d_k = model.config.d_k
    assert torch.equal(patched[..., d_k:], clean_heads[..., d_k:])
    assert torch.equal(patched[..., :d_k], corrupted_heads[..., :d_k])
    assert not torch.equal(clean_heads[..., d_k:], corrupted_heads[..., d_k:])


@pytest.mark.heavy
def test_the_grid_scores_every_site_and_the_changed_embedding_recovers_everything(model):
    grid = patching_grid(model, VOCAB, DataConfig("reverse"), "3 1 4 1 5", "3 1 9 1 5")
    assert grid.answer == ["5", "1", "4", "1", "3", "EOS"]
    assert len(grid.heads) == len(all_heads(model))
    assert len(grid.stream) == len(stream_sites(model, 5, 6)) == 3 * 5 + 2 * 6
    assert grid.recoverable
    inputs = grid.stream[(grid.stream["stack"] == "encoder") & (grid.stream["layer"] == 0)]
    assert inputs["recovered"].tolist() == [0.0, 0.0, 1.0, 0.0, 0.0]  # only position 2 differs: exact either way
    assert (grid.stream["p"].between(0, 1)).all()


def test_the_answer_is_the_task_s_a_gallery_task_s_or_a_pair_s():
    add = DataConfig("add", 3, 5, 10)
    vocab = Vocab(get_task("add").symbols(10))
    model = Transformer(ModelConfig(vocab_size=len(vocab), d_model=16, n_heads=2, d_ff=32), rng=torch.Generator())
    assert patching_grid(model.eval(), vocab, add, "1 9 + 5", "1 8 + 5").answer == ["2", "4", "EOS"]
    rows = [(f"row {i}", f"{a} {b}", b) for i, (a, b) in enumerate(zip("abcde", "edcba"), 1)]
    pairs = DataConfig.from_pairs(pairs_from_rows(rows, "mine"))
    vocab = Vocab(pairs.pairs.symbols)
    model = Transformer(ModelConfig(vocab_size=len(vocab), d_model=16, n_heads=2, d_ff=32), rng=torch.Generator())
    assert patching_grid(model.eval(), vocab, pairs, "a e", "a d").answer == ["e", "EOS"]
    with pytest.raises(ValueError, match="mine has no pair with the source 'a a'"):
        patching_grid(model, vocab, pairs, "a a", "a b")


@pytest.mark.heavy
def test_the_grid_is_plain_json(model):
    data = grid_dict(patching_grid(model, VOCAB, DataConfig("copy"), "1 2", "1 3"))
    assert json.loads(json.dumps(data, allow_nan=False)) == data
    assert set(data["heads"][0]) == {"kind", "layer", "head", "p", "recovered"}
    assert math.isclose(data["stream"][1]["recovered"], 1.0)  # encoder input at the changed position


def test_an_unchanged_answer_has_nothing_to_recover(model):
    model_ignoring_the_input = Transformer(
        ModelConfig(vocab_size=len(VOCAB), d_model=16, n_heads=2, n_layers=1, d_ff=32), rng=torch.Generator()
    ).eval()
    with torch.no_grad():  # cross-attention's values and output are zero: the decoder never reads the source
        attention_module(model_ignoring_the_input, "cross", 0).out_proj.weight.zero_()
    grid = patching_grid(model_ignoring_the_input, VOCAB, DataConfig("copy"), "1 2 3", "1 2 4")
    assert not grid.recoverable
    assert grid.heads["recovered"].isna().all()
    assert all(row["recovered"] is None for row in grid_dict(grid)["stream"])


@pytest.mark.parametrize(
    ("clean", "corrupted", "message"),
    [
        ("1 2 3", "1 2", "as long as"),
        ("1 2 3", "1 2 3", "the same"),
        ("1 2 x", "1 2 3", r"^unknown symbol .* \(the clean input\)$"),
        ("1 2 3", "1 " * 64, r"^input has 64 symbols; the most is 63 \(the corrupted input\)$"),
    ],
)
def test_inputs_that_cannot_be_compared_are_refused(clean, corrupted, message):
    with pytest.raises(ValueError, match=message):
        pair_ids(VOCAB, clean, corrupted, 63)


def test_a_grid_past_the_bound_is_refused_before_it_runs():
    config = ModelConfig(vocab_size=len(VOCAB), d_model=8, n_heads=1, n_layers=4, d_ff=8, max_len=256)
    long_model = Transformer(config, rng=torch.Generator().manual_seed(0))
    length = MAX_PATCH_RUNS // 9 + 1  # 5 encoder and 4 decoder stream rows at each position
    with pytest.raises(ValueError, match="runs, more than"):
        check_patching_cost(long_model, length, length + 1)
    check_patching_cost(long_model, 10, 11)


def test_a_deep_models_grid_is_refused_before_it_runs(monkeypatch):
    config = ModelConfig(vocab_size=len(VOCAB), d_model=8, n_heads=1, n_layers=MAX_LAYERS, d_ff=8)
    deep_model = Transformer(config, rng=torch.Generator().manual_seed(0))
    assert 2 + len(all_heads(deep_model)) + len(stream_sites(deep_model, 1, 2)) < MAX_PATCH_RUNS
    check_probe_cost(config, 1, 1, passes=MAX_PATCH_RUNS)  # few runs of few multiply-adds: only its depth is costly

    def never(model):
        raise AssertionError("the grid ran")

    monkeypatch.setattr(patching, "twin", never)
    with pytest.raises(ValueError, match=r"64 encoder and 64 decoder layers, \d+x the work one request may do"):
        patching_grid(deep_model, VOCAB, DataConfig("reverse"), "1", "2")  # the shortest input there is


@pytest.mark.parametrize("path", sorted((ROOT / "checkpoints").glob("*.pt")), ids=lambda path: path.stem)
def test_the_shipped_models_patch_their_tasks_longest_inputs(path):
    checkpoint = load_checkpoint(path)
    task, n = checkpoint.task, checkpoint.vocab.n_symbols
    answer = get_task(task.task).target([i % n for i in range(task.max_len)], n)
    check_patching_cost(checkpoint.model, task.max_len, len(answer) + 1)


def test_the_train_forms_largest_model_patches_its_longest_inputs():
    sizes = {name: TRAIN_FORM_LIMITS[name][1] for name in ("d_model", "n_heads", "n_layers", "d_ff")}
    model = Transformer(ModelConfig(vocab_size=len(VOCAB), **sizes), rng=torch.Generator().manual_seed(0))
    longest = TRAIN_FORM_LIMITS["max_len"][1]
    check_patching_cost(model, longest, longest + 1)


@pytest.mark.heavy
def test_the_command_line_prints_the_grid_as_json(tmp_path, capsys, model):
    from transformer.checkpoint import save_checkpoint
    from transformer.cli import main

    path = save_checkpoint(tmp_path / "m.pt", model, VOCAB, DataConfig(task="reverse", max_len=8))
    assert main(["patch", str(path), "--clean", "3 1 4", "--corrupt", "3 1 5"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == grid_dict(patching_grid(model, VOCAB, DataConfig("reverse"), "3 1 4", "3 1 5"))
    assert main(["patch", str(path), "--clean", "3 1 4", "--corrupt", "3 1"]) == 2
    assert "as long as the clean one" in capsys.readouterr().err


@pytest.mark.parametrize("name", [*TASKS, *GALLERY])
def test_the_inputs_offered_for_patching_are_inputs_of_the_task_one_symbol_apart_with_other_answers(name):
    """The Knockout page starts its patching from these: a change that left the answer as it was (dedup's 4 into a
    5 already there) has nothing to recover, and add's "+" changed into a digit is no addition."""
    rule = get_task(name)
    data = {k: v for k, v in getattr(rule, "defaults", {}).items() if k in ("min_len", "max_len", "n_symbols")}
    task = DataConfig(task=name, **data)
    held_out = TaskData(task)
    clean, changed = patching.patching_pair(task, held_out.valid_sources[:20], len(held_out.vocab.symbols))
    assert clean in held_out.valid_sources[:20] and sum(a != b for a, b in zip(changed, clean, strict=True)) == 1
    assert rule.target(changed, task.n_symbols) != rule.target(clean, task.n_symbols)


def test_a_corruption_changes_the_symbol_nearest_the_middle_that_changes_the_answer():
    add = DataConfig(task="add", min_len=3, max_len=5, n_symbols=10)
    assert patching.patching_pair(add, [[4, 8, 10, 8, 6]], 11)[1] == [4, 9, 10, 8, 6]  # 4 8 + 8 6: not the "+"
    dedup = DataConfig(task="dedup", min_len=4, max_len=8, n_symbols=6)
    assert patching.patching_pair(dedup, [[4, 4, 5, 0, 4, 5, 5, 5]], 6)[1] == [4, 4, 5, 0, 1, 5, 5, 5]  # 4 5 0 1
    brackets = DataConfig(task="brackets", min_len=6, max_len=6, n_symbols=8)
    unbalanced_twice, balanced = [0, 0, 2, 2, 4, 4], [0, 1, 2, 3, 4, 5]  # no one change balances the first
    assert patching.patching_pair(brackets, [unbalanced_twice, balanced], 10) == (balanced, [0, 1, 2, 4, 4, 5])


def test_a_count_input_s_message_names_only_the_letters_a_source_may_hold():
    """The hint listed count's digits too ("use a b c d 0 1 2 ..."), then "a 0 b" was refused as no count input."""
    task = DataConfig(task="count", min_len=3, max_len=5, n_symbols=4)
    vocab = TaskData(task).vocab
    config = ModelConfig(vocab_size=len(vocab), d_model=8, n_heads=1, d_ff=8)
    model = Transformer(config, rng=torch.Generator().manual_seed(0)).eval()
    with pytest.raises(ValueError) as refused:
        patching_grid(model, vocab, task, "a 0 b", "a b b")
    said = str(refused.value)
    assert said.startswith("unknown symbol '0'; use a b c d") and "(the clean input)" in said
    answer = patching_grid(model, vocab, task, "a c b", "a b b").answer
    assert answer == ["1", "1", "1", "0", "EOS"]  # a, b and c once, no d
