"""URL state: each page's settings survive the round trip through a link, and bad links fall back."""

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transformer.experiments import CUSTOM, READY
from transformer.url_state import CompareState, custom_experiment, from_query_params, state_for, to_query_params

STATES = [
    CompareState(),
    CompareState(experiment="no-causal-mask"),
    CompareState(
        experiment=CUSTOM,
        task="copy",
        length=7,
        d_model=64,
        n_heads=8,
        n_layers=3,
        steps=250,
        seed=42,
        switch="norm_first",
        values=(True, False),
    ),
    CompareState(experiment=CUSTOM, switch="label_smoothing", values=(0.0, 0.1, 0.2)),
    CompareState(experiment=CUSTOM, switch="n_heads", values=(8, 1, 2, 4)),
]


@pytest.mark.parametrize("state", STATES)
def test_settings_survive_the_round_trip_through_the_url(state):
    params = to_query_params(state)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in params.items())
    assert from_query_params(params) == (state, [])


def test_links_hold_only_what_differs_from_the_defaults():
    assert to_query_params(CompareState()) == {"experiment": CompareState().experiment}
    assert to_query_params(CompareState(experiment=CUSTOM, seed=3)) == {"experiment": CUSTOM, "seed": "3"}


@pytest.mark.parametrize(
    "params, field, notice",
    [
        ({"d_model": "abc"}, "d_model", "d_model"),
        ({"d_model": "33"}, "d_model", "d_model"),
        ({"steps": "1e9"}, "steps", "steps"),
        ({"seed": "-0x10"}, "seed", "seed"),
        ({"experiment": "../../etc/passwd"}, "experiment", "experiment"),
        ({"task": "<script>alert(1)</script>"}, "task", "task"),
        ({"switch": "dropout"}, "switch", "switch"),
        ({"values": "sinusoidal"}, "values", "values"),  # one value is no comparison
        ({"values": "sinusoidal,sinusoidal"}, "values", "values"),
        ({"values": "🙂,ünïcødé"}, "values", "values"),
        ({"length": "9" * 10_000}, "length", "length"),
        ({"n_layers": "[1](http://evil.example)"}, "n_layers", "n_layers"),
    ],
)
def test_bad_values_fall_back_to_defaults_with_a_notice(params, field, notice):
    state, notices = from_query_params(params)
    assert getattr(state, field) == getattr(CompareState(), field)
    assert len(notices) == 1 and f"`{notice}`" in notices[0]
    assert not any(text in notices[0] for text in ("passwd", "<script", "🙂", "9999999", "http"))  # never echoed


def test_numbers_out_of_range_are_clamped_with_a_notice():
    state, notices = from_query_params({"steps": "5", "seed": "123456", "length": " 3 "})
    assert (state.steps, state.seed, state.length) == (50, 9999, 3)
    assert len(notices) == 2


def test_a_new_switch_without_values_compares_its_first_two_and_unknown_keys_are_ignored():
    state, notices = from_query_params({"switch": "causal_mask", "utm_source": "mail", "experiment": ["x", CUSTOM]})
    assert (state.experiment, state.values, notices) == (CUSTOM, (True, False), [])


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from([*CompareState.__dataclass_fields__, "junk"]), st.text(max_size=300)))
def test_any_query_gives_a_state_the_page_can_build(params):
    state, notices = from_query_params(params)
    experiment = custom_experiment(replace(state, experiment=CUSTOM))  # raises if any field were invalid
    assert 2 <= len(experiment.values) and all(isinstance(n, str) for n in notices)


def test_a_loaded_custom_experiment_selects_matching_page_settings():
    experiment = custom_experiment(STATES[2])
    assert state_for(experiment) == STATES[2]
    assert state_for(READY["heads"]) == CompareState(experiment="heads")
