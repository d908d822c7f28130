"""What the Train and Checkpoints pages show of a run: progress, thinned curves, live examples, names and summaries
of runs and checkpoints, and reading uploads."""

import pytest
import torch

from transformer.checkpoint import FINAL, Checkpoint, CheckpointError, checkpoint_bytes
from transformer.curves import downsample, metrics_table
from transformer.live_examples import live_examples
from transformer.model import ModelConfig, Transformer
from transformer.naming import checkpoint_summary, run_name, run_summary, switches
from transformer.pairs import pairs_from_rows, task_name
from transformer.progress import progress
from transformer.tasks import DataConfig, TaskData
from transformer.training import METRIC_COLUMNS, TrainConfig
from transformer.uploads import read_upload, shown_name
from transformer.vocab import Vocab

DATA = dict(task="reverse", min_len=2, max_len=5, n_symbols=6, seed=0)


def test_progress_rate_and_eta_bounded_by_both_budgets():
    config = TrainConfig(steps=1000, time_budget_s=60)
    assert progress([], config).eta_s is None and progress([], config).fraction == 0
    p = progress([{"step": 100, "elapsed_s": 2.0}], config)
    assert (p.step, p.fraction, p.steps_per_s, p.eta_s) == (100, 0.1, 50.0, 18.0)
    slow = progress([{"step": 100, "elapsed_s": 50.0}], config)
    assert slow.eta_s == 10.0  # the time budget ends first
    assert progress([{"step": 1000, "elapsed_s": 70.0}], config).eta_s == 0.0


def test_downsample_keeps_both_ends():
    rows = [{"step": i} for i in range(1, 1001)]
    assert downsample(rows[:10]) == rows[:10]
    thin = downsample(rows, 100)
    assert len(thin) == 100 and thin[0] == rows[0] and thin[-1] == rows[-1]
    with pytest.raises(ValueError):
        downsample(rows, 1)


def test_metrics_table_has_the_training_columns():
    table = metrics_table([{"step": 25, "train_loss": 1.0}])
    assert list(table.columns) == list(METRIC_COLUMNS) and table.loc[0, "train_loss"] == 1.0


@pytest.fixture(scope="module")
def data() -> TaskData:
    return TaskData(DataConfig(**DATA))


def test_live_examples_mark_each_output(data, monkeypatch):
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=9)).eval()
    first = data.make_batch(data.valid_sources[:5])

    def decode_two_right(model, src, bos_id, eos_id, max_len):
        out = first.tgt_out.clone()
        zero, one = data.vocab.symbol_id(0), data.vocab.symbol_id(1)
        out[2:, 0] = torch.where(out[2:, 0] == zero, one, zero)
        return out

    monkeypatch.setattr("transformer.live_examples.greedy_decode", decode_two_right)
    table = live_examples(model, data)
    assert list(table.columns) == ["right", "input", "model output", "target"]
    assert table["right"].tolist() == ["✓", "✓", "✗", "✗", "✗"]
    source = [str(s) for s in data.valid_sources[0]]
    assert table.loc[0, "input"] == " ".join(source) and table.loc[0, "target"] == " ".join(source[::-1])
    assert table.loc[0, "model output"] == table.loc[0, "target"]


def test_live_examples_of_a_real_model(data):
    torch.manual_seed(0)
    table = live_examples(Transformer(ModelConfig(vocab_size=9)).eval(), data, n=3)
    assert len(table) == 3 and set(table["right"]) <= {"✓", "✗"}
    wrong = table["model output"] != table["target"]
    assert (table["right"][wrong] == "✗").all()


def test_run_name_is_short_key_safe_and_unique():
    model, data = ModelConfig(d_model=64, n_heads=8, n_layers=2), DataConfig(task="swap_pairs", min_len=3, max_len=9)
    assert run_name(model, data) == "swap_pairs-3to9-d64h8n2"
    assert (
        run_name(model, data, {"swap_pairs-3to9-d64h8n2", "swap_pairs-3to9-d64h8n2-2"}) == "swap_pairs-3to9-d64h8n2-3"
    )


