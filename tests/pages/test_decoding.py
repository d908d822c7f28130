"""The Decoding page, driven through AppTest with a small model that has solved reverse on length-4 inputs."""

import copy
import dataclasses
import json
import time
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest
import torch
from streamlit.testing.v1 import AppTest

from tests.helpers import array
from tests.helpers.apptest import LAPTOP, PHONE, browse_as, charts, flash_waiting, kept
from tests.helpers.figures import title_overflow
from transformer import Checkpoint, DataConfig, ModelConfig, TrainConfig, Trainer, Transformer, Vocab
from transformer.figures import PAGE_PX, PHONE_CHART_PX, drawn_px
from transformer.figures.decoding import ATTENTION_COLUMN_PX
from transformer.figures.heatmaps import NUMBER_GAP_PX
from transformer.tasks import TaskData
from ui.alignment_view import CROSS_ALIGNED, CROSS_MIRRORED, CROSS_SPREAD
from ui.charts import EXPANDER_INSET_PX

APP = Path(__file__).resolve().parents[2] / "streamlit_app.py"
PAGE = "pages/decoding.py"


@pytest.fixture(scope="module")
def solved_reverse() -> Checkpoint:
    """A model trained on reverse until it gets the whole held-out set right (early stop), in seconds."""
    trainer = Trainer(ModelConfig(), DataConfig(task="reverse", min_len=4, max_len=4), TrainConfig(steps=800))
    result = trainer.run()
    assert result.exact_match == 1.0, result
    model = trainer.model.eval()
    return Checkpoint(model, trainer.vocab, model.config, trainer.data.config, trainer.history, train_config={})


def open_page(checkpoint: Checkpoint | None) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=60)
    if checkpoint is not None:
        at.session_state["in_hand"] = checkpoint
        at.session_state["in_hand_name"] = "test reverse"
    at.run()
    at.switch_page(PAGE)
    at.run()
    assert not at.exception
    return at


def click(at: AppTest, key: str) -> AppTest:
    at.button(key=key).click().run()
    assert not at.exception
    return at


def n_steps(at: AppTest) -> int:
    return len(kept(at, "decoding").value["steps"])


def step_line(at: AppTest) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("**Step "))


def reversed_input(at: AppTest) -> str:
    return " ".join(reversed(at.text_input(key="decode_input").value.split()))


def test_no_model_in_hand_shows_the_hint_and_a_shipped_model_loads_in_place():
    at = open_page(None)
    assert "No model in hand" in at.info[0].value
    assert not at.get("plotly_chart")
    click(at, "require_load_reverse")
    assert at.session_state["in_hand_name"] == "shipped: reverse"
    assert not at.info and at.get("plotly_chart")  # the page itself now shows the model
    assert not flash_waiting(at, "load")  # no stale "Loaded" message waits for the Home page


def test_greedy_step_by_step_to_the_right_answer(solved_reverse):
    at = open_page(solved_reverse)
    source = at.text_input(key="decode_input").value.split()
    assert len(source) == 4  # a held-out example of the task by default
    n = n_steps(at)
    assert n == 5  # four symbols, then EOS
    assert step_line(at).startswith("**Step 1 of 5**")
    assert not at.success  # no output before the end
    figures = charts(at)
    bar = figures["Next-token<br>probabilities"]["data"][0]  # in lines that fit its narrow column
    assert bar["y"][0] == source[-1]  # reverse starts with the last symbol, and the model is sure of it
    heat = array(figures["Cross-attention of step 1, layer 0"]["data"][0]["z"])
    assert heat.shape == (4, 4)  # heads x source tokens
    assert heat.mean(axis=0).argmax() == 3  # to write the first token of the reverse, it looks at the last source token
    for k in range(2, n + 1):
        click(at, "decode_next")
        assert step_line(at).startswith(f"**Step {k} of {n}**")
    assert at.button(key="decode_next").disabled
    assert at.success[0].value == f"Output: `{reversed_input(at)}`"
    assert "right]" in next(m.value for m in at.markdown if m.value.startswith("Expected (reverse)"))
    table = at.dataframe[0].value
    assert list(table["true target"]) == [*reversed(source), "EOS"]
    assert list(table["free-running prediction"]) == list(table["true target"])


