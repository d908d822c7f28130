"""Settings into a run's configs: one builder for the Train form, a class, Compare and the command line, with one
rule for the model's max_len."""

import pytest

from transformer.checkpoint import checkpoint_bytes, load_checkpoint
from transformer.experiments import READY, load_shipped
from transformer.i18n import message_of, translator
from transformer.model import ModelConfig, Transformer
from transformer.pairs import pairs_from_rows
from transformer.run_configs import eval_every_for, model_max_len, run_configs
from transformer.tasks import DataConfig
from transformer.training import TrainConfig, suggested_lr
from transformer.vocab import Vocab

DATA = dict(task="reverse", min_len=2, max_len=5, n_symbols=6, seed=0)
MODEL = dict(
    d_model=32,
    n_heads=4,
    n_layers=1,
    d_ff=64,
    dropout=0.0,
    positional="learned",
    norm_first=True,
    causal_mask=True,
    scale_scores=False,
)
TRAIN = dict(
    steps=100,
    time_budget_s=30.0,
    batch_size=64,
    lr=1e-3,
    warmup=10,
    schedule="constant",
    label_smoothing=0.1,
    device="cpu",
)
SETTINGS = {**DATA, **MODEL, **TRAIN}


def test_run_configs_fits_the_model_to_the_data():
    model, data, train = run_configs(SETTINGS)
    assert data == DataConfig(**DATA)
    assert model.vocab_size == 6 + 3 and model.longest_sequence >= 5
    assert (model.positional, model.norm_first, model.scale_scores) == ("learned", True, False)
    assert train.record_attention and train.steps == 100 and train.schedule == "constant" and train.seed == 0
    assert 5 <= train.eval_every <= 25


def test_an_empty_learning_rate_is_the_peak_for_the_model_size():
    peak = TrainConfig().lr
    assert suggested_lr(32, 1) == peak  # the default model: the default peak
    assert suggested_lr(8, 1) == peak  # never above it
    assert suggested_lr(64, 2) == pytest.approx(peak / 4)
    assert suggested_lr(128, 3) == pytest.approx(0.0025)  # the Train form's largest
    _, _, train = run_configs({**SETTINGS, "d_model": 64, "n_layers": 2, "lr": None})
    assert train.lr == pytest.approx(peak / 4)
    assert run_configs(SETTINGS)[2].lr == TRAIN["lr"]  # a number given is the number used
    with pytest.raises(ValueError, match="d_model must be between"):  # checked before it sizes anything
        run_configs({**SETTINGS, "d_model": 2**40, "lr": None})


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(d_model=30, n_heads=4), "d_model (30) must be divisible by the number of heads (4)"),
        (dict(d_model=30, n_heads=4), "use 1, 2, 3, 5 or 6 heads"),
        (dict(min_len=6, max_len=3), "the shortest input (min_len 6) is longer than the longest (max_len 3)"),
        (dict(task="nope"), "unknown task"),
        (dict(dropout=1.5), "dropout"),
        (dict(vocab_size=13), "is not a setting"),  # it follows from the symbols
    ],
)
def test_run_configs_explains_what_does_not_fit(changes, message):
    with pytest.raises(ValueError) as err:
        run_configs({**SETTINGS, **changes})
    assert message in str(err.value)


@pytest.mark.parametrize(
    "changes, chinese",
    [
        (dict(d_model=30, n_heads=4), "请用 1、2、3、5 或 6 个头"),
        (dict(min_len=6, max_len=3), "最短输入（min_len 6）比最长输入（max_len 3）还长"),
    ],
)
def test_what_does_not_fit_reads_in_the_pages_language(changes, chinese):
    """Compare's custom builder shows these refusals: a Chinese page shows them in Chinese, as one sentence that
    its page ends (no full stop of its own)."""
    with pytest.raises(ValueError) as err:
        run_configs({**SETTINGS, **changes})
    said = translator("zh-CN")(message_of(err.value))
    assert chinese in said and not said.endswith(("。", "."))
    assert not str(err.value).endswith(".")


def test_bigger_runs_report_more_often():
    small = eval_every_for(ModelConfig(), DataConfig(min_len=10, max_len=10), 128)
    big = eval_every_for(ModelConfig(d_model=128, d_ff=512, n_layers=3), DataConfig(min_len=24, max_len=24), 256)
    tiny = eval_every_for(ModelConfig(d_model=8, d_ff=16), DataConfig(min_len=1, max_len=1), 8)
    assert small == 25 and big == 5 and tiny == 25


def test_a_run_on_the_users_machine_keeps_its_own_eval_every_and_bigger_bounds():
    model, _, train = run_configs({**SETTINGS, "steps": 100_000, "eval_every": 7}, shared=False)
    assert train.steps == 100_000 and train.eval_every == 7 and not train.record_attention
    with pytest.raises(ValueError, match="steps must be between"):
        run_configs({**SETTINGS, "steps": 100_000})  # too long for the shared server


@pytest.mark.parametrize("longest, shared", [(1, True), (24, True), (1, False), (63, False), (64, False)])
def test_one_max_len_rule_fits_bos_and_the_longest_target(longest, shared):
    model, data, _ = run_configs({**SETTINGS, "min_len": 1, "max_len": longest}, shared=shared)
    assert model.max_len == model_max_len(data) == max(ModelConfig.max_len, longest + 1)
    assert data.max_len <= model.longest_sequence  # what a checkpoint of this run must satisfy
    load_checkpoint(checkpoint_bytes(Transformer(model), Vocab.digits(data.n_symbols), data))  # and does


def test_the_rule_keeps_every_shipped_model_and_experiment_as_it_is():
    for name in ("copy", "reverse", "sort", "reverse-early"):
        checkpoint = load_checkpoint(f"checkpoints/{name}.pt")
        assert checkpoint.config.max_len == model_max_len(checkpoint.task)
    for key, experiment in READY.items():
        assert experiment.model.max_len == model_max_len(experiment.data)
        run = load_shipped(key)
        assert run is not None and run.experiment.model == experiment.model


def test_a_gallery_task_s_vocabulary_sizes_the_model_and_its_longest_target_its_positions():
    model, data, _ = run_configs({"task": "add", "min_len": 3, "max_len": 5, "n_symbols": 7}, shared=False)
    assert model.vocab_size == 3 + 7 + 1  # specials, the digits of base 7, and "+"
    model, data, _ = run_configs({"task": "repeat", "min_len": 1, "max_len": 32}, shared=False)
    assert model.longest_sequence == 64 == 2 * data.max_len  # the target of 32 symbols said twice, after BOS
    model, data, _ = run_configs({"task": "count", "min_len": 1, "max_len": 9, "n_symbols": 10}, shared=False)
    assert model.vocab_size == 3 + 10 + 10  # the letters, and the digits of the counts


def test_a_task_from_examples_sets_the_data_from_its_pairs_and_keeps_the_seed():
    rows = [(f"row {i}", f"{a} {b}", f"{b} {a} {a}") for i, (a, b) in enumerate(zip("abcdefg", "gfedcba"), 1)]
    pairs = pairs_from_rows(rows, "mine")
    model, data, train = run_configs({"task": "sort", "min_len": 9, "max_len": 12, "seed": 7}, pairs=pairs)
    assert data == DataConfig.from_pairs(pairs, seed=7) and train.seed == 7
    assert model.vocab_size == 3 + len(pairs.symbols) and model.max_len == model_max_len(data)
