"""Random and hostile text thrown at every parser the pages use: each either parses or raises ValueError with a
short message, never anything else, and never hangs."""

import io
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from transformer.checkpoint import CheckpointError, load_checkpoint
from transformer.compare_state import CompareState, read_compare, write_compare
from transformer.experiments import experiment_from_json
from transformer.run_configs import run_configs
from transformer.vocab import Vocab

FAST = settings(suppress_health_check=[HealthCheck.too_slow])  # examples and deadline: the profile (conftest.py)
VOCAB = Vocab.digits(10)
hostile_text = st.one_of(
    st.text(max_size=200),
    st.text(alphabet="0123456789 \t\n", max_size=300),
    st.sampled_from(["", " ", "<s>", "</s> 1", "<pad>", "1\x002", "١٢٣", "3 1 4" * 2000, "💥", "1,2,3", "-1", "10"]),
)


@FAST
@given(hostile_text)
def test_typed_sequences_parse_or_give_a_short_clear_error(text):
    try:
        ids = VOCAB.encode(text, max_len=16)
    except ValueError as err:
        assert 0 < len(str(err)) < 200
    else:
        assert 1 <= len(ids) <= 16 and all(3 <= i < len(VOCAB) for i in ids)
        assert VOCAB.encode(VOCAB.decode(ids)) == ids


@FAST
@given(
    st.dictionaries(
        st.sampled_from(["exp", "task", "len", "d_model", "heads", "layers", "seed", "steps", "switch", "values", "x"])
        | st.text(max_size=20),
        st.text(max_size=60) | st.lists(st.text(max_size=10), max_size=3),
        max_size=8,
    )
)
def test_url_parameters_fall_back_to_defaults_with_a_notice(params):
    state, notices = read_compare(params)
    assert isinstance(state, CompareState) and all(isinstance(n, str) and len(n) < 300 for n in notices)
    assert read_compare(write_compare(state)) == (state, [])  # whatever came in, what goes out round-trips


@FAST
@given(
    st.one_of(
        st.text(max_size=300),
        st.binary(max_size=300),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
            lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
            max_leaves=20,
        ).map(json.dumps),
    )
)
def test_experiment_files_load_or_are_refused(text):
    with pytest.raises(ValueError):
        experiment_from_json(text)


@FAST
@given(st.binary(max_size=2000))
def test_uploaded_bytes_are_refused_as_checkpoints(data):
    with pytest.raises(CheckpointError):
        load_checkpoint(io.BytesIO(data))


@FAST
@given(
    st.fixed_dictionaries(
        {
            "d_model": st.integers(-(10**6), 10**6),
            "n_heads": st.integers(-5, 100),
            "n_layers": st.integers(-5, 100),
            "d_ff": st.integers(-5, 10**7),
            "dropout": st.floats(allow_nan=True, allow_infinity=True),
        }
    ),
    st.integers(-5, 10**4),
    st.floats(allow_nan=True, allow_infinity=True),
)
def test_settings_past_their_bounds_are_refused_not_run(model, steps, lr):
    """What a student could push through session state or a crafted request: refused with ValueError."""
    data = {"task": "reverse", "min_len": 4, "max_len": 4, "n_symbols": 10, "seed": 0}
    train = {"steps": steps, "lr": lr, "batch_size": 64}
    try:
        model_config, _, train_config = run_configs({**data, **model, **train})
    except ValueError:
        return
    assert 8 <= model_config.d_model <= 256 and model_config.d_model % model_config.n_heads == 0
    assert model_config.n_layers <= 4 and model_config.d_ff <= 1024 and 0 <= model_config.dropout < 1
    assert train_config.steps >= 1 and 0 < train_config.lr <= 1


@pytest.mark.parametrize(
    "data, said",
    [
        (b"", "not a JSON file: it is empty"),
        (b'{"a": "\xb6"}', "not a JSON file: it is not UTF-8 text (byte 8)"),
        (b'{"format":\n  oops}', "not a JSON file: it cannot be read from line 2"),
        (b"[" * 100_000, "not a JSON file: its lists or objects are nested too deep"),
        (b'{"steps": 1' + b"0" * 5000 + b"}", "not a JSON file: it holds a number of more than 4300 digits"),
    ],
)
def test_a_file_that_is_no_json_is_said_so_in_the_lab_s_words(data, said):
    with pytest.raises(ValueError) as err:
        experiment_from_json(data)
    assert str(err.value) == said  # never the json module's English, such as "Expecting value: line 1 column 1"
