"""What a lab report holds of a finished run: its settings, rows and result as the run has them, held-out examples
the model answers, the probe's attention as softmax makes it, the alignment the task fixes, the length test of the
run's own model only; and JSON that reads back the same and refuses anything else or anything larger."""

import json
from dataclasses import asdict, replace
from itertools import product
from types import SimpleNamespace

import pytest
import torch

from transformer import settings as spec
from transformer.checkpoint import checkpoint_bytes, load_checkpoint
from transformer.lengths import score_lengths
from transformer.limits import MAX_REPORT_CHARS, MAX_REPORT_WEIGHTS, MAX_RUN_ROWS, MAX_SEQ_LEN
from transformer.model import ModelConfig
from transformer.naming import _switch_names, run_name
from transformer.pairs import MAX_TASK_NAME_CHARS
from transformer.recurrent import build_model
from transformer.report_data import (
    EXAMPLES,
    MAX_NAME_SHOWN,
    MAX_TEXT,
    AlignmentLine,
    Example,
    ProbeAttention,
    ReportData,
    from_json,
    gather,
    to_json,
)
from transformer.serving import finished_run
from transformer.task import REGISTRY
from transformer.training import METRIC_COLUMNS

SETTINGS = dict(task="reverse", min_len=3, max_len=4, seed=0)


@pytest.fixture(scope="module")
def run():
    with finished_run(**SETTINGS) as run:
        yield run


@pytest.fixture(scope="module")
def report(run) -> ReportData:
    return gather(run)


def test_a_report_holds_the_settings_rows_and_result_of_the_run(run, report):
    assert {name: report.settings[name] for name in SETTINGS} == SETTINGS
    assert report.settings["d_model"] == run.model_config.d_model and report.settings["lr"] == run.train_config.lr
    assert report.step == run.step == report.result["steps"]
    assert report.result == pytest.approx(asdict(run.result), rel=1e-5)
    assert [row["step"] for row in report.rows] == [row["step"] for row in run.rows]
    assert report.rows[-1] == pytest.approx({name: run.rows[-1][name] for name in METRIC_COLUMNS}, rel=1e-5)


def test_its_examples_are_held_out_inputs_and_the_model_s_answers(run, report):
    assert run.result.reason == "solved"  # every held-out sequence right: so are the examples
    assert len(report.examples) == EXAMPLES
    held_out = {" ".join(map(str, source)) for source in run.data().valid_sources}
    for example in report.examples:
        assert example.source in held_out
        assert example.target == " ".join(example.source.split()[::-1])  # reverse
        assert example.right and example.output == example.target


def test_its_attention_maps_are_the_probe_s_weights_at_the_last_snapshot(run, report):
    probe, source = report.attention, run.data().valid_sources[0]
    S, T = len(source), len(source) + 1  # the decoder reads BOS and the target, as long as the source
    assert probe.step == run.attention[-1]["step"]
    assert probe.source == [str(s) for s in source] and probe.queries == ["BOS", *map(str, source[::-1])]
    assert list(probe.maps) == ["cross", "encoder", "decoder_self"]  # a small model: every kind fits
    shapes = {"cross": (T, S), "encoder": (S, S), "decoder_self": (T, T)}
    for kind, layers in probe.maps.items():
        weights = torch.tensor(layers)
        assert weights.shape == (run.model_config.n_layers, run.model_config.n_heads, *shapes[kind])
        # softmax rows, each weight rounded to 4 decimals
        assert torch.allclose(weights.sum(-1), torch.ones(weights.shape[:-1], dtype=weights.dtype), atol=5e-5 * S)


def test_the_ideal_is_reverse_s_anti_diagonal_and_a_head_s_score_its_mean_weight_there(report):
    probe = report.attention
    S = len(probe.source)
    ideal = torch.tensor(probe.ideal)
    assert torch.equal(ideal[:S], torch.eye(S).flip(1).double()) and not ideal[S:].any()  # the EOS row: no key
    cross = torch.tensor(probe.maps["cross"])  # (L, H, T, S)
    on_ideal = cross[:, :, torch.arange(S), torch.arange(S).flip(0)].mean(-1)
    assert torch.allclose(torch.tensor(probe.scores), on_ideal, atol=1e-4)


def test_the_alignment_line_is_the_best_head_at_every_snapshot(run, report):
    line = report.alignment
    assert line.steps == [snapshot["step"] for snapshot in run.attention]
    assert line.chance == pytest.approx(1 / len(report.attention.source))
    final = torch.tensor(report.attention.scores)
    label, score = line.best[-1]
    layer, head = divmod(int(final.argmax()), final.size(1))
    assert label == f"L{layer} H{head}" and score == pytest.approx(float(final.max()), abs=2e-4)


def test_a_task_without_an_ideal_alignment_has_maps_but_no_ideal_nor_line(run, monkeypatch):
    monkeypatch.setitem(REGISTRY, "reverse", replace(REGISTRY["reverse"], alignment=None))
    report = gather(run)
    assert report.attention.maps and report.attention.ideal is None and report.attention.scores is None
    assert report.alignment is None


