import html
import json

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from tests.helpers import array
from tests.helpers.apptest import LAPTOP, PHONE, browse_as
from tests.helpers.figures import key_label_clashes
from transformer.checkpoint import Checkpoint
from transformer.figures import PAGE_PX, PHONE_CHART_PX
from transformer.model import ModelConfig, Transformer
from transformer.tasks import DataConfig, TaskData
from transformer.vocab import Vocab

REVERSE = DataConfig(task="reverse", max_len=8)


def open_masking(with_model: bool, task: DataConfig = REVERSE) -> AppTest:
    at = AppTest.from_file("../../streamlit_app.py", default_timeout=30)
    at.run()
    if with_model:
        torch.manual_seed(0)
        vocab = TaskData(task).vocab
        config = ModelConfig(vocab_size=len(vocab), n_layers=2)
        model = Transformer(config).eval()
        at.session_state["in_hand"] = Checkpoint(model, vocab, config, task, [], {})
        at.session_state["in_hand_name"] = "random test model"
    at.switch_page("pages/masking.py")
    at.run()
    assert not at.exception
    return at


def charts(at: AppTest) -> dict[str, dict]:
    """Plotly specs by the end of their key."""
    return {el.proto.id.rsplit("-", 1)[-1]: json.loads(el.proto.spec) for el in at.get("plotly_chart")}


def grid(spec: dict) -> np.ndarray:
    """A mask heatmap's values, decoded from Plotly's typed-array JSON: 1 = may attend."""
    return array(spec["data"][0]["z"])


def axis_labels(spec: dict, axis: str) -> list[str]:
    return [html.unescape(label) for label in spec["layout"][axis]["ticktext"]]


def test_without_a_model_says_where_to_get_one():
    at = open_masking(with_model=False)
    assert "No model in hand" in at.info[0].value
    assert not at.get("plotly_chart")


@pytest.fixture(scope="module")
def at() -> AppTest:
    return open_masking(with_model=True)


def test_masks_and_attention_have_token_labels_and_padding(at):
    at.text_input(key="mask_src").set_value("1 2 3")
    at.text_input(key="mask_tgt").set_value("3 2 1")
    at.number_input(key="mask_pad_to").set_value(5)
    at.run()
    assert not at.exception and not at.error
    specs = charts(at)
    assert axis_labels(specs["mask_fig_padding"], "xaxis") == ["1", "2", "3", "PAD", "PAD"]
    assert axis_labels(specs["mask_fig_combined"], "yaxis") == ["BOS", "3", "2", "1", "PAD", "PAD"]
    cross = specs["mask_fig_cross"]
    assert len(axis_labels(cross, "yaxis")) == 6 and len(axis_labels(cross, "xaxis")) == 5
    causal, combined = grid(specs["mask_fig_causal"]), grid(specs["mask_fig_combined"])
    assert (causal == np.tril(np.ones((6, 6)))).all()  # the look-ahead mask alone ignores padding
    assert (combined == np.tril(np.ones((6, 6))) * [1, 1, 1, 1, 0, 0]).all()  # and the PAD keys are hidden too
    assert (grid(specs["mask_fig_padding"]) == [1, 1, 1, 0, 0]).all()  # every query may see the 3 real keys only
    before, after = specs["mask_fig_attention_before"], specs["mask_fig_attention_after"]
    assert len(before["data"]) == len(after["data"]) == 4  # one subplot per head
    assert before["layout"]["title"]["text"].startswith("Before masking: encoder self-attention, layer 0")


def test_selectors_switch_the_attention_shown(at):
    at.radio(key="mask_kind").set_value("cross")
    at.selectbox(key="mask_layer").set_value(1)
    at.run()
    assert not at.exception
    title = charts(at)["mask_fig_attention_after"]["layout"]["title"]["text"]
    assert title == "After masking: cross-attention (decoder → encoder), layer 1"


def test_random_pair_fills_the_inputs_shorter_than_pad_to(at):
    at.number_input(key="mask_pad_to").set_value(6)
    at.button(key="mask_random").click()
    at.run()
    assert not at.exception and not at.error
    src, tgt = at.text_input(key="mask_src").value.split(), at.text_input(key="mask_tgt").value.split()
    assert 1 <= len(src) <= 5 and tgt == src[::-1]  # the reverse task's answer
    assert "PAD" in axis_labels(charts(at)["mask_fig_padding"], "xaxis")


