"""The algorithm in the attention on Decoding and Train, through AppTest: the ideal outlined over the learned
cross-attention, each head's score, and the best head's score over a run."""

import numpy as np
import plotly.graph_objects as go
import pytest
import torch
from streamlit.testing.v1 import AppTest

from tests.helpers import array
from tests.helpers.apptest import chart, kept, open_train, open_with_model, poll_until_done, start
from tests.helpers.figures import key_label_clashes, title_overflow
from transformer.alignment import FOUND, alignment_series, best_head, head_of, head_scores, shown_score
from transformer.figures import COLUMN_PX
from transformer.serving import Run

pytestmark = pytest.mark.usefixtures("restore_threads", "fresh_registry")  # tests/pages/conftest.py


def test_decoding_outlines_the_anti_diagonal_over_every_step_and_scores_each_head():
    at = open_with_model("pages/decoding.py")
    steps = kept(at, "decoding").value["steps"]
    source = at.text_input(key="decode_input").value.split()
    n = len(source)
    spec = chart(at, "decode_alignment")
    heatmaps = [t for t in spec["data"] if t["type"] == "heatmap"]
    marks = [t for t in spec["data"] if t["type"] == "scatter"]
    weights = torch.stack([s.cross_attention[0] for s in steps], dim=1)  # (H, steps, S)
    assert len(heatmaps) == len(marks) == weights.size(0)
    for h, trace in enumerate(heatmaps):
        assert np.allclose(array(trace["z"]).astype(float), weights[h].numpy())
    assert array(marks[0]["y"]).tolist() == list(range(n))  # the EOS step has no ideal source token
    assert array(marks[0]["x"]).tolist() == list(range(n))[::-1]
    scores = head_scores("reverse", [int(s) for s in source], [weights])[0]
    titles = [a["text"] for a in spec["layout"]["annotations"]]
    assert titles == [f"head {h}<br>{shown_score(s):.2f}" for h, s in enumerate(scores.tolist())]


def trained(**values) -> tuple[AppTest, Run]:
    """The Train page after a run of these form values (by widget key, without "train_") has finished, and the run."""
    at = open_train()
    start(at, **values)
    poll_until_done(at)
    return at, at.session_state["run"]


@pytest.mark.timeout(300)
def test_train_draws_the_best_heads_score_at_every_snapshot_and_the_newest_heads():
    at, job = trained(task="reverse", min_len=5, max_len=5, steps=100)
    data = job.data()
    source = data.valid_sources[0]
    best = best_head(alignment_series("reverse", source, [s["maps"]["cross"] for s in job.attention]))
    line = chart(at, "train_alignment_chart")["data"][0]
    assert array(line["x"]).tolist() == [s["step"] for s in job.attention]
    assert np.allclose(array(line["y"]).astype(float), [score for _, score in best], atol=1e-6)
    heads = chart(at, "train_alignment_heads")
    assert f"step {job.attention[-1]['step']}" in heads["layout"]["title"]["text"]
    caption = f"No head reached {FOUND:g} in this run" if max(s for _, s in best) < FOUND else "found the algorithm at"
    assert any(caption in c.value for c in at.caption)
    assert not any("yet" in c.value for c in at.caption)  # the run has ended: nothing is still to come
    layer, head = head_of(best[-1][0])
    assert any(f"layer {layer}, head {head}" in c.value for c in at.caption)  # as the heatmaps name heads
    assert array(line["customdata"]).tolist()[-1] == [f"layer {layer}, head {head}", f"{shown_score(best[-1][1]):.2f}"]


@pytest.mark.timeout(300)
def test_train_s_alignment_charts_fit_their_half_page_column_on_a_laptop_at_150_percent():
    """A run on inputs of 12: the heads chart, in a column half a page wide (241 px on a 1280 px laptop at 150% zoom,
    narrower than a phone's page), keeps every source token's label clear of its neighbours and of the next panel
    (Chromium draws a digit 8 px wide), and both charts' titles fit the column (they ran past both its edges)."""
    at = open_train()
    start(at, task="reverse", min_len=12, max_len=12, steps=40)
    poll_until_done(at)
    heads = chart(at, "train_alignment_heads")
    assert len(heads["layout"]["xaxis"]["tickvals"]) == 12
    assert not key_label_clashes(heads, COLUMN_PX, lambda text: 8.0 * len(text))
    for key in ("train_alignment_chart", "train_alignment_heads"):
        assert not title_overflow(go.Figure(chart(at, key)), COLUMN_PX), key


def test_a_one_symbol_probe_has_no_alignment_to_find():
    at = open_train()
    start(at, task="copy", min_len=1, max_len=1, steps=20)
    poll_until_done(at)
    assert any("has one symbol" in info.value for info in at.info)
    assert not [c for c in at.get("plotly_chart") if c.proto.id.endswith("train_alignment_chart")]


@pytest.mark.timeout(300)
def test_a_task_with_no_alignment_shows_its_newest_cross_attention_with_nothing_outlined():
    at, job = trained(task="count", min_len=3, max_len=5, steps=30)
    assert any("There is no alignment for this task" in info.value for info in at.info)
    spec = chart(at, "train_spread_attention")
    heatmaps = [t for t in spec["data"] if t["type"] == "heatmap"]
    assert len(heatmaps) == job.model_config.n_heads and not [t for t in spec["data"] if t["type"] == "scatter"]
    newest = job.attention[-1]["maps"]["cross"][-1]  # the last layer's, (H, T, S) with the probe's padding
    rows, cols = array(heatmaps[0]["z"]).shape
    assert np.allclose(array(heatmaps[0]["z"]).astype(float), newest[0, :rows, :cols].numpy())
    assert f"step {job.attention[-1]['step']}" in spec["layout"]["title"]["text"]
    assert any("an output token need not come from one source position" in c.value for c in at.caption)
