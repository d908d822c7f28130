"""Links (`link_params`, and Compare's `compare_state`): each page's settings survive the round trip through a
link, and bad links fall back."""

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from transformer.compare_state import (
    CompareState,
    compare_parsers,
    custom_experiment,
    read_compare,
    state_for,
    write_compare,
)
from transformer.experiments import CUSTOM, READY
from transformer.i18n import N_, translator
from transformer.link_params import (
    decoding_parsers,
    lengths_parsers,
    masking_parsers,
    model_parsers,
    read_params,
    write_params,
)
from transformer.vocab import Vocab

STATES = [
    CompareState(),
    CompareState(experiment="no-causal-mask"),
    CompareState(
        experiment=CUSTOM,
        settings={"task": "copy", "min_len": 3, "max_len": 7, "d_model": 64, "n_heads": 8, "n_layers": 3, "seed": 42},
        switch="norm_first",
        values=(True, False),
    ),
    CompareState(CUSTOM, {"steps": 250, "positional": "learned", "time_budget_s": 30.0}, "causal_mask", (True, False)),
    CompareState(experiment=CUSTOM, switch="label_smoothing", values=(0.0, 0.1, 0.2)),
    CompareState(experiment=CUSTOM, switch="n_heads", values=(8, 1, 2, 4)),
]


@pytest.mark.parametrize("state", STATES)
def test_settings_survive_the_round_trip_through_the_url(state):
    params = write_compare(state)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in params.items())
    assert read_compare(params) == (state, [])


def test_links_hold_only_what_differs_from_the_defaults():
    assert write_compare(CompareState()) == {"experiment": CompareState().experiment}
    assert write_compare(CompareState(CUSTOM, {"seed": 3})) == {"experiment": CUSTOM, "seed": "3"}


@pytest.mark.parametrize(
    "params, field, notice",
    [
        ({"d_model": "abc"}, "d_model", "d_model"),
        ({"d_model": "129"}, "d_model", "d_model"),
        ({"steps": "1e9"}, "steps", "steps"),
        ({"seed": "-0x10"}, "seed", "seed"),
        ({"experiment": "../../etc/passwd"}, "experiment", "experiment"),
        ({"task": "<script>alert(1)</script>"}, "task", "task"),
        ({"switch": "dropout"}, "switch", "switch"),
        ({"values": "sinusoidal"}, "values", "values"),  # one value is no comparison
        ({"values": "sinusoidal,sinusoidal"}, "values", "values"),
        ({"values": "🙂,ünïcødé"}, "values", "values"),
        ({"max_len": "9" * 10_000}, "max_len", "max_len"),
        ({"causal_mask": "maybe"}, "causal_mask", "causal_mask"),
        ({"n_layers": "[1](http://evil.example)"}, "n_layers", "n_layers"),
        ({"device": "mps"}, "device", "device"),  # a device this server lacks (no Linux machine has MPS)
    ],
)
def test_bad_values_fall_back_to_defaults_with_a_notice(params, field, notice):
    state, notices = read_compare(params)
    default = CompareState()
    assert field not in state.settings and getattr(state, field, None) == getattr(default, field, None)
    assert len(notices) == 1 and notices[0].startswith(f"The link's {notice} ")
    assert notices[0].endswith(", so the page's default is used.")
    assert not any(text in notices[0] for text in ("passwd", "<script", "🙂", "9999999", "http"))  # never echoed
    assert not any(c in notices[0] for c in "<>*[]()`")  # shown as is: nothing Markdown or HTML would read


def test_a_device_this_server_lacks_is_said_in_the_page_s_language():
    (notice,) = read_compare({"device": "mps"})[1]  # no Linux machine has MPS
    assert notice == "The link's device asks for mps, which this server does not have, so the page's default is used."
    assert translator("zh-CN").gettext(notice) == "链接中的 device 要求使用 mps，但这台服务器没有，因此页面使用默认值。"


def test_numbers_out_of_range_are_refused_not_clamped_within_the_settings_bounds():
    params = {"experiment": CUSTOM, "steps": "5", "seed": "123456", "min_len": " 3 ", "dropout": "0.9"}
    state, notices = read_compare(params)
    assert state.settings == {"min_len": 3}
    assert notices == [
        "The link's seed is not a whole number in 0..10000, so the page's default is used.",
        "The link's dropout is not a number in 0..0.5, so the page's default is used.",
        "The link's steps is not a whole number in 10..5000, so the page's default is used.",
    ]


def test_over_long_compare_values_are_refused_not_cut():
    state, notices = read_compare({"experiment": "heads" + " " * 300, "values": "on,off"})
    assert state == CompareState() and notices == [
        "The link's experiment is longer than 200 characters, so the page's default is used.",
        "The link's values is not 2-4 different settings of Positional encoding among sinusoidal, learned, none, so "
        "the page's default is used.",
    ]


@pytest.mark.parametrize("experiment", [None, "heads"])
def test_a_ready_made_experiment_says_the_link_s_custom_settings_are_not_its_own_and_drops_them(experiment):
    params = {"d_model": "64", "switch": "norm_first", **({"experiment": experiment} if experiment else {})}
    state, notices = read_compare(params)
    assert state == CompareState(experiment=experiment or CompareState.experiment)
    (notice,) = notices
    assert notice.startswith("The link's d_model, switch only set a custom experiment, so the ready-made experiment")
    assert write_compare(replace(state, settings={"d_model": 64})) == {"experiment": state.experiment}  # the address
    chinese = translator("zh-CN")(notice)
    assert "d_model、switch" in chinese and READY[state.experiment].title not in chinese


