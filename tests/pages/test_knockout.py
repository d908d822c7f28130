"""The Knockout page and the Decoding page's logit lens through AppTest, on the shipped reverse model."""

from pathlib import Path

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from tests.helpers import array
from tests.helpers.apptest import chart, charts, kept, open_with_model
from transformer import Checkpoint, DataConfig, ModelConfig, Transformer, Vocab
from transformer.checkpoint import load_checkpoint
from transformer.figures import PHONE_CHART_PX, TITLE_INSET_PX, drawn_px
from transformer.figures.heatmaps import BUILT_TITLE_SIZE_PX
from transformer.knockout import all_heads, score
from transformer.patching import patching_grid
from transformer.tasks import TaskData

ROOT = Path(__file__).resolve().parents[2]


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_the_page_shows_a_grid_per_attention_kind_beside_the_intact_scores():
    at = open_with_model()
    grid = kept(at, "knockout_grid").value
    assert 10 < grid.n < grid.n_held_out == 1000 and len(grid.heads) == 12 and grid.ablation == "zero"
    assert metrics(at) == {"Intact exact match": "100%", "Intact token accuracy": "100%"}
    (title, figure), *others = charts(at).items()
    assert title.replace("<br>", " ") == "Held-out exact match with one head removed (intact model: 100.0%)"
    widest = max(drawn_px(line, BUILT_TITLE_SIZE_PX) for line in title.split("<br>"))
    assert widest <= PHONE_CHART_PX - 2 * TITLE_INSET_PX  # a phone's chart shows it whole
    assert [array(trace["z"]).tolist() for trace in figure["data"] if trace["type"] == "heatmap"] == [
        [grid.heads[grid.heads["kind"] == kind]["exact_match"].tolist()]
        for kind in ("encoder", "decoder_self", "cross")
    ]
    assert at.caption[0].value.startswith(f"Scored on {grid.n:,} of the 1,000 held-out sequences")
    assert "Pick heads above" in at.info[0].value
    at.radio(key="knockout_metric").set_value("token_acc").run()
    titles = [title.replace("<br>", " ") for title in charts(at)]
    assert "Held-out token accuracy with one head removed (intact model: 100.0%)" in titles


def test_the_patching_form_takes_no_enter_so_no_hint_covers_what_is_typed():
    at = open_with_model()
    (form,) = [block.proto.form for block in at.get("form") if "patch" in block.proto.form.form_id]
    assert not form.enter_to_submit  # Streamlit's "Press Enter to submit form" sat over the corrupted input's text


def test_removing_all_cross_attention_breaks_reverse_and_shows_the_outputs():
    at = open_with_model()
    at.button(key="knockout_all_cross").click().run()
    assert not at.exception
    assert at.multiselect(key="knockout_heads").value == ["cross:0:0", "cross:0:1", "cross:0:2", "cross:0:3"]
    assert metrics(at)["Exact match without them"] == "0%"
    drop = next(m.proto for m in at.metric if m.label == "Exact match without them")
    assert drop.delta == "-100.0 points" and drop.color == drop.RED  # red, and signed: no arrow saying it again
    assert drop.direction == drop.NONE  # Streamlit's "↓" beside the sign read "↓ -100.0 points"
    outputs = at.dataframe[0].value
    assert list(outputs.columns) == ["input", "expected", "intact", "knocked out"] and len(outputs) == 5
    assert (outputs["intact"] == outputs["expected"]).all() and (outputs["knocked out"] != outputs["expected"]).all()
    # a grid's space is a third of a digit: "5 4 3 3 7" read as one number; an en space stands as wide as a digit
    inputs = outputs["input"].tolist()
    assert all(" " not in text and "\u2002" in text for text in inputs), inputs
    assert all(len(text.split()) >= 2 for text in inputs)  # copied back, any space still separates its symbols


def test_a_chosen_set_scores_as_the_package_does_and_follows_the_removal_kind():
    at = open_with_model()
    at.multiselect(key="knockout_heads").set_value(["enc:0:1", "self:0:3"]).run()
    grid = kept(at, "knockout_grid").value
    removed = [h for h in all_heads(grid_model(at)) if h.label in ("enc:0:1", "self:0:3")]
    want = score(grid_model(at), grid.batch, vocab(at), removed)
    assert kept(at, "knockout_set").value["scores"] == want
    assert metrics(at)["Exact match without them"] == f"{want['exact_match']:.1%}"
    at.radio(key="knockout_ablation").set_value("mean").run()
    assert not at.exception
    grid = kept(at, "knockout_grid").value
    assert grid.ablation == "mean" and grid.means is not None
    assert kept(at, "knockout_set").value["scores"] == score(grid_model(at), grid.batch, vocab(at), removed, grid.means)
    assert at.multiselect(key="knockout_heads").value == ["enc:0:1", "self:0:3"]  # the set stays


def grid_model(at: AppTest) -> Transformer:
    return kept(at, "knockout_grid").model


def vocab(at: AppTest) -> Vocab:
    return at.session_state["in_hand"].vocab


