import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import transformer.cli_model as cli_model
from tests.helpers.cli import run_cli
from transformer.checkpoint import load_checkpoint
from transformer.decoding import greedy_decode
from transformer.evaluation import evaluate
from transformer.literal import printable
from transformer.task_file import read_task_path
from transformer.tasks import TaskData

pytestmark = pytest.mark.usefixtures("cli_one_thread")  # tests/conftest.py

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 300  # seconds; only a safety net, each command takes a few
# Commands run on one torch thread: the models are tiny, and a busy machine slows 2-thread torch far more.
ENV = {**os.environ, "TRANSFORMER_THREADS": "1"}
RESULT_KEYS = {"task", "steps", "seconds", "exact_match", "token_acc", "reason", "out"}


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "transformer", *args]


def cli(*args: str) -> subprocess.CompletedProcess:
    """`python -m transformer ARGS` run to the end in a subprocess."""
    return subprocess.run(command(*args), cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=TIMEOUT_S)


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple[dict, str, Path]:
    """A short copy run at length 3, end to end: its JSON result, its stderr, and its checkpoint."""
    path = tmp_path_factory.mktemp("cli") / "copy.pt"
    args = [
        "train",
        "--task",
        "copy",
        "--min-len",
        "3",
        "--max-len",
        "3",
        "--n-valid",
        "100",
        "--steps",
        "150",
        "--eval-every",
        "50",
    ]
    done = cli(*args, "--out", str(path))
    assert done.returncode == 0 and "Traceback" not in done.stderr
    return json.loads(done.stdout), done.stderr, path


def test_train_prints_one_json_line_and_saves(trained):
    result, stderr, path = trained
    assert set(result) == RESULT_KEYS
    assert result["task"] == "copy" and result["out"] == str(path)
    assert 1 <= result["steps"] <= 150 and result["seconds"] > 0
    assert 0 <= result["token_acc"] <= 1 and 0 <= result["exact_match"] <= 1
    assert "step    50" in stderr and "tok/s" in stderr  # progress rows
    checkpoint = load_checkpoint(path)
    assert (checkpoint.task.task, checkpoint.task.min_len, checkpoint.task.max_len) == ("copy", 3, 3)
    assert checkpoint.config.max_len >= 4 and checkpoint.train_config["steps"] == 150
    assert checkpoint.train_config["lr"] == 0.03  # no --lr: the peak for the default model's size
    assert checkpoint.history and checkpoint.history[-1]["step"] == result["steps"]


def test_train_without_lr_takes_the_peak_for_the_model_size_and_with_it_the_number_given(capsys, tmp_path):
    small = ["train", "--task", "copy", "--min-len", "3", "--max-len", "3", "--n-valid", "10", "--steps", "1"]
    for extra, peak in (([], 0.0075), (["--lr", "0.02"], 0.02)):
        status, _, _ = run_cli(
            capsys, *small, "--d-model", "64", "--layers", "2", *extra, "--out", str(tmp_path / "m.pt")
        )
        assert status == 0 and load_checkpoint(tmp_path / "m.pt").train_config["lr"] == pytest.approx(peak)


def test_predict_prints_the_greedy_output(trained, capsys):
    path = trained[2]
    status, out, err = run_cli(capsys, "predict", str(path), "3 1 4")
    assert status == 0 and err == ""
    checkpoint = load_checkpoint(path)
    vocab, longest = checkpoint.vocab, checkpoint.config.max_len - 1
    src = torch.tensor([vocab.encode("3 1 4")])
    assert out == vocab.decode(greedy_decode(checkpoint.model, src, vocab.bos_id, vocab.eos_id, longest)[0]) + "\n"
    assert len(out.split()) == 3  # the model has learned that copy keeps the length


@pytest.mark.parametrize("order", ["sequence first", "option first"])
def test_predict_with_beam_search(trained, capsys, order):
    args = ["5 6 7", "--beam", "3"] if order == "sequence first" else ["--beam", "3", "5 6 7"]
    status, out, _ = run_cli(capsys, "predict", str(trained[2]), *args)
    assert status == 0 and len(out.split()) == 3


def test_predict_input_file_prints_one_line_per_line_and_reports_bad_ones(trained, tmp_path, capsys):
    lines = tmp_path / "in.txt"
    lines.write_bytes(b"1 2 3\n\n1 x 3\n4 5 6\n\xff\xfe 1\n")
    status, out, err = run_cli(capsys, "predict", str(trained[2]), "--input", str(lines))
    assert status == 1
    assert err.splitlines()[0].startswith("line 3: ") and "'x'" in err
    assert err.splitlines()[1] == "line 5: not UTF-8 text" and len(err.splitlines()) == 2
    single = {good: run_cli(capsys, "predict", str(trained[2]), good)[1] for good in ("1 2 3", "4 5 6")}
    assert out == single["1 2 3"] + "\n\n" + single["4 5 6"] + "\n"  # output line n answers input line n


