"""Property-based tests of every parser of untrusted input, starting from valid files and mutating them: each
example gets a valid result or a clear error (ValueError, or one `error:` line and status 2 from the command line),
never another exception, and within the profile's deadline (see `tests/conftest.py` for the profiles)."""

import copy
import io
import json
import time
from dataclasses import replace
from functools import cache
from unittest import mock

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import transformer.cli as cli
import transformer.cli_model as cli_model
import transformer.compare_state as compare_state
import transformer.link_params as link_params
from transformer.checkpoint import Checkpoint, CheckpointError, checkpoint_bytes, load_checkpoint
from transformer.experiments import CUSTOM, SWITCHES, ExperimentRun, experiment_from_json, result_path
from transformer.model import ModelConfig, Transformer
from transformer.tasks import DataConfig
from transformer.training import Trainer
from transformer.vocab import Vocab

FIXTURES = settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
HOSTILE_VALUES = st.one_of(
    st.integers(-(2**70), 2**70),
    st.sampled_from([0, -1, 10**9, 2**63, 1e308, -1e308, 0.5, True, None, "", "x" * 200, "<img src=x>", [], {}]),
    st.floats(allow_nan=False),
    st.text(max_size=20),
    st.lists(st.integers(-5, 5), max_size=5),
)


# ---- experiment files (Compare page's upload)


@cache
def experiment_document() -> dict:
    return json.loads(result_path("heads").read_text())


def paths(value, prefix=()):
    """Every path to a value inside a JSON document, lists sampled at their first and last item."""
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from paths(v, (*prefix, k))
    elif isinstance(value, list) and value:
        for i in sorted({0, len(value) - 1}):
            yield from paths(value[i], (*prefix, i))


@cache
def experiment_paths() -> list[tuple]:
    return [p for p in paths(experiment_document()) if p]


def set_at(document, path: tuple, value):
    for key in path[:-1]:
        document = document[key]
    document[path[-1]] = value


@given(st.data(), HOSTILE_VALUES)
def test_a_mutated_field_of_a_valid_experiment_file_loads_or_is_refused(data, value):
    document = copy.deepcopy(experiment_document())
    set_at(document, data.draw(st.sampled_from(experiment_paths())), value)
    try:
        run = experiment_from_json(json.dumps(document))
    except ValueError as err:
        assert str(err).startswith("not an experiment file of this lab") and len(str(err)) < 600
    else:
        assert isinstance(run, ExperimentRun)


@given(st.lists(st.tuples(st.integers(0, 10**6), st.binary(min_size=0, max_size=3)), min_size=1, max_size=5))
def test_mutated_bytes_of_a_valid_experiment_file_load_or_are_refused(edits):
    original = result_path("heads").read_bytes()
    text = bytearray(original)
    for at, replacement in edits:
        at %= len(text)
        text[at : at + len(replacement)] = replacement
    try:
        run = experiment_from_json(bytes(text))
    except ValueError as err:
        assert bytes(text) != original, "the unchanged file was refused"
        assert str(err).startswith(("not a JSON file: ", "not an experiment file of this lab: ")), str(err)
        assert len(str(err)) < 600
    else:
        assert isinstance(run, ExperimentRun) and isinstance(json.loads(bytes(text)), dict)  # only a document loads


@pytest.mark.parametrize("field, value", [("n_layers", 10**8), ("d_model", 2**40), ("d_ff", 10**9), ("max_len", 10**7)])
def test_an_experiment_file_asking_for_absurd_sizes_is_refused_at_once(field, value):
    document = copy.deepcopy(experiment_document())
    document["experiment"]["model"][field] = value
    text = json.dumps(document)
    start = time.process_time()
    with pytest.raises(ValueError, match="asks for more than a run on this server may|has a setting that cannot be"):
        experiment_from_json(text)
    assert time.process_time() - start < 0.5


# ---- checkpoints (Checkpoints page's upload, the command line)


@cache
def valid_checkpoint() -> bytes:
    torch.manual_seed(0)
    model = Transformer(ModelConfig(d_model=16, n_heads=2, d_ff=32, vocab_size=13))
    task = DataConfig(task="reverse", min_len=2, max_len=6)
    history = [{"step": 0, "exact_match": 0.0}, {"step": 10, "exact_match": 0.5}]
    return checkpoint_bytes(model, Vocab.digits(10), task, history, {"lr": 0.001}, {"name": "x"})


@cache
def checkpoint_payload() -> dict:
    return torch.load(io.BytesIO(valid_checkpoint()), weights_only=True)


@cache
def checkpoint_paths() -> list[tuple]:
    plain = {k: v for k, v in checkpoint_payload().items() if k != "state_dict"}
    return [p for p in paths(plain) if p]


@given(st.lists(st.tuples(st.integers(0, 10**7), st.binary(min_size=1, max_size=4)), min_size=1, max_size=4))
def test_mutated_bytes_of_a_valid_checkpoint_load_or_are_refused(edits):
    data = bytearray(valid_checkpoint())
    for at, replacement in edits:
        at %= len(data)
        data[at : at + len(replacement)] = replacement
    try:
        assert isinstance(load_checkpoint(bytes(data)), Checkpoint)
    except CheckpointError as err:
        assert len(str(err)) < 600