def test_a_model_trained_here_is_scored_on_its_own_held_out_set():
    torch.manual_seed(0)
    model = Transformer(ModelConfig(n_layers=2, n_heads=2)).eval()
    task = DataConfig(task="copy", min_len=2, max_len=4, n_valid=50)
    at = open_with_model(checkpoint=Checkpoint(model, Vocab.digits(10), model.config, task, [], {}), shipped=None)
    grid = kept(at, "knockout_grid").value
    assert grid.n == grid.n_held_out and len(grid.heads) == 12
    assert at.caption[0].value.startswith(f"Scored on all {grid.n} held-out sequences")
    assert len(charts(at)) == 1


def test_a_model_whose_grid_costs_too_much_is_refused_before_any_scoring():
    model = Transformer(ModelConfig(vocab_size=13, d_model=128, n_heads=8, n_layers=3, d_ff=512)).eval()
    task = DataConfig(task="reverse", min_len=1, max_len=24)  # the Train form's largest model and longest inputs
    at = open_with_model(checkpoint=Checkpoint(model, Vocab.digits(10), model.config, task, [], {}), shipped=None)
    assert "would cost the shared server more than a few seconds" in at.warning[0].value
    assert kept(at, "knockout_grid") is None and not charts(at)


def test_without_a_model_the_page_offers_the_shipped_ones():
    at = open_with_model(shipped=None)
    assert "No model in hand yet" in at.info[0].value and kept(at, "knockout_grid") is None
    at.button(key="require_load_reverse").click().run()
    assert not at.exception and kept(at, "knockout_grid").value.n_held_out == 1000


def test_the_logit_lens_shows_each_decoder_layer_guess_at_the_step_shown():
    at = open_with_model("pages/decoding.py", shipped="sort")  # 2 decoder layers
    assert "Logit lens: at which layer does the answer appear?" in [e.label for e in at.expander]
    trace = kept(at, "decoding").value
    lens = charts(at)["Each decoder layer's next-token guess, step 1"]["data"][0]
    z = array(lens["z"])
    assert z.shape[0] == 2  # a row per decoder layer
    step = trace["steps"][0]
    chosen = at.session_state["in_hand"].vocab.itos[step.token]
    columns = lens["customdata"][0]
    assert columns[0][1] == chosen  # the output's most likely token comes first
    assert np.isclose(z[-1, 0], float(step.probs[step.token]), atol=1e-4)  # the last row is the model's own
    at.button(key="decode_next").click().run()
    assert not at.exception and "Each decoder layer's next-token guess, step 2" in charts(at)
    assert set(kept(at, "decoding").value["lens"]) == {0, 1}


def patched(at: AppTest) -> AppTest:
    """Press Patch."""
    at.button(key="patch_run").click().run()
    assert not at.exception
    return at


def test_patching_starts_from_a_held_out_input_with_its_middle_symbol_changed_and_draws_the_head_grid():
    at = open_with_model()
    assert kept(at, "patching_grid") is None  # nothing is patched before the button is pressed
    patched(at)
    grid = kept(at, "patching_grid").value
    checkpoint = load_checkpoint(ROOT / "checkpoints" / "reverse.pt")
    source = TaskData(checkpoint.task, checkpoint.vocab).valid_sources[0]
    clean = " ".join(map(str, source))
    assert at.text_input(key="patch_clean").value == clean
    corrupted = at.text_input(key="patch_corrupted").value.split()
    assert [i for i, (a, b) in enumerate(zip(clean.split(), corrupted)) if a != b] == [len(source) // 2]
    want = patching_grid(checkpoint.model, checkpoint.vocab, checkpoint.task, clean, " ".join(corrupted))
    assert grid.heads["recovered"].tolist() == pytest.approx(want.heads["recovered"].tolist(), abs=1e-5)
    heads = chart(at, "patch_heads_chart")
    cross = [t for t in heads["data"] if t["xaxis"] == "x3" and t["type"] == "heatmap"][0]  # the third: cross
    assert np.allclose(
        array(cross["z"]), want.heads[want.heads["kind"] == "cross"]["recovered"].to_numpy()[None], atol=1e-5
    )
    assert any("Clean answer" in m.value for m in at.markdown)


def test_patching_the_residual_stream_draws_the_encoder_and_the_decoder():
    at = patched(open_with_model())
    at.radio(key="patch_sites").set_value("stream").run()
    assert not at.exception
    grid = kept(at, "patching_grid").value
    spec = chart(at, "patch_stream_chart")
    encoder, decoder = [trace for trace in spec["data"] if trace["type"] == "heatmap"]
    n = len(grid.clean)
    z = array(encoder["z"]).astype(float)
    assert z.shape == (2, n)  # the embeddings and the one encoder layer, at each source position
    assert z[0].tolist() == [1.0 if i == n // 2 else 0.0 for i in range(n)]  # only the changed symbol differs there
    assert array(decoder["z"]).shape == (1, n + 1)


def test_inputs_that_cannot_be_patched_show_an_error_not_a_traceback():
    at = open_with_model()
    at.text_input(key="patch_corrupted").set_value("1 2")
    at.button(key="patch_run").click().run()
    assert not at.exception
    assert "as long as the clean one" in at.error[0].value


def test_the_page_offers_a_link_to_itself_with_the_shipped_model():
    at = open_with_model(shipped="reverse")
    (link,) = at.code  # the sidebar's Copy link
    assert link.value == "?model=reverse" and at.query_params["model"] == "reverse"
