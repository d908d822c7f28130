"""The Length test page through AppTest, on the shipped reverse model (trained on lengths 1-10)."""

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.helpers.apptest import kept
from transformer import Checkpoint, DataConfig, ModelConfig, TaskData, Transformer, Vocab, load_checkpoint

ROOT = Path(__file__).resolve().parents[2]
APP, PAGE = str(ROOT / "streamlit_app.py"), "pages/lengths.py"
SHIPPED = load_checkpoint(ROOT / "checkpoints" / "reverse.pt")


def open_page(checkpoint: Checkpoint | None = SHIPPED, lang: str | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    if lang is not None:
        at.query_params["lang"] = lang
    if checkpoint is not None:
        at.session_state["in_hand"] = checkpoint
        at.session_state["in_hand_name"] = "test model"
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception
    return at


def chart_titles(at: AppTest) -> list[str]:
    return [json.loads(chart.proto.spec)["layout"]["title"]["text"] for chart in at.get("plotly_chart")]


def test_the_page_scores_every_length_and_says_where_the_model_stops_working():
    at = open_page()
    assert at.slider(key="lengths_range").value == (1, 20)  # up to twice the longest trained length
    scores = kept(at, "lengths").value.scores
    assert scores["length"].tolist() == list(range(1, 21))
    lines = at.markdown[1].value
    assert "At lengths it trained on (1-10): exact match 100%." in lines
    assert "Longer than any it trained on: exact match 0% from length 11 on." in lines
    assert chart_titles(at) == ["Accuracy by input length", "Output length"]
    assert at.selectbox(key="lengths_mistakes_at").options == [str(k) for k in range(11, 21)]
    assert len(at.dataframe[0].value) == 5 and list(at.dataframe[0].value.columns) == ["input", "expected", "output"]


def test_new_settings_score_again_and_a_test_with_no_mistakes_says_so():
    at = open_page()
    first = kept(at, "lengths")
    at.slider(key="lengths_range").set_value((3, 10)).run()
    assert not at.exception
    result = kept(at, "lengths")
    assert result is not first and result.value.scores["length"].tolist() == list(range(3, 11))
    assert at.success[0].value == "Every output was right."
    at.select_slider(key="lengths_n").set_value(25).run()
    assert (kept(at, "lengths").value.scores["n"] <= 25).all()


def test_without_a_model_the_page_offers_the_shipped_ones():
    at = open_page(None)
    assert "No model in hand yet" in at.info[0].value
    assert kept(at, "lengths") is None
    at.button(key="require_load_reverse").click().run()
    assert not at.exception and kept(at, "lengths").value.scores["length"].max() == 20


def test_a_model_that_reads_only_one_symbol_gets_a_test_without_a_slider():
    config = ModelConfig(max_len=2)  # BOS + one symbol: inputs of length 1 only
    model = Transformer(config).eval()
    at = open_page(Checkpoint(model, Vocab.digits(), config, DataConfig(min_len=1, max_len=1), [], {}))
    assert not at.slider and "the only one" in at.markdown[1].value
    assert any("No input longer than those it trained on" in c.value for c in at.caption)  # and says why not
    assert kept(at, "lengths").value.scores["length"].tolist() == [1]


def test_a_wrong_output_opens_on_the_decoding_page():
    at = open_page()
    assert not any("No input longer" in c.value for c in at.caption)  # reverse, trained on 1-10, tested up to 20
    at.session_state["decode_strategy"] = "sample"  # the strategy last picked on Decoding: the wrong output is greedy's
    at.selectbox(key="lengths_mistakes_at").set_value(12).run()
    inputs = [" ".join(text.split()) for text in at.dataframe[0].value["input"]]  # the grid's symbols en spaces apart
    assert len(inputs) > 1 and all(len(text.split()) == 12 for text in inputs)
    choice = at.selectbox(key="lengths_decode_row")
    assert [" ".join(option.split("  →  ")[0].split()) for option in choice.options] == inputs
    assert (
        " " not in choice.options[0].split("  →  ")[0] and choice.value == inputs[0]
    )  # its symbols en spaces apart, as in the grid
    choice.set_value(inputs[1]).run()
    at.selectbox(key="lengths_mistakes_at").set_value(13).run()  # another length: its own wrong outputs to pick
    choice = at.selectbox(key="lengths_decode_row")
    thirteen = [" ".join(text.split()) for text in at.dataframe[0].value["input"]]
    assert [" ".join(option.split("  →  ")[0].split()) for option in choice.options] == thirteen
    assert choice.value == thirteen[0]
    at.selectbox(key="lengths_mistakes_at").set_value(12).run()
    at.selectbox(key="lengths_decode_row").set_value(inputs[1]).run()
    at.button(key="lengths_decode").click().run()
    assert not at.exception
    assert at.text_input(key="decode_input").value == inputs[1] and at.radio(key="decode_strategy").value == "greedy"
    assert kept(at, "decoding").key[0] == tuple(SHIPPED.vocab.encode(inputs[1]))
    assert "trained on lengths 1-10" in at.warning[0].value


def test_a_shipped_model_is_tested_once_for_the_whole_class():
    reports = []
    for _ in range(2):  # two students load the shipped reverse model and open the page
        at = AppTest.from_file(APP, default_timeout=60).run()
        at.button(key="load_reverse").click().run()
        at.switch_page(PAGE).run()
        assert not at.exception and at.session_state["in_hand_name"] == "shipped: reverse"
        reports.append(kept(at, "lengths").value)
    assert reports[0] is reports[1]
    assert kept(open_page(), "lengths").value is not reports[0]  # another object: its own test


def test_a_task_from_examples_is_tested_at_its_pairs_lengths_only():
    from transformer.pairs import pairs_from_rows
    from transformer.run_configs import model_max_len
    from transformer.tasks import TaskData

    rows = [(f"row {i}", f"{a} {b}", f"{b} {a}") for i, (a, b) in enumerate(zip("abcdefgh", "hgfedcba"), 1)]
    data = DataConfig.from_pairs(pairs_from_rows(rows, "swaps"))
    vocab = TaskData(data).vocab
    config = ModelConfig(vocab_size=len(vocab), d_model=16, n_heads=2, d_ff=32, max_len=model_max_len(data))
    at = open_page(Checkpoint(Transformer(config).eval(), vocab, config, data, [], train_config={}))
    assert not at.exception and not at.error
    scores = kept(at, "lengths").value.scores
    assert scores["length"].tolist() == [2]  # its only length: random inputs of another would have no target


@pytest.mark.parametrize(
    "lang, trained, left_out",
    [
        ("en", "At lengths it trained on (2-3): exact match", "Length 3 has no pair in the held-out set"),
        ("zh-CN", "在训练过的长度（2-3）上：精确匹配", "留出集里没有长度为 3 的序列对"),
    ],
)
def test_a_length_whose_pairs_are_all_training_pairs_is_said_to_be_trained_on_but_not_tested(lang, trained, left_out):
    from transformer.pairs import TaskPairs
    from transformer.run_configs import model_max_len

    train = (("a b", "b a"), ("c d", "d c"), ("e f", "f e"), ("a b c", "c b a"), ("d e f", "f e d"))
    data = DataConfig.from_pairs(TaskPairs("mine", tuple("abcdef"), train, (("b c", "c b"),)))  # held out: 2 only
    vocab = TaskData(data).vocab
    config = ModelConfig(vocab_size=len(vocab), d_model=16, n_heads=2, d_ff=32, max_len=model_max_len(data))
    at = open_page(Checkpoint(Transformer(config).eval(), vocab, config, data, [], train_config={}), lang)
    assert not at.exception and not at.error
    assert at.slider(key="lengths_range").value == (2, 3) and kept(at, "lengths").value.scores["length"].tolist() == [2]
    assert trained in at.markdown[1].value
    assert [info.value for info in at.info if left_out in info.value]


def test_a_gallery_model_is_offered_only_the_lengths_its_task_has_inputs_of():
    data = DataConfig("translate", 3, 7, 10)
    vocab = TaskData(data).vocab
    model = Transformer(ModelConfig(vocab_size=len(vocab), max_len=20))
    at = open_page(Checkpoint(model.eval(), vocab, model.config, data, [], train_config={}))
    slider = at.slider(key="lengths_range")
    assert (slider.min, slider.max, slider.value) == (3, 7, (3, 7))
    assert kept(at, "lengths").value.scores["length"].tolist() == [3, 4, 5, 6, 7]
    assert not any("leaves out" in m.value for m in at.markdown)
