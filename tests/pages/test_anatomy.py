import json

import pytest
import torch
from streamlit.testing.v1 import AppTest

from tests.helpers import array
from transformer.checkpoint import Checkpoint
from transformer.model import ModelConfig, Transformer
from transformer.tasks import DataConfig
from transformer.vocab import Vocab


def random_checkpoint(**changes) -> Checkpoint:
    torch.manual_seed(0)
    config = ModelConfig(**changes)
    return Checkpoint(
        Transformer(config).eval(), Vocab.digits(10), config, DataConfig(task="reverse", max_len=8), [], {}
    )


def open_anatomy(checkpoint: Checkpoint | None) -> AppTest:
    at = AppTest.from_file("../../streamlit_app.py", default_timeout=90)
    at.run()
    if checkpoint is not None:
        at.session_state["in_hand"] = checkpoint
        at.session_state["in_hand_name"] = "random test model"
    at.switch_page("pages/anatomy.py")
    at.run()
    assert not at.exception
    return at


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
    assert "decoder.layers.1.cross_attn" in modules["in the code"].tolist()
    assert modules.set_index("in the code").loc["generator", "output"] == "1×9×13"  # BOS + 8 target tokens
    assert modules.set_index("in the code").loc["embed", "input"] == "1×8 ; 1×9"  # source ; target
    settings = at.table[0].value  # words first, the code's names last
    assert settings.columns.tolist() == ["value", "in the code"]
    mask = settings.loc["decoder may not look at later target positions"]
    assert mask["in the code"] == "causal_mask" and mask["value"] == "yes"
    assert settings.set_index("in the code").loc["norm placement", "value"].startswith("pre-norm")
    assert at.dataframe[0].value.iloc[-1]["part"] == "total"
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


@pytest.mark.parametrize(
    "positional, says", [("sinusoidal", "Along every diagonal"), ("learned", "still as initialised")]
)
def test_position_similarity_marks_the_positions_training_reached(positional, says):
    at = open_anatomy(random_checkpoint(positional=positional))
    spec = chart(at, "anatomy_pe_similarity")
    assert z_values(spec["data"][0]).shape == (64, 64)  # every position the model's encoding covers
    assert {shape["x1"] for shape in spec["layout"]["shapes"]} == {8.5}  # BOS + 8 target symbols: positions 0-8
    assert any(says in caption.value for caption in at.caption)