def test_self_attention_covers_exactly_the_decoder_input_so_far(solved_reverse):
    at = open_page(solved_reverse)
    click(at, "decode_next")
    click(at, "decode_next")  # step 3: BOS and two tokens written
    at.radio(key="decode_attention").set_value("self").run()
    assert not at.exception
    figure = charts(at)["Self-attention of step 3, layer 0"]
    heat = array(figure["data"][0]["z"])
    assert heat.shape == (4, 3)  # heads x (BOS + 2 tokens): no later position exists to look at
    np.testing.assert_allclose(heat.sum(axis=1), 1, atol=1e-5)
    assert figure["layout"]["xaxis"]["ticktext"] == ["BOS", *reversed_input(at).split()[:2]]


def test_back_run_to_end_and_reset_move_without_recomputing(solved_reverse):
    at = open_page(solved_reverse)
    trace = kept(at, "decoding")
    click(at, "decode_run_to_end")
    assert at.session_state["decode_step"] == n_steps(at) - 1 and at.success
    click(at, "decode_back")
    assert at.session_state["decode_step"] == n_steps(at) - 2 and not at.success
    click(at, "decode_reset")
    assert at.session_state["decode_step"] == 0
    assert step_line(at).startswith("**Step 1 of")
    assert kept(at, "decoding") is trace


def test_new_input_recomputes_and_restarts(solved_reverse):
    at = open_page(solved_reverse)
    click(at, "decode_next")
    at.text_input(key="decode_input").set_value("1 2 3 4 5 6").run()
    assert not at.exception
    assert at.session_state["decode_step"] == 0
    assert "trained on lengths 4;" in at.warning[0].value  # longer than anything it saw


def test_digits_typed_without_spaces_read_as_one_symbol_each(solved_reverse):
    at = open_page(solved_reverse)
    assert "spaces optional" in at.text_input(key="decode_input").label
    at.text_input(key="decode_input").set_value("1234").run()
    assert not at.exception and not at.error
    assert kept(at, "decoding").value["expected"] == [7, 6, 5, 4]  # 4 3 2 1 reversed, as token ids


def test_input_settings_and_step_survive_a_visit_to_another_page(solved_reverse):
    at = open_page(solved_reverse)
    at.text_input(key="decode_input").set_value("5 1 4 2 3").run()
    at.radio(key="decode_strategy").set_value("sample").run()
    at.slider(key="decode_temperature").set_value(2.0).run()
    at.number_input(key="decode_top_k").set_value(3).run()
    click(click(at, "decode_next"), "decode_next")
    before = step_line(at)
    at.switch_page("pages/anatomy.py").run()
    at.switch_page(PAGE).run()
    assert not at.exception and not at.error
    assert at.text_input(key="decode_input").value == "5 1 4 2 3" and at.radio(key="decode_strategy").value == "sample"
    assert at.slider(key="decode_temperature").value == 2.0 and at.number_input(key="decode_top_k").value == 3
    assert step_line(at) == before and "Step 3 " in before


def test_a_reload_then_another_model_of_the_task_decodes_from_the_first_step(solved_reverse, browser):
    """A reload's session takes back the steps the browser's last Decoding page computed, not the step it was at: a
    model of the same task put in hand then decodes the same input from its first step."""
    at = open_page(solved_reverse)
    click(at, "decode_run_to_end")
    other = dataclasses.replace(solved_reverse, model=copy.deepcopy(solved_reverse.model))  # another upload of it
    at = open_page(other)  # a new session of the same browser
    assert "decoding" in at.session_state["results"] and step_line(at).startswith("**Step 1 ")


def test_random_example_is_a_held_out_sequence(solved_reverse):
    at = open_page(solved_reverse)
    inputs = set()
    for _ in range(3):
        click(at, "decode_random")
        inputs.add(at.text_input(key="decode_input").value)
    assert len(inputs) > 1 and all(len(text.split()) == 4 for text in inputs)


def test_beam_search_draws_the_tree_and_finds_the_answer(solved_reverse):
    at = open_page(solved_reverse)
    at.radio(key="decode_strategy").set_value("beam").run()
    at.slider(key="decode_beam_width").set_value(2).run()
    assert not at.exception
    click(at, "decode_run_to_end")
    tree = next(spec for title, spec in charts(at).items() if title.startswith("Beam search"))
    nodes = {trace["name"]: trace for trace in tree["data"]}
    steps = kept(at, "decoding").value["steps"]
    n_nodes = len(nodes["live"]["x"]) + len(nodes["finished (EOS)"]["x"])
    assert n_nodes == 1 + sum(len(step.beams) for step in steps)
    assert nodes["finished (EOS)"]["x"]  # at least the answer ended with EOS
    assert at.success[0].value == f"Output: `{reversed_input(at)}`"