def test_a_length_test_is_kept_only_when_it_tested_the_run_s_own_model(run):
    model = run.model()
    scores = score_lengths(model, run.data().vocab, run.data_config, range(1, 7), 10).scores
    again = load_checkpoint(checkpoint_bytes(model, run.data().vocab, run.data_config, run.rows[:], {}))
    kept = gather(run, (again.model, scores)).lengths  # the same weights in another object
    assert [row["length"] for row in kept] == list(range(1, 7))
    assert [row["trained"] for row in kept] == [3 <= n <= 4 for n in range(1, 7)]
    assert [row["exact_match"] for row in kept] == pytest.approx(scores["exact_match"].tolist())
    other = build_model(run.model_config, torch.Generator().manual_seed(1))
    assert gather(run, (other, scores)).lengths is None


def test_json_reads_back_the_same_report(run, report):
    scores = score_lengths(run.model(), run.data().vocab, run.data_config, range(1, 5), 5).scores
    with_lengths = gather(run, (run.model(), scores))
    for kept in (report, with_lengths):
        text = to_json(kept)
        assert from_json(text) == kept and to_json(from_json(text)) == text


@pytest.mark.parametrize(
    "change",
    [
        lambda d: "not json",
        lambda d: json.dumps({**d, "rows": "many"}),
        lambda d: json.dumps({k: v for k, v in d.items() if k != "examples"}),
        lambda d: json.dumps({**d, "examples": [{"source": 1, "target": "", "output": "", "right": True}]}),
        lambda d: json.dumps({**d, "rows": d["rows"] * (MAX_RUN_ROWS + 1)}),
        lambda d: json.dumps({**d, "attention": {**d["attention"], "maps": {"cross": [[[0.5, "x"]]]}}}),
        lambda d: json.dumps({**d, "alignment": {**d["alignment"], "steps": d["alignment"]["steps"][:-1]}}),
        lambda d: json.dumps(d) + " " * MAX_REPORT_CHARS,
    ],
)
def test_json_that_is_no_report_is_refused_in_a_sentence(report, change):
    with pytest.raises(ValueError, match="lab report|alignment line"):
        from_json(change(json.loads(to_json(report))))


def test_text_past_what_a_report_shows_is_cut_with_an_ellipsis_not_refused(report):
    data = json.loads(to_json(report))
    data["name"], data["examples"][0]["output"] = "x" * 1000, "y " * MAX_TEXT
    read = from_json(json.dumps(data))
    assert read.name == "x" * (MAX_NAME_SHOWN - 1) + "…"
    assert len(read.examples[0].output) == MAX_TEXT and read.examples[0].output.endswith("…")
    assert read.examples[1:] == report.examples[1:] and read.rows == report.rows


def test_every_run_name_the_lab_makes_is_shown_whole():
    """The longest: a task's longest name, the longest inputs, the largest model a run may have, every combination of
    teaching switches, and a number that makes it unique among a session's models."""
    task = SimpleNamespace(
        pairs=SimpleNamespace(name="名" * MAX_TASK_NAME_CHARS), min_len=MAX_SEQ_LEN, max_len=MAX_SEQ_LEN
    )
    sizes = {name: spec.RUN_LIMITS[name][1] for name in ("d_model", "n_heads", "n_layers")}
    switches = _switch_names()
    for values in product(*(spec.setting(name).options for name in switches)):
        model = ModelConfig(**dict(zip(switches, values)), **sizes)
        base = run_name(model, task)
        assert len(run_name(model, task, {base, *(f"{base}-{i}" for i in range(2, 100))})) <= MAX_NAME_SHOWN


def test_attention_past_its_bound_is_refused(report):
    over = [[[[0.5] * 20] * 20] * 41]  # 16,400 weights
    data = json.loads(to_json(report))
    data["attention"]["maps"] = {"cross": over}
    with pytest.raises(ValueError, match=f"{MAX_REPORT_WEIGHTS:,} attention weights"):
        from_json(json.dumps(data))


def test_the_largest_report_the_bounds_allow_fits_the_database_s_bound(report):
    """Every part at its most: MAX_RUN_ROWS rows and snapshots, MAX_REPORT_WEIGHTS weights of 4 decimals, the longest
    examples, a length test of every length."""
    row = {name: 1.23457e-05 for name in METRIC_COLUMNS}  # 6 significant digits, as gather keeps them
    weights = [0.1234] * MAX_REPORT_WEIGHTS
    longest = "x" * MAX_TEXT
    tokens = ["y" * 16] * (MAX_SEQ_LEN + 1)
    ideal = [[1.0] * MAX_SEQ_LEN] * (MAX_SEQ_LEN + 1)
    largest = replace(
        report,
        rows=[row] * MAX_RUN_ROWS,
        examples=[Example(longest, longest, longest, False)] * EXAMPLES,
        attention=ProbeAttention(10**6, tokens[1:], tokens, {"cross": [[weights]]}, ideal, [[0.1234] * 16] * 4),
        alignment=AlignmentLine([10**6] * MAX_RUN_ROWS, [("L3 H15", 0.1234)] * MAX_RUN_ROWS, 0.015625),
        lengths=[
            dict(length=64, trained=False, n=1000, exact_match=0.123456, symbols_right=0.123456, output_len=12.3456,
                 target_len=12.3456)
        ] * MAX_SEQ_LEN,
    )  # fmt: skip
    assert len(to_json(largest)) <= MAX_REPORT_CHARS