def test_predict_input_file_without_sequences_is_an_error(trained, tmp_path, capsys):
    lines = tmp_path / "blank.txt"
    lines.write_text("\n  \n")
    status, out, err = run_cli(capsys, "predict", str(trained[2]), "--input", str(lines))
    assert status == 2 and out == "" and "no valid sequence" in err


def test_predict_notes_lengths_the_model_never_trained_on(trained, capsys):
    status, out, err = run_cli(capsys, "predict", str(trained[2]), "1 2 3 4 5 6")  # trained on length 3 only
    assert status == 0 and len(out.splitlines()) == 1
    assert err.startswith("note: 1 of 1 inputs are outside the lengths 3-3")


def test_unknown_token_is_an_error_not_a_traceback(trained):
    done = cli("predict", str(trained[2]), "1 banana 2")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("error: ") and "banana" in done.stderr and "Traceback" not in done.stderr


def test_evaluate_prints_json_scores_on_held_out_and_fresh_data(trained, capsys):
    status, out, _ = run_cli(capsys, "evaluate", str(trained[2]), "--n", "200", "--seed", "5")
    scores = json.loads(out)
    assert status == 0 and scores["task"] == "copy"
    assert scores["fresh"]["n"] == 200 and scores["fresh"]["seed"] == 5
    assert scores["held_out"]["n"] == 100  # the run's --n-valid
    checkpoint = load_checkpoint(trained[2])
    vocab, data = checkpoint.vocab, TaskData(checkpoint.task, checkpoint.vocab)
    assert scores["held_out"] == {"n": 100, **evaluate(checkpoint.model, data.valid, vocab.bos_id, vocab.eos_id)}
    for part in scores["held_out"], scores["fresh"]:
        assert 0 <= part["exact_match"] <= 1 and 0 <= part["token_acc"] <= 1 and part["val_loss"] >= 0


@pytest.mark.parametrize("command", [["predict", "{}", "1 2"], ["evaluate", "{}"]])
@pytest.mark.parametrize("content", [b"not a checkpoint", None])
def test_bad_checkpoint_is_a_clear_error(command, content, tmp_path, capsys):
    path = tmp_path / "model.pt"
    if content is not None:
        path.write_bytes(content)
    status, out, err = run_cli(capsys, *(arg.format(path) for arg in command))
    assert status == 2 and out == ""
    assert err.startswith("error: ") and len(err.splitlines()) == 1
    assert ("checkpoint" if content else "No such file") in err


@pytest.mark.parametrize(
    "args, message",
    [
        (["--d-model", "30", "--heads", "4"], "divisible"),
        (["--min-len", "0"], "min_len"),
        (["--min-len", "5", "--max-len", "3"], "min_len"),
        (["--n-symbols", "1"], "n_symbols"),
        (["--lr", "0"], "lr"),
        (["--dropout", "1.5"], "dropout"),
        (["--heads", "0"], "n_heads"),
        (["--layers", "100000"], "n_layers"),
        (["--d-model", "4000000", "--heads", "1"], "weights"),
        (["--d-model", "512", "--d-ff", "2048", "--layers", "2", "--heads", "8"], "MB limit"),  # too big to save
        (["--n-valid", "1000000000"], "n_valid"),
        (["--batch-size", "1000000000"], "batch_size"),
        (["--seed", "99999999999999999999999"], "seed"),
    ],
)
def test_out_of_range_setting_is_a_clear_error(args, message, tmp_path, capsys):
    status, out, err = run_cli(capsys, "train", *args, "--out", str(tmp_path / "x.pt"))
    assert status == 2 and out == ""
    assert err.startswith("error: ") and message in err
    assert not (tmp_path / "x.pt").exists()


def test_out_that_is_a_folder_is_refused_before_training(tmp_path, capsys):
    status, out, err = run_cli(capsys, "train", "--out", str(tmp_path))
    assert status == 2 and out == "" and "is a folder" in err and "step" not in err