def test_a_task_file_named_in_any_script_keeps_its_letters_in_the_run_name():
    rows = [(f"line {i}", f"{a} {b}", f"{a} {a} {b} {b}") for i, (a, b) in enumerate(zip("abcdefgh", "bcdefgha"))]
    data = DataConfig.from_pairs(pairs_from_rows(rows, task_name("双写词 lesson 7.csv")), seed=0)
    assert run_name(ModelConfig(), data) == "双写词_lesson_7_csv-2to2-d32h4n1"


@pytest.mark.parametrize(
    "switch, tag",
    [
        (dict(positional="none"), "noPE"),
        (dict(positional="learned"), "learnedPE"),
        (dict(norm_first=True), "prenorm"),
        (dict(causal_mask=False), "nocausalmask"),
        (dict(scale_scores=False), "unscaledscores"),
        (dict(tie_weights=True), "tied"),
    ],
)
def test_run_names_and_summaries_show_the_teaching_switches(switch, tag):
    data = DataConfig(task="reverse", min_len=6, max_len=8)
    assert run_name(ModelConfig(**switch), data) == f"reverse-6to8-d32h4n1-{tag}"
    both = ModelConfig(positional="none", causal_mask=False)
    assert run_name(both, data) == "reverse-6to8-d32h4n1-noPE-nocausalmask"
    assert switches(both) == ["noPE", "nocausalmask"]
    summary = run_summary(both, data, TrainConfig())
    assert "no PE" in summary and "no causal mask" in summary  # the settings' words
    assert "post-norm" not in summary and "sinusoidal PE" not in summary  # a setting at its default goes unsaid
    budgets = run_summary(both, data, TrainConfig(steps=77, time_budget_s=9.0, batch_size=32))
    assert "batch 32" in budgets and "77" not in budgets and "budget" not in budgets  # how long: unsaid


def small_checkpoint(history: list[dict]) -> Checkpoint:
    torch.manual_seed(0)
    config = ModelConfig(vocab_size=9, d_model=16, n_heads=2, d_ff=32)
    return Checkpoint(Transformer(config).eval(), Vocab.digits(6), config, DataConfig(**DATA), history, {})


def test_checkpoint_summary():
    ckpt = small_checkpoint([{"step": 25, "exact_match": 0.5}, {"step": 50, "exact_match": 0.75}])
    row = checkpoint_summary("mine", "trained", ckpt)
    assert row == {
        "name": "mine",
        "source": "trained",
        "task": "reverse",
        "lengths": "2-5",
        "symbols": 6,
        "d_model": 16,
        "heads": 2,
        "layers": 1,
        "switches": "-",
        "parameters": ckpt.model.num_parameters(),
        "exact_match": 0.75,
    }
    assert checkpoint_summary("x", "shipped", small_checkpoint([]))["exact_match"] is None


@pytest.mark.parametrize(("kept", "listed"), [(0.995, 0.995), (1, 1.0), ("0.9", 0.75), (True, 0.75), (1.5, 0.75)])
def test_a_checkpoint_is_listed_with_the_score_its_run_ended_with_else_its_last_row_s(kept, listed):
    """The run's final score on its whole held-out set, kept in the file, over its last metric row's sample of it; a
    file's kept value that is no share (an upload's may be anything) is passed over."""
    ckpt = small_checkpoint([{"step": 25, "exact_match": 0.5}, {"step": 50, "exact_match": 0.75}])
    ckpt.meta[FINAL] = kept
    assert checkpoint_summary("mine", "uploaded", ckpt)["exact_match"] == listed


def test_read_upload_accepts_a_checkpoint_and_refuses_anything_else():
    ckpt = small_checkpoint([])
    data = checkpoint_bytes(ckpt.model, ckpt.vocab, ckpt.task)
    loaded, label = read_upload("my model.pt", data)
    assert label == "uploaded: my model.pt" and loaded.config == ckpt.config
    for bad in (b"", b"not a checkpoint", data[: len(data) // 2]):
        with pytest.raises(CheckpointError):
            read_upload("broken.pt", bad)


def test_shown_name_is_safe_and_short():
    assert shown_name("a*b`c](x).pt") == "a_b_c__x_.pt"
    assert shown_name("   ") == "file"
    long = shown_name("x" * 100 + ".pt")
    assert len(long) == 60 and long.endswith("...")