def test_bad_input_shows_an_error_not_a_traceback(at):
    at.text_input(key="mask_src").set_value("1 two 3")
    at.run()
    assert not at.exception
    assert "Source" in at.error[0].value and "two" in at.error[0].value
    assert not at.get("plotly_chart")
    at.text_input(key="mask_src").set_value("1 2 3")
    at.run()
    assert not at.exception and not at.error


def test_a_count_source_takes_letters_and_its_target_digits_each_message_naming_only_those():
    """Both fields listed all of count's symbols, "a b c d 0 1 2 ...", and read a digit in a source."""
    at = open_masking(True, DataConfig(task="count", min_len=3, max_len=5, n_symbols=4))
    at.text_input(key="mask_src").set_value("a 0 b").run()
    at.text_input(key="mask_tgt").set_value("1 a 1 0").run()
    assert not at.exception
    source, target = (e.value.replace("\\", "") for e in at.error)  # markdown_literal's escapes
    assert source.startswith("Source: unknown symbol '0'; use a b c d. Fix it")
    assert target.startswith("Target: unknown symbol 'a'; use 0-9. Fix it")
    at.text_input(key="mask_src").set_value("a c b").run()
    at.text_input(key="mask_tgt").set_value("1 1 1 0").run()
    assert not at.exception and not at.error and at.get("plotly_chart")


def test_peek_at_future_shows_diff_tables(at):
    at.text_input(key="mask_src").set_value("1 2 3 4")
    at.text_input(key="mask_tgt").set_value("4 3 2 1")
    at.number_input(key="exp_change_at").set_value(4)
    at.button(key="exp_peek_future").click()
    at.run()
    assert not at.exception and not at.error
    with_mask, without_mask = at.dataframe[0].value, at.dataframe[1].value
    assert with_mask["position"].tolist() == [0, 1, 2, 3]
    assert not with_mask["changed?"].any() and without_mask["changed?"].any()
    assert "causal mask works" in at.success[0].value


def test_a_tiny_change_is_not_said_as_zero(monkeypatch):
    at = open_masking(with_model=True)
    monkeypatch.setattr("transformer.mask_experiments.MaskingResult.max_diff", staticmethod(lambda table: 2.5e-05))
    at.button(key="exp_peek_future").click().run()
    said = [m.value for m in at.markdown if "positions changed" in m.value]
    assert len(said) == 2 and all(line.endswith("largest |Δ| = 2.5e-05") for line in said), said  # not 0.0000


def test_experiment_results_stay_until_their_inputs_change(at):
    at.button(key="exp_peek_future").click()
    at.run()
    at.button(key="exp_pad_more").click()
    at.run()
    assert not at.exception and len(at.dataframe) == 4  # both experiments, two tables each
    at.radio(key="mask_kind").set_value(at.radio(key="mask_kind").options[-1]).run()
    assert not at.exception and len(at.dataframe) == 4  # looking at other attention keeps them
    at.number_input(key="exp_extra").set_value(5).run()
    assert len(at.dataframe) == 2  # the pad experiment ran with 3 extra PAD tokens: its tables go
    target = at.text_input(key="mask_tgt").value
    at.text_input(key="mask_tgt").set_value("4 3 2").run()
    assert not at.dataframe
    at.text_input(key="mask_tgt").set_value(target).run()


def test_peek_at_a_position_past_the_target_is_an_error(at):
    at.number_input(key="exp_change_at").set_value(9)
    at.button(key="exp_peek_future").click()
    at.run()
    assert not at.exception and "Change position must be" in at.error[0].value  # a sentence on its own
    assert not at.dataframe
    at.number_input(key="exp_change_at").set_value(4).run()
    assert not at.error  # the error belonged to position 9