def test_out_is_checked_without_leaving_folders_behind(tmp_path, capsys):
    blocker = tmp_path / "a file"
    blocker.write_text("not a folder")
    status, _, err = run_cli(capsys, "train", "--out", str(blocker / "x.pt"))
    assert status == 2 and "cannot write to" in err
    too_big = ["--d-model", "512", "--d-ff", "2048", "--layers", "2", "--heads", "8"]
    status, _, err = run_cli(capsys, "train", *too_big, "--out", str(tmp_path / "new" / "sub" / "x.pt"))
    assert status == 2 and "MB limit" in err and not (tmp_path / "new").exists()


@pytest.mark.parametrize(
    "command",
    [
        ["evaluate"],
        ["evaluate", "--lengths", "2-3"],
        ["predict", "1 2 3"],
        ["patch", "--clean", "1 2 3", "--corrupt", "1 2 4"],
    ],
)
def test_a_model_whose_outputs_are_not_finite_is_one_clear_line_not_nan(trained, capsys, monkeypatch, command):
    checkpoint = load_checkpoint(trained[2])
    with torch.no_grad():
        checkpoint.model.embed.lut.weight.mul_(1e38)  # every weight finite, every output NaN
    monkeypatch.setattr(cli_model, "load_checkpoint", lambda path: checkpoint)  # whatever loading checks
    status, out, err = run_cli(capsys, command[0], str(trained[2]), *command[1:])
    assert status == 2 and out == "" and err.count("\n") == 1 and "outputs are not finite" in err


def test_patch_prints_no_nan_when_only_the_corrupted_run_overflows(trained, capsys, monkeypatch):
    checkpoint = load_checkpoint(trained[2])
    vocab, model = checkpoint.vocab, checkpoint.model
    clean = torch.tensor([[vocab.symbol_id(s) for s in (1, 2, 3)]])  # (1, 3), and its answer: the same
    with torch.no_grad():
        model.embed.lut.weight[vocab.symbol_id(4)].mul_(1e38)  # NaN wherever 4 is read
        assert torch.isfinite(model(clean, torch.cat([torch.tensor([[vocab.bos_id]]), clean], dim=1))).all()
    monkeypatch.setattr(cli_model, "load_checkpoint", lambda path: checkpoint)  # the loader's probe reads 4
    status, out, err = run_cli(capsys, "patch", str(trained[2]), "--clean", "1 2 3", "--corrupt", "1 2 4")
    assert status == 2 and out == "" and err.count("\n") == 1 and "outputs are not finite" in err


def test_evaluate_prints_no_nan_when_only_the_teacher_forced_scores_overflow(trained, capsys, monkeypatch):
    nan_loss = {"val_loss": float("nan"), "token_acc": 1.0, "exact_match": 1.0}  # decoding itself stayed finite
    monkeypatch.setattr(cli_model, "evaluate", lambda *args: nan_loss)
    status, out, err = run_cli(capsys, "evaluate", str(trained[2]))
    assert status == 2 and out == "" and err.count("\n") == 1 and "outputs are not finite" in err


def test_evaluate_needs_a_positive_n(trained, capsys):
    status, _, err = run_cli(capsys, "evaluate", str(trained[2]), "--n", "0")
    assert status == 2 and err.startswith("error: ") and "--n" in err


def test_bad_thread_count_is_a_clear_error(trained, monkeypatch, capsys):
    monkeypatch.setenv("TRANSFORMER_THREADS", "many")
    status, _, err = run_cli(capsys, "evaluate", str(trained[2]))
    assert status == 2 and "TRANSFORMER_THREADS" in err


@pytest.mark.parametrize("given", [[], ["1 2", "--input", "in.txt"]])
def test_predict_needs_a_sequence_or_an_input_file(trained, capsys, given):
    status, out, err = run_cli(capsys, "predict", str(trained[2]), *given)
    assert status == 2 and out == "" and err.startswith("error: ") and "sequence" in err


@pytest.mark.parametrize("args, unrecognized", [(["1 2", "3 4"], "3 4"), (["--bogus"], "--bogus")])
def test_predict_refuses_extra_arguments(trained, capsys, args, unrecognized):
    status, out, err = run_cli(capsys, "predict", str(trained[2]), *args)
    assert status == 2 and out == "" and err == f"error: unrecognized arguments: {unrecognized}\n"