@pytest.mark.parametrize("strategy", ["greedy", "sample", "beam"])
def test_an_untrained_model_gets_it_wrong_and_the_table_shows_where(strategy):
    config = ModelConfig(vocab_size=8, max_len=8)
    torch.manual_seed(0)
    untrained = Checkpoint(
        Transformer(config).eval(),
        Vocab.digits(5),
        config,
        DataConfig(task="sort", n_symbols=5, max_len=6),
        history=[],
        train_config={},
    )
    at = open_page(untrained)
    at.text_input(key="decode_input").set_value("4 0 3").run()
    at.radio(key="decode_strategy").set_value(strategy).run()
    click(at, "decode_run_to_end")
    assert "wrong]" in next(m.value for m in at.markdown if m.value.startswith("Expected (sort): `0 3 4`"))
    table = at.dataframe[0].value
    assert list(table["true target"][:4]) == ["0", "3", "4", "EOS"]
    assert (table["free-running prediction"] != table["true target"]).any()


@pytest.mark.parametrize("strategy", ["greedy", "sample", "beam"])
def test_a_model_whose_outputs_are_not_finite_gets_a_message_not_an_exception(solved_reverse, strategy):
    model = copy.deepcopy(solved_reverse.model)
    with torch.no_grad():
        model.embed.lut.weight.mul_(1e38)  # every weight finite, every output NaN
    at = open_page(dataclasses.replace(solved_reverse, model=model))
    at.radio(key="decode_strategy").set_value(strategy).run()
    assert not at.exception
    assert "outputs are not finite" in at.error[0].value and not at.get("plotly_chart")


def test_sampling_renders_with_its_settings(solved_reverse):
    at = open_page(solved_reverse)
    at.radio(key="decode_strategy").set_value("sample").run()
    at.slider(key="decode_temperature").set_value(2.0).run()
    at.number_input(key="decode_top_k").set_value(3).run()
    assert not at.exception
    bar = charts(at)["Sampling distribution<br>(temperature\xa02,<br>top-k\xa03)"]["data"][0]
    assert (array(bar["x"]) > 0).sum() <= 3  # top-k leaves only three tokens to draw from
    (header,) = [m.value for m in at.markdown if m.value.startswith("**Step 1 ")]
    sampled = float(header.rsplit("sampled with p = ", 1)[1][:4])
    assert "model p = " in header and sampled in [round(float(x), 2) for x in array(bar["x"])]
    click(at, "decode_run_to_end")
    assert at.success[0].value.startswith("Output:")


@pytest.mark.parametrize("text", ["3 x 9", "", "   ", " ".join(["1"] * 500), "½ ∑ 3", "<s> 1", "1 2 3\x00"])
def test_bad_input_shows_an_error(solved_reverse, text):
    at = open_page(solved_reverse)
    at.text_input(key="decode_input").set_value(text).run()
    assert not at.exception
    assert at.error and not at.get("plotly_chart")


def test_next_click_is_fast(solved_reverse):
    at = open_page(solved_reverse)
    start = time.perf_counter()
    at.run()
    rerun = time.perf_counter() - start
    start = time.perf_counter()
    click(at, "decode_next")
    next_click = time.perf_counter() - start
    print(f"plain rerun {rerun * 1000:.0f} ms, Next click {next_click * 1000:.0f} ms")
    assert next_click < max(1.0, 3 * rerun)  # no recomputation: about the cost of a plain rerun


def shown_line(at: AppTest) -> str:
    """The page's line naming the model and the input's origin, as the student reads it (Markdown escapes gone)."""
    return next(m.value for m in at.markdown if m.value.startswith("Decoding with")).replace("\\", "")


def output_with(at: AppTest, strategy: str) -> str:
    """The whole output of `strategy` on the page's input, with its other settings at their defaults."""
    at.radio(key="decode_strategy").set_value(strategy).run()
    assert not at.exception
    return at.session_state["in_hand"].vocab.decode(kept(at, "decoding").value["output"])


def test_the_early_reverse_snapshot_decodes_its_first_example_three_ways():
    """The lesson's step 5: on the partly trained shipped snapshot, greedy, beam search and sampling write three
    different outputs for the page's first input, and only beam search gets it right."""
    at = open_page(None)
    click(at, "require_load_reverse-early")
    assert (Path(APP).parent / "checkpoints" / "reverse-early.pt").stat().st_size < 200 * 1024
    shown = shown_line(at)
    assert "shipped: reverse-early" in shown and "input: the first held-out example" in shown
    outputs = {strategy: output_with(at, strategy) for strategy in ("greedy", "beam", "sample")}
    assert len(set(outputs.values())) == 3, outputs
    right = " ".join(reversed(at.text_input(key="decode_input").value.split()))
    assert outputs["beam"] == right != outputs["greedy"], outputs


