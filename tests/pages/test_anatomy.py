import json
import re

import plotly.graph_objects as go
import pytest
import torch
from streamlit.testing.v1 import AppTest

from tests.helpers import array
from tests.helpers.apptest import LAPTOP, PHONE, browse_as, open_anatomy
from tests.helpers.figures import title_overflow
from tests.helpers.models import random_checkpoint
from transformer.figures import PAGE_PX, PHONE_CHART_PX
from transformer.i18n import latin_terms


def chart(at: AppTest, key: str) -> dict:
    """The plotly spec of the chart with this key."""
    for element in at.get("plotly_chart"):
        if key in element.proto.id:
            return json.loads(element.proto.spec)
    raise AssertionError(f"no chart with key {key}")


def z_values(trace: dict) -> torch.Tensor:
    """A heatmap's z from its JSON spec (Plotly sends arrays base64-encoded)."""
    return torch.tensor(array(trace["z"]).astype(float))


def test_without_a_model_says_where_to_get_one():
    at = open_anatomy(None)
    assert "No model in hand" in at.info[0].value
    assert not at.get("plotly_chart") and not at.dataframe


@pytest.fixture(scope="module")
def at() -> AppTest:
    return open_anatomy(random_checkpoint(n_layers=2, norm_first=True))


def test_module_table_and_config(at):
    modules = at.table[1].value  # cells that wrap: every shape whole, at any width
    parameters = modules["parameters"].str.replace(",", "").astype(int)
    assert parameters.sum() == at.session_state["in_hand"].model.num_parameters()
    assert "`decoder.layers.1.cross_attn`" in modules["in the code"].tolist()  # code, in every language
    assert modules.set_index("in the code").loc["`generator`", "output"] == "1×9×13"  # BOS + 8 target tokens
    assert modules.set_index("in the code").loc["`embed`", "input"] == "1×8 ; 1×9"  # source ; target
    settings = at.table[0].value  # words first, the code's names last
    assert settings.columns.tolist() == ["value", "in the code"]
    mask = settings.loc["decoder may not look at later target positions"]
    assert mask["in the code"] == "`causal_mask`" and mask["value"] == "yes"
    assert settings.set_index("in the code").loc["`norm_first`", "value"].startswith("pre-norm")
    assert at.dataframe[0].value["part"].tolist() == [
        "embedding",
        "positional encoding",
        "encoder",
        "decoder",
        "generator",
        "total",
    ]
    diagram = chart(at, "anatomy_diagram")
    assert "Norm … Add (pre-norm)" not in json.dumps(diagram) and "LayerNorm" in json.dumps(diagram)


def test_selecting_an_attention_block_shows_its_weights(at):
    model = at.session_state["in_hand"].model
    at.selectbox(key="anatomy_block").set_value("cross")
    at.selectbox(key="anatomy_layer").set_value(1)
    at.run()
    assert not at.exception
    spec = chart(at, "anatomy_projections")
    assert [t["type"] for t in spec["data"]] == ["heatmap"] * 4
    torch.testing.assert_close(z_values(spec["data"][0]), model.decoder.layers[1].cross_attn.W_Q.detach().double())


def test_positional_encoding_and_embeddings(at):
    at.multiselect(key="anatomy_dims").set_value([2, 3, 5])
    at.text_input(key="anatomy_input").set_value("4 4 4")
    at.run()
    assert not at.exception and not at.error
    curves = chart(at, "anatomy_pe_curves")
    assert [t["name"] for t in curves["data"]] == ["dim 2 (sin)", "dim 3 (cos)", "dim 5 (cos)"]
    panels = chart(at, "anatomy_embeddings")["data"]
    before, after = (z_values(p) for p in panels)
    assert torch.equal(before[0], before[2]) and not torch.equal(after[0], after[2])


def test_bad_sequence_shows_an_error(at):
    at.text_input(key="anatomy_input").set_value("4 banana")
    at.run()
    assert not at.exception
    assert "banana" in at.error[0].value
    assert not any("anatomy_embeddings" in c.proto.id for c in at.get("plotly_chart"))


def test_model_without_positional_encoding_shows_the_reference_table():
    at = open_anatomy(random_checkpoint(positional="none"))
    assert any("this model uses none" in c.value for c in at.caption)


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
@pytest.mark.parametrize("agent, chart_px", [(PHONE, PHONE_CHART_PX), (LAPTOP, PAGE_PX)], ids=["phone", "laptop"])
def test_the_titles_across_the_page_fit_the_browsers_width(agent, chart_px, lang, monkeypatch):
    """On a phone the reference table's title of a model with no positional encoding ran past both edges of its chart
    in Chinese, and past the left one in English ("g: the paper's sinusoidal table, for reference: thi")."""
    browse_as(monkeypatch, agent)
    at = open_anatomy(random_checkpoint(positional="none", n_layers=2), lang=lang)
    at.selectbox(key="anatomy_block").set_value("cross")
    at.run()
    for key in ("anatomy_pe_heatmap", "anatomy_projections"):
        figure = go.Figure(layout=chart(at, key)["layout"])
        assert not title_overflow(figure, chart_px), figure.layout.title.text


@pytest.mark.parametrize(
    "positional, says", [("sinusoidal", "Along every diagonal"), ("learned", "still as initialised")]
)
def test_position_similarity_marks_the_positions_training_reached(positional, says):
    at = open_anatomy(random_checkpoint(positional=positional))
    spec = chart(at, "anatomy_pe_similarity")
    assert z_values(spec["data"][0]).shape == (64, 64)  # every position the model's encoding covers
    assert {shape["x1"] for shape in spec["layout"]["shapes"]} == {8.5}  # BOS + 8 target symbols: positions 0-8
    assert any(says in caption.value for caption in at.caption)


def test_in_chinese_the_tables_and_the_diagram_say_no_english_word_but_code_and_the_models_names():
    at = open_anatomy(random_checkpoint(positional="learned", norm_first=True), lang="zh-CN")
    settings, modules = (table.value for table in at.table[:2])
    cells = [*settings["数值"], *modules.index, *at.dataframe[0].value["部分"]]  # the walk reads the meanings
    diagram = chart(at, "anatomy_diagram")["layout"]["annotations"]
    words = {"".join(cells), *(a["text"].replace("<br>", " ") for a in diagram)}
    code = {cell for cell in [*settings["代码中的名称"], *modules["代码中的名称"]] if cell.startswith("`")}
    allowed = set(latin_terms())
    assert {w for text in words for w in re.findall(r"[A-Za-z][A-Za-z_]+", text) if w not in allowed} == set()
    assert code and "位置编码（可学习）" in modules.index and "可学习" in settings["数值"].tolist()
    assert at.dataframe[0].value["部分"].tolist() == ["嵌入", "位置编码", "编码器", "解码器", "生成器", "合计"]