BAD_ARGUMENTS = {
    "device": (["train", "--device", "tpu"], "unknown device 'tpu'"),
    "device torch knows, the lab does not": (["train", "--device", "xpu"], "unknown device 'xpu'"),
    "device torch knows, not built in": (["train", "--device", "hpu:0"], "unknown device 'hpu:0'"),
    "absent GPU": (["train", "--device", "cuda:7" if not torch.cuda.is_available() else "mps:9"], "available"),
    "infinite time budget": (["train", "--time-budget", "inf"], "--time-budget: must be from 0 to 86,400"),
    "NaN time budget": (["train", "--time-budget", "nan"], "--time-budget: must be from 0"),
    "steps past any bound": (["train", "--steps", "1" + "0" * 20], "--steps: must be from 1 to 1,000,000"),
    "steps not a number": (["train", "--steps", "1.5"], "'1.5' is not a whole number"),
    "activations too big": (
        ["train", "--layers", "4", "--d-model", "256", "--d-ff", "1024", "--batch-size", "8192"],
        "GB of activations",
    ),
    "negative seed": (["evaluate", "{ckpt}", "--seed", "-5"], "--seed: must be from 0"),
    "huge --n": (["evaluate", "{ckpt}", "--n", "100000000"], "--n: must be from 1 to 10,000"),
    "huge beam": (["predict", "{ckpt}", "1 2", "--beam", "100000"], "--beam: must be from 1 to 32"),
    "endless input": (["predict", "{ckpt}", "--input", "/dev/zero"], "not an ordinary file"),
    "folder as input": (["predict", "{ckpt}", "--input", "{tmp}"], "not an ordinary file"),
    "folder as checkpoint": (["predict", "{tmp}", "1 2"], "not an ordinary file"),
    "device as checkpoint": (["predict", "/dev/zero", "1 2"], "not an ordinary file"),
    "unwritable --out": (["train", "--out", "/proc/model.pt"], "--out: cannot write to /proc"),
}


@pytest.mark.parametrize("case", BAD_ARGUMENTS)
def test_bad_argument_or_file_is_one_line_and_status_2_before_any_work(case, trained, tmp_path, capsys):
    argv, message = BAD_ARGUMENTS[case]
    if not (os.path.exists("/dev/zero") and os.path.isdir("/proc")):
        pytest.skip("needs /dev/zero and an unwritable /proc")
    status, out, err = run_cli(
        capsys,
        *(a.format(ckpt=trained[2], tmp=tmp_path) for a in argv),
        *["--steps", "2"] * (argv[0] == "train" and "--steps" not in argv),
    )
    assert status == 2 and out == "" and "train loss" not in err
    assert err.startswith("error: ") and err.count("\n") == 1 and message in err