def test_another_model_in_hand_is_announced_and_named(solved_reverse):
    at = open_page(solved_reverse)
    assert not at.info  # a first visit: nothing changed
    click(at, "decode_random")
    assert "input: a random held-out example" in shown_line(at)
    at.text_input(key="decode_input").set_value("1 2 3 4").run()
    assert "input: typed by you" in shown_line(at)
    at.session_state["in_hand"] = Checkpoint(
        Transformer(solved_reverse.config), solved_reverse.vocab, solved_reverse.config, solved_reverse.task, [], {}
    )
    at.session_state["in_hand_name"] = "another reverse"
    at.run()
    assert [i.value for i in at.info if "The model in hand changed" in i.value], [i.value for i in at.info]
    assert "another reverse" in at.info[0].value
    at.run()
    assert not at.info  # said once


def to_the_end(at: AppTest) -> None:
    """The last decoding step (a model with random weights may stop at the first)."""
    if not at.button(key="decode_run_to_end").disabled:
        click(at, "decode_run_to_end")


def untrained(data: DataConfig) -> Checkpoint:
    """A model with random weights for `data`'s task."""
    from transformer.run_configs import model_max_len

    vocab = TaskData(data).vocab
    config = ModelConfig(vocab_size=len(vocab), d_model=16, n_heads=2, d_ff=32, max_len=model_max_len(data))
    return Checkpoint(Transformer(config).eval(), vocab, config, data, [], train_config={})


@pytest.mark.parametrize(
    "data, typed",
    [(DataConfig("add", 3, 5), "1 2 3"), (DataConfig("translate", 3, 5, 4), "cat dog sees")],
)
def test_an_input_the_task_has_no_output_for_decodes_and_says_there_is_nothing_to_compare(data, typed):
    at = open_page(untrained(data))
    assert not at.exception and not at.error  # the first held-out example, which has a target
    at.text_input(key="decode_input").set_value(typed).run()
    assert any("no expected output for this input" in info.value for info in at.info)  # at the first step already
    to_the_end(at)
    assert not at.exception and not at.error
    assert len([info for info in at.info if "no expected output for this input" in info.value]) == 1  # said once
    assert not any("Compare with teacher forcing" in h.value for h in at.header)


def test_a_task_from_examples_decodes_its_pairs_and_has_no_alignment():
    from transformer.pairs import pairs_from_rows

    rows = [(f"row {i}", f"{a} {b}", f"{b} {a}") for i, (a, b) in enumerate(zip("abcdefgh", "hgfedcba"), 1)]
    data = DataConfig.from_pairs(pairs_from_rows(rows, "swaps"))
    at = open_page(untrained(data))
    to_the_end(at)
    assert not at.exception and not at.error
    assert any("There is no alignment for this task: a task from examples" in info.value for info in at.info)
    labels = [e.label for e in at.expander]
    assert "The algorithm in the attention: no ideal to compare with" in labels  # it promises no ideal
    assert not any("against the task's ideal" in label for label in labels)
    assert CROSS_SPREAD.format(task="swaps") in [caption.value for caption in at.caption]  # its name, not "pairs"
    assert any(h.value == "Compare with teacher forcing" for h in at.header)  # a held-out pair has its target


def test_a_task_from_examples_offers_only_the_symbols_its_sources_hold():
    from transformer.pairs import pairs_from_rows

    rows = [(f"row {i}", f"{a} {b}", f"{b.upper()} {a.upper()}") for i, (a, b) in enumerate(zip("abcde", "edcba"), 1)]
    at = open_page(untrained(DataConfig.from_pairs(pairs_from_rows(rows, "words"))))
    for typed, unknown in (("zz", "zz"), ("a B", "B")):  # an unknown word, and a word only its targets hold
        at.text_input(key="decode_input").set_value(typed).run()
        assert not at.exception
        (error,) = [e.value.replace("\\", "") for e in at.error]
        assert error.startswith(f"Unknown symbol '{unknown}'; use a e b d c."), error  # a sentence: a capital


def test_back_and_next_have_arrow_keys_that_their_help_names(solved_reverse):
    at = open_page(solved_reverse)
    for key, shortcut, said in (("decode_back", "left", "←"), ("decode_next", "right", "→")):
        proto = at.button(key=key).proto
        assert proto.shortcut.lower() == shortcut and proto.help.endswith(f"\n\nKeyboard shortcut: {said}")