@given(st.data(), HOSTILE_VALUES)
def test_a_mutated_field_of_a_valid_checkpoint_loads_or_is_refused(data, value):
    payload = copy.deepcopy(checkpoint_payload())
    set_at(payload, data.draw(st.sampled_from(checkpoint_paths())), value)
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    try:
        checkpoint = load_checkpoint(buffer.getvalue())
    except CheckpointError as err:
        assert len(str(err)) < 600
    else:  # what the pages read from a loaded checkpoint is there
        assert all(type(row["step"]) is int for row in checkpoint.history)
        assert all(s.isprintable() and len(s) <= 16 for s in checkpoint.vocab.symbols)


# ---- command-line arguments

OPTIONS = {
    "train": [
        "--task",
        "--task-file",
        "--min-len",
        "--max-len",
        "--n-symbols",
        "--n-valid",
        "--seed",
        "--d-model",
        "--heads",
        "--layers",
        "--d-ff",
        "--dropout",
        "--positional",
        "--steps",
        "--time-budget",
        "--batch-size",
        "--lr",
        "--warmup",
        "--label-smoothing",
        "--clip-grad",
        "--ema-decay",
        "--eval-every",
        "--device",
        "--out",
    ],
    "predict": ["--input", "--beam"],
    "evaluate": ["--n", "--seed", "--lengths"],
}
ARGUMENT_VALUES = st.one_of(
    st.integers(-(10**25), 10**25).map(str),
    st.sampled_from(["nan", "inf", "-inf", "1e999", "0", "1", "2", "cpu", "tpu", "cuda:9", "/dev/zero", "/proc/x.pt"]),
    st.sampled_from(["reverse", "sort", "learned", "1-999", "3-1", "\x1b[2J", "", "--", "-1"]),
    st.text(max_size=12),
)


class WouldRun(Exception):
    """Raised instead of training or decoding: the arguments passed every check."""


@FIXTURES
@given(st.sampled_from(sorted(OPTIONS)), st.data())
def test_command_line_arguments_run_or_give_one_error_line_and_status_2(command, data):
    pairs = data.draw(st.lists(st.tuples(st.sampled_from(OPTIONS[command]), ARGUMENT_VALUES), max_size=4))
    argv = [command, *(["checkpoints/sort.pt"] if command != "train" else [])]
    argv += data.draw(st.sampled_from([[], ["1 2"]])) if command == "predict" else []
    for option, value in pairs:
        argv += [option, value]
    stderr = io.StringIO()
    with (
        mock.patch.object(Trainer, "run", side_effect=WouldRun),
        mock.patch.object(cli_model, "_decode", side_effect=WouldRun),
        mock.patch.object(cli_model, "evaluate", side_effect=WouldRun),
        mock.patch("sys.stderr", stderr),
        mock.patch("sys.stdout", io.StringIO()),
    ):
        try:
            status = cli.main(argv)
        except WouldRun:
            return
    err = stderr.getvalue()
    assert status in (1, 2) and err.startswith("error: ") or status == 1, (argv, err)
    assert err.count("\n") == 1 and all(c.isprintable() for c in err.rstrip("\n")), (argv, err)


# ---- link values (every page's address bar)

LINK_PARSERS = {
    "model": link_params.model_parsers(["copy", "reverse", "sort"]),
    "decoding": link_params.decoding_parsers(Vocab.digits(10), 20),
    "masking": link_params.masking_parsers(Vocab.digits(10), 20),
    "lengths": link_params.lengths_parsers(range(1, 64)),
}
LINK_TEXT = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["1-999", "63-1", "nan", "inf", "-1", "1e309", "3 1 4", "<s>", "![x](http://e.invalid/a.png)"]),
    st.text(alphabet="0123456789 -.", max_size=300),
)


@given(st.sampled_from(sorted(LINK_PARSERS)), st.data())
def test_link_values_of_every_page_are_read_within_bounds_or_noticed(page, data):
    parsers = LINK_PARSERS[page]
    params = data.draw(st.dictionaries(st.sampled_from(sorted(parsers)) | st.text(max_size=8), LINK_TEXT, max_size=6))
    values, notices = link_params.read_params(params, parsers)
    assert all(isinstance(n, str) and len(n) < 300 for n in notices)
    assert link_params.read_params(link_params.write_params(values), parsers) == (values, [])  # what was kept is valid


TOO_BIG_OR_UNFIT = ("a run may use on this shared server: lower ", "divisible by the number of heads", "is longer than")


@given(st.sampled_from([*SWITCHES, "dropout"]), st.data())
def test_compare_link_values_are_read_within_bounds_or_noticed(switch, data):
    names = sorted(compare_state.compare_parsers(compare_state.CompareState.switch))
    params = data.draw(st.dictionaries(st.sampled_from(names) | st.text(max_size=8), LINK_TEXT, max_size=6))
    state, notices = compare_state.read_compare({**params, "switch": switch})
    assert all(n.startswith("The link's ") and len(n) < 300 for n in notices)
    try:
        compare_state.experiment_for(replace(state, experiment=CUSTOM))  # the page can build what was kept
    except ValueError as err:  # or says what to change, as the Train form does
        assert any(why in str(err) for why in TOO_BIG_OR_UNFIT), err
    assert compare_state.read_compare(compare_state.write_compare(state)) == (state, [])  # what was kept is valid