def test_too_many_threads_is_one_line(trained, capsys, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_THREADS", "9" * 20)
    status, out, err = run_cli(capsys, "predict", str(trained[2]), "1 2")
    assert status == 2 and err.count("\n") == 1 and "from 1 to 256" in err


def test_an_input_file_over_the_line_limit_is_refused(trained, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(cli_model, "MAX_INPUT_LINES", 3)
    (tmp_path / "in.txt").write_text("1 2\n" * 4)
    status, out, err = run_cli(capsys, "predict", str(trained[2]), "--input", str(tmp_path / "in.txt"))
    assert status == 2 and out == "" and "more than 3 lines" in err


@pytest.mark.parametrize("text", ["\x1b[2J\x1b[31mred", "a\rb\nc", "\u202eevil", "bell\x07"])
def test_printable_leaves_no_control_or_format_character(text):
    shown = printable(text)
    assert len(shown) == len(text) and all(c.isprintable() for c in shown)
    assert [c for c in shown if c != " "] == [c for c in text if c.isprintable()]


def test_errors_reach_the_terminal_without_control_characters(trained, capsys):
    status, out, err = run_cli(capsys, "train", "--steps", "2", "--out", "/proc/\x1b[2J\x1b]0;x\x07/m.pt")
    assert status == 2 and "\x1b" not in err and "\x07" not in err and err.count("\n") == 1


@pytest.mark.skipif(os.name != "posix", reason="sends SIGINT")
def test_ctrl_c_stops_training_cleanly_and_still_saves(tmp_path):
    path = tmp_path / "stopped.pt"
    args = [
        "train",
        "--task",
        "copy",
        "--max-len",
        "3",
        "--n-valid",
        "50",
        "--no-early-stop",
        "--steps",
        "100000",
        "--eval-every",
        "5",
        "--out",
        str(path),
    ]
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    with subprocess.Popen(command(*args), cwd=ROOT, env=ENV, **pipes) as process:
        try:
            next(line for line in process.stderr if line.startswith("step"))  # training is under way
            process.send_signal(signal.SIGINT)
            stdout, stderr = process.communicate(timeout=TIMEOUT_S)
        finally:
            process.kill()
    result = json.loads(stdout)
    assert process.returncode == 0 and "Traceback" not in stderr
    assert result["reason"] == "stopped" and result["steps"] >= 5
    assert load_checkpoint(path).history[-1]["step"] == result["steps"]


def test_evaluate_scores_each_length_on_request(trained, capsys):
    status, out, _ = run_cli(capsys, "evaluate", str(trained[2]), "--n", "20", "--lengths", "2-4")
    by_length = json.loads(out)["by_length"]
    assert status == 0 and [row["length"] for row in by_length] == [2, 3, 4]
    assert [row["trained"] for row in by_length] == [False, True, False]  # trained on length 3 only
    assert all(row["n"] <= 20 and 0 <= row["exact_match"] <= 1 for row in by_length)


@pytest.mark.parametrize("lengths", ["4-2", "x", "1-", "-3"])
def test_evaluate_refuses_a_malformed_length_range(trained, capsys, lengths):
    status, out, err = run_cli(capsys, "evaluate", str(trained[2]), f"--lengths={lengths}")
    assert status == 2 and out == "" and "--lengths must read LOW-HIGH" in err


# ---- tasks from a file, and the gallery's by name

SWAPS = "source,target\n" + "\n".join(f"{a} {b},{b} {a}" for a in "abcdef" for b in "abcdef" if a != b) + "\n"


@pytest.fixture(scope="module")
def trained_on_a_file(tmp_path_factory) -> tuple[dict, str, Path, Path]:
    """A short run on a task file of 30 swapped pairs: its JSON result, its stderr, its checkpoint and the file."""
    folder = tmp_path_factory.mktemp("task_file")
    task_file, path = folder / "swaps.csv", folder / "swaps.pt"
    task_file.write_text(SWAPS)
    args = ["train", "--task-file", str(task_file), "--steps", "60", "--eval-every", "30", "--out", str(path)]
    done = cli(*args)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return json.loads(done.stdout), done.stderr, path, task_file


def test_train_learns_the_task_of_a_file_and_the_checkpoint_keeps_its_pairs(trained_on_a_file):
    result, stderr, path, task_file = trained_on_a_file
    assert result["task"] == "pairs" and result["task_file"] == "swaps.csv" and result["out"] == str(path)
    assert "training swaps.csv, 24 pairs (6 more held out), lengths 2-2" in stderr
    task = load_checkpoint(path).task
    assert task.pairs == read_task_path(task_file) and task.n_valid == 6


def test_predict_and_evaluate_a_model_of_a_task_file(trained_on_a_file, capsys):
    result, _, path, _ = trained_on_a_file
    status, out, err = run_cli(capsys, "predict", str(path), "b a")
    assert status == 0 and len(out.split()) >= 1 and set(out.split()) <= set("abcdef")
    status, out, _ = run_cli(capsys, "evaluate", str(path), "--lengths", "1-3")
    scores = json.loads(out)
    assert status == 0 and scores["task"] == "pairs" and "fresh" not in scores
    assert scores["held_out"]["n"] == 6 and scores["training"]["n"] == 24
    assert scores["held_out"]["exact_match"] == result["exact_match"]
    assert [row["length"] for row in scores["by_length"]] == [2]  # a task from examples has only its pairs' lengths


@pytest.mark.parametrize(
    "content, message",
    [
        ("a,b\n" * 3, "at least 5 different pairs"),
        (SWAPS + "a b,c\n", "line 32: the source a b has the target c here but b a at line 2"),
        ("a\tb\n" + SWAPS, "line 2 is not two cells: write the source and the target separated by a tab"),
    ],
)
def test_a_bad_task_file_is_one_error_line_before_training(tmp_path, capsys, content, message):
    (tmp_path / "bad.csv").write_text(content)
    status, out, err = run_cli(capsys, "train", "--task-file", str(tmp_path / "bad.csv"), "--steps", "1")
    assert status == 2 and out == "" and err.count("\n") == 1 and message in err, err


def test_a_gallery_task_trains_by_name_and_says_which_lengths_it_takes(tmp_path, capsys):
    status, _, err = run_cli(capsys, "train", "--task", "add", "--steps", "1")
    assert status == 2 and "add takes inputs of 3 to 64 symbols" in err
    args = ["train", "--task", "add", "--min-len", "3", "--max-len", "5", "--steps", "2", "--eval-every", "1"]
    status, out, _ = run_cli(capsys, *args, "--out", str(tmp_path / "add.pt"))
    assert status == 0 and json.loads(out)["task"] == "add"
    status, out, _ = run_cli(capsys, "predict", str(tmp_path / "add.pt"), "12+34")
    assert status == 0 and set(out.split()) <= set("0123456789+")