@pytest.mark.parametrize(
    "task, caption", [("reverse", CROSS_MIRRORED), ("caesar", CROSS_ALIGNED), ("count", CROSS_SPREAD)]
)
def test_the_cross_attention_caption_speaks_of_the_task_in_hand(task, caption):
    captions = [caption.value for caption in open_page(untrained(DataConfig(task, 3, 5, 4))).caption]
    assert [c for c in (CROSS_ALIGNED, CROSS_MIRRORED, CROSS_SPREAD) if c.format(task=task) in captions] == [caption]


@pytest.mark.parametrize(
    "task, n_symbols, typed, reason",
    [("caesar", 4, "a", "caesar reads a key letter"), ("translate", 10, "dog", "translate reads sentences")],
)
def test_an_input_its_task_reads_no_output_for_is_decoded_and_said_to_have_no_alignment(task, n_symbols, typed, reason):
    at = open_page(untrained(DataConfig(task, 3, 5, n_symbols)))
    at.text_input(key="decode_input").set_value(typed).run()
    assert not at.exception and not at.error
    assert any(i.value.startswith(f"This input has no ideal alignment: {reason}") for i in at.info)


def test_the_longest_input_said_is_the_longest_whose_output_fits_the_model():
    data = DataConfig("repeat", 1, 8, 4)  # a target twice its source: a model of 64 positions repeats 31 symbols
    at = open_page(untrained(data))
    assert "at most 31 symbols" in at.text_input(key="decode_input").label.lower()
    at.text_input(key="decode_input").set_value(" ".join(["0"] * 32)).run()
    assert not at.exception and [e.value for e in at.error if "the most is 31" in e.value]
    at.text_input(key="decode_input").set_value(" ".join(["0"] * 31)).run()
    assert not at.exception and not at.error


@pytest.mark.parametrize("agent", [PHONE, LAPTOP], ids=["phone", "laptop"])
def test_a_steps_numbers_and_the_logit_lens_fit_the_width_they_are_drawn_at(solved_reverse, agent, monkeypatch):
    """Sized for a phone's 356 px, a ten-symbol source's attention numbers overlapped in the attention column at 150%
    zoom (291.7 px: columns stand side by side there), and the logit lens's title ran past both edges of its chart in
    the expander on a phone (320 px). The page gives each figure the width it is drawn at where narrowest."""
    browse_as(monkeypatch, agent)
    at = open_page(solved_reverse)
    at.text_input(key="decode_input").set_value("3 1 4 1 5 9 2 6 5 3").run()
    assert not at.exception and not at.error
    column_px = PHONE_CHART_PX if agent == PHONE else ATTENTION_COLUMN_PX
    cross = next(spec for title, spec in charts(at).items() if title.startswith("Cross-attention of step"))
    numbers = [trace for trace in cross["data"] if trace["type"] == "scatter"]
    if agent == PHONE:  # stacked across the phone: room for ten keys' numbers
        plot_px = column_px - cross["layout"]["margin"]["l"] - cross["layout"]["margin"]["r"]
        assert plot_px / 10 - drawn_px("88%", numbers[0]["textfont"]["size"]) >= NUMBER_GAP_PX
    else:  # no room for them at 12 px: the colour bar instead
        assert not numbers and cross["data"][0]["showscale"] is True
    lens = next(spec for title, spec in charts(at).items() if "next-token guess" in title)
    lens_px = (PHONE_CHART_PX if agent == PHONE else PAGE_PX) - EXPANDER_INSET_PX
    assert not title_overflow(go.Figure(lens), lens_px)


@pytest.mark.parametrize("agent", [PHONE, LAPTOP], ids=["phone", "laptop"])
def test_on_a_phone_a_drag_over_a_chart_scrolls_the_page_and_no_toolbar_shows(solved_reverse, agent, monkeypatch):
    """Plotly's default drag zooms a chart: on a phone, whose charts span the screen, a finger could not scroll the
    page past one, and a tap zoomed it by accident. There the charts take no drag and show no toolbar; elsewhere
    they keep both."""
    browse_as(monkeypatch, agent)
    at = open_page(solved_reverse)
    at.button(key="decode_next").click().run()
    drawn = at.get("plotly_chart")
    assert drawn and not at.exception
    for element in drawn:
        layout, config = json.loads(element.proto.spec)["layout"], json.loads(element.proto.config or "{}")
        if agent == PHONE:
            assert layout.get("dragmode") is False and config.get("displayModeBar") is False
        else:
            assert "dragmode" not in layout and "displayModeBar" not in config
            assert config["modeBarButtonsToRemove"] == ["zoomIn2d", "zoomOut2d", "autoScale2d"]  # fewer Tab stops