def test_pad_more_shows_diff_tables(at):
    at.number_input(key="exp_extra").set_value(3)
    at.button(key="exp_pad_more").click()
    at.run()
    assert not at.exception and not at.error
    with_mask, without_mask = at.dataframe[-2].value, at.dataframe[-1].value  # below the peek's tables, if shown
    assert len(with_mask) == 5  # BOS + 4 target tokens
    assert with_mask["max |Δ|"].max() < 1e-5 and without_mask["max |Δ|"].max() > 1e-4
    assert "padding mask works" in at.success[0].value


def test_a_target_typed_anew_moves_the_peek_to_its_own_last_token_and_a_chosen_position_stays_otherwise(at):
    at.number_input(key="exp_change_at").set_value(2).run()
    at.text_input(key="mask_src").set_value("1 2 3").run()
    assert at.number_input(key="exp_change_at").value == 2  # the same target: the student's choice stays
    at.text_input(key="mask_tgt").set_value("3 2 1").run()
    assert at.number_input(key="exp_change_at").value == 3
    at.button(key="exp_peek_future").click().run()
    assert not at.error and "causal mask works" in at.success[0].value


def test_a_random_pair_moves_the_peek_to_its_own_last_token(at):
    at.number_input(key="exp_change_at").set_value(9)
    at.button(key="mask_random").click()
    at.run()
    target = at.text_input(key="mask_tgt").value.split()
    assert at.number_input(key="exp_change_at").value == len(target)
    at.button(key="exp_peek_future").click()
    at.run()
    assert not at.exception and not at.error and not at.warning and "causal mask works" in at.success[0].value


@pytest.mark.parametrize("lengths", [(6, 8), (9, 12)])
def test_the_first_pair_is_of_a_length_the_model_trained_on_with_room_to_pad(lengths):
    config = ModelConfig()
    task = DataConfig(task="reverse", min_len=lengths[0], max_len=lengths[1])
    at = AppTest.from_file("../../streamlit_app.py", default_timeout=30)
    at.session_state["in_hand"] = Checkpoint(Transformer(config).eval(), Vocab.digits(10), config, task, [], {})
    at.run()
    at.switch_page("pages/masking.py").run()
    source = at.text_input(key="mask_src").value.split()
    assert not at.exception and len(source) == lengths[0]  # not 5, shorter than any input it trained on
    assert at.number_input(key="mask_pad_to").value == max(8, lengths[0] + 2)  # PAD still shows


@pytest.mark.parametrize("page", ["pages/masking.py", "pages/anatomy.py", "pages/decoding.py"])
def test_a_model_with_the_fewest_positions_opens_without_a_crash(page):
    config = ModelConfig(max_len=2)  # an uploaded model may cover BOS and one symbol only
    at = AppTest.from_file("../../streamlit_app.py", default_timeout=30)
    at.session_state["in_hand"] = Checkpoint(
        Transformer(config).eval(), Vocab.digits(10), config, DataConfig(task="copy", min_len=1, max_len=1), [], {}
    )
    at.run()
    at.switch_page(page)
    at.run()
    assert not at.exception and not at.error


@pytest.mark.parametrize("agent", [PHONE, LAPTOP])
def test_on_a_phone_the_heads_leave_each_key_label_room_under_its_column(agent, monkeypatch):
    """A phone's browser says so in its user agent: there the heads, across a page 356 px wide, keep every key's label
    clear of its neighbours and of the next panel (Chromium draws a digit 8 px wide); on a laptop's they do so across
    the page at 150% zoom (PAGE_PX), and would on a phone too."""
    browse_as(monkeypatch, agent)
    at = open_masking(with_model=True)
    at.text_input(key="mask_src").set_value("1 2 3 4 5 6 7 8 9 1 2 3")
    at.text_input(key="mask_tgt").set_value("3 2 1 9 8 7 6 5 4 3 2 1")
    at.run()
    assert not at.exception and not at.error
    heads = charts(at)["mask_fig_attention_after"]
    assert len(heads["layout"]["xaxis"]["tickvals"]) == 12
    clashes = key_label_clashes(heads, PHONE_CHART_PX, lambda text: 8.0 * len(text))
    assert not clashes  # a laptop's figure too: its keys stand half the type apart, so a phone's 0.6 keeps them apart
    assert not key_label_clashes(heads, PHONE_CHART_PX if agent == PHONE else PAGE_PX, lambda text: 8.0 * len(text))