def test_a_new_switch_without_values_compares_its_first_two_and_unknown_keys_are_ignored():
    state, notices = read_compare({"switch": "causal_mask", "utm_source": "mail", "experiment": ["x", CUSTOM]})
    assert (state.experiment, state.values, notices) == (CUSTOM, (True, False), [])


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(compare_parsers(CompareState.switch))), st.text(max_size=300)))
def test_any_query_gives_a_state_the_page_builds_or_says_what_to_change(params):
    state, notices = read_compare(params)
    assert all(isinstance(n, str) for n in notices)
    try:
        experiment = custom_experiment(replace(state, experiment=CUSTOM))
    except ValueError as err:  # settings that do not fit together, as on the Train form: the page says which
        assert str(err)
    else:
        assert 2 <= len(experiment.values)


def test_a_loaded_custom_experiment_selects_matching_page_settings():
    experiment = custom_experiment(STATES[2])
    assert state_for(experiment) == STATES[2]
    assert state_for(READY["heads"]) == CompareState(experiment="heads")


# --------------------------------------------------------------------------------------- the other pages' links

DIGITS = Vocab.digits(10)
WORDS = Vocab(["cat", "dog", "emu"])  # symbols of more than one character: spaces are required
LINK_PARSERS = {
    "model": model_parsers(["copy", "reverse", "sort"])["model"],
    **decoding_parsers(DIGITS, 12),
    **masking_parsers(DIGITS, 12),
    **lengths_parsers(range(1, 21)),
}
HOSTILE = {
    "model": "../../etc",
    "input": "<img src=x>",
    "strategy": "**bold**",
    "step": "0",
    "temperature": "nan",
    "top_k": "-1",
    "seed": "1e3",
    "beam": "9",
    "source": "1 2 3 4 5 6 7 8 9 0 1 2 3",  # one symbol too many
    "target": "[x](javascript:alert(1))",
    "pad": "13",
    "lengths": "12-3",
}


def test_a_pages_settings_survive_the_round_trip_through_the_url():
    values = {
        "model": "reverse",
        "input": "3 1 4",
        "strategy": "sample",
        "step": 2,
        "temperature": 0.30000000000000004,
        "top_k": 5,
        "seed": 2**31 - 1,
        "source": "1 2",
        "pad": 12,
        "lengths": (3, 12),
    }
    params = write_params(values)
    assert params["input"] == "3 1 4" and params["lengths"] == "3-12"
    assert read_params(params, LINK_PARSERS) == (values, [])


def test_sequences_are_read_through_the_models_vocabulary():
    assert read_params({"input": " 314 "}, decoding_parsers(DIGITS, 12)) == ({"input": "3 1 4"}, [])
    assert read_params({"source": "cat  emu"}, masking_parsers(WORDS, 4)) == ({"source": "cat emu"}, [])
    values, notices = read_params({"source": "catemu"}, masking_parsers(WORDS, 4))
    assert values == {} and notices == [
        "The link's source is not a sequence of at most 4 of this model's symbols, so the page's default is used."
    ]


def test_every_hostile_value_falls_back_with_a_notice_that_does_not_repeat_it():
    values, notices = read_params(HOSTILE, LINK_PARSERS)
    assert values == {} and len(notices) == len(HOSTILE)
    for name, notice in zip(LINK_PARSERS, notices):
        assert notice.startswith(f"The link's {name} ")
        assert len(HOSTILE[name]) <= 2 or HOSTILE[name] not in notice  # a short number may be part of the bounds
    assert not any(c in "".join(notices) for c in "<>*[]()`")  # shown as is: nothing Markdown or HTML would read


def test_over_long_values_are_refused_not_cut_and_unknown_or_repeated_ones_handled():
    long_input = "1 " * 101  # 202 characters, though its first 200 would be a valid sequence
    values, notices = read_params({"input": long_input, "utm_source": "mail", "step": ["9", "3"]}, LINK_PARSERS)
    assert values == {"step": 3} and notices == [
        "The link's input is longer than 200 characters, so the page's default is used."
    ]


@pytest.mark.parametrize("text", ["3-12", " 3 - 12 ", "1-20", "7-7"])
def test_a_range_reads_as_two_ordered_lengths_in_bounds(text):
    low, high = (int(n) for n in text.split("-"))
    assert read_params({"lengths": text}, lengths_parsers(range(1, 21))) == ({"lengths": (low, high)}, [])


@pytest.mark.parametrize("text", ["12-3", "0-5", "3-21", "a-b", "3", "-3", "3--5", "٣-٥x"])
def test_a_range_out_of_order_or_bounds_falls_back(text):
    values, notices = read_params({"lengths": text}, lengths_parsers(range(1, 21)))
    assert values == {} and notices == [
        "The link's lengths is not a range a-b within 1..20, a at most b, so the page's default is used."
    ]


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from([*LINK_PARSERS, "junk"]), st.text(max_size=250)))
def test_any_link_reads_without_raising_and_what_it_gives_round_trips(params):
    values, notices = read_params(params, LINK_PARSERS)
    assert set(values) | {n.split()[2] for n in notices} == set(params) - {"junk"}
    assert read_params(write_params(values), LINK_PARSERS) == (values, [])


def test_a_link_notice_names_the_setting_in_the_reader_s_language():
    notices = read_compare({"values": "1,2,3"})[1]
    english, chinese = translator("en")(notices[0]), translator("zh-CN")(notices[0])
    assert "Positional encoding" in english
    assert translator("zh-CN")(N_("Positional encoding")) in chinese and "Positional encoding" not in chinese
