"""A chart's text alternative: its title, then each curve's last value and its way from its first, bars' highest and
lowest, a heatmap's size, range and highest cell, points' labels, a diagram's labels; in the translator's language."""

import numpy as np
import plotly.graph_objects as go
import torch

from tests.helpers.figures import TOKENS, beam_steps
from transformer.figures.architecture import architecture_diagram
from transformer.figures.attention import attention_heatmaps, mask_heatmap
from transformer.figures.decoding import beam_tree, probs_bar
from transformer.figures.summary import describe
from transformer.figures.training import accuracy_figure, loss_figure
from transformer.i18n import translator

ROWS = [
    {"step": 100, "train_loss": 2.0, "val_loss": 2.2, "token_acc": 0.1, "exact_match": 0.0},
    {"step": 200, "train_loss": 0.5, "val_loss": 0.6, "token_acc": 0.8, "exact_match": 0.5},
    {"step": 300, "train_loss": 0.1, "val_loss": 0.2, "token_acc": 1.0, "exact_match": 0.5},
]


def test_a_curve_says_its_last_value_where_and_which_way_it_went():
    assert describe(loss_figure(ROWS)) == (
        "Loss. training loss: 0.1 at training step 300, down from 2. "
        "held-out loss: 0.2 at training step 300, down from 2.2."
    )
    assert describe(accuracy_figure(ROWS)) == (
        "Accuracy. token accuracy: 100% at training step 300, up from 10%. "
        "exact match (whole sequence): 50% at training step 300, up from 0%."
    )
    flat = [{**row, "exact_match": 0.5} for row in ROWS]
    assert "exact match (whole sequence): 50% at training step 300, as at the start." in describe(accuracy_figure(flat))
    assert describe(loss_figure(ROWS[:1])).startswith("Loss. training loss: 2 at training step 100.")
    assert describe(loss_figure([])) == "Loss. training loss: no data yet. held-out loss: no data yet."


def test_a_curve_with_gaps_reads_its_first_and_last_values_shown():
    fig = go.Figure(go.Scatter(x=[1, 2, None, 3, 4], y=[None, 5.0, None, 4.0, np.nan], name="a"), {"title": "T"})
    assert describe(fig) == "T. a: 4 at x 3, down from 5."


def test_bars_say_their_highest_and_lowest_and_a_heatmap_its_size_range_and_highest_cell():
    probs = torch.tensor([0.0, 0.0, 0.1, 0.4, 0.05, 0.3, 0.15])
    assert describe(probs_bar(probs, TOKENS, chosen=5, top_k=3)) == (
        "Next-token probabilities. probability: highest a (0.4), lowest d (0.15)."
    )
    mask = describe(mask_heatmap(np.tril(np.ones((3, 3), dtype=bool)), ["x", "y", "z"], ["p", "q", "r"], "Causal"))
    assert mask.startswith("Causal. ") and "3 by 3 cells, from 0 to 1; highest at x, p." in mask


def test_a_heatmap_whose_axis_labels_only_every_few_keys_names_its_highest_cell_by_its_own_labels():
    """On a phone the key axis is labelled every few keys: Train's cross-attention read "highest at BOS, ."."""
    keys = [f"k{i}" for i in range(40)]
    weights = np.zeros((2, 3, 40))
    weights[:, 1, 7] = 1.0
    fig = attention_heatmaps(weights, ["BOS", "a", "b"], keys, "Cross", fit_px=356)
    assert "" in fig.layout.xaxis.ticktext  # the crowded axis leaves key 7 unlabelled
    assert "3 by 40 cells, from 0 to 1; highest at a, k7." in describe(fig)


def test_points_name_their_labels_and_a_diagram_without_data_its_labels():
    tree = describe(beam_tree(beam_steps(), TOKENS, best=[1, 3, 5, 2]))
    eos = TOKENS[2]
    assert f"finished (EOS) (3 points): {eos} -2.0, {eos} -0.4, {eos} -1.5." in tree
    assert f"{TOKENS[4]} -1.0" in tree and "&" not in tree  # a token as plain text, never HTML
    diagram = describe(architecture_diagram(2, False, True, "sinusoidal", True))
    assert diagram.startswith("Diagram. Labels: 2×, Embedding") and ", Softmax, Decoder, source tokens, " in diagram


def test_in_chinese_every_sentence_is_chinese_and_ends_with_a_chinese_full_stop():
    zh = translator("zh-CN")
    text = describe(loss_figure(ROWS, tr=zh), zh)
    assert (
        text == "损失。训练损失：从 2 降到 0.1（训练步数为 300 时）。留出集损失：从 2.2 降到 0.2（训练步数为 300 时）。"
    )
