"""The length test: unseen inputs of each length, scored by greedy decoding; what the scores say; their figures."""

import random
from pathlib import Path

import pandas as pd
import pytest
import torch

import transformer.lengths as lengths
from transformer import DataConfig, ModelConfig, TaskData, Transformer, Vocab, load_checkpoint
from transformer.figures.lengths import length_accuracy_figure, output_length_figure
from transformer.i18n import translator
from transformer.lengths import score_lengths, summary, unseen_sources, untested
from transformer.pairs import HELD_OUT_EVERY, SPLIT_SEED, TaskPairs, pairs_from_rows

SHIPPED = Path(__file__).resolve().parent.parent / "checkpoints"
TASK = DataConfig("reverse", min_len=3, max_len=5, n_valid=60)


def test_unseen_sources_are_held_out_inside_the_trained_lengths_and_random_outside():
    data = TaskData(TASK)
    inside = unseen_sources(data, 4, 100, seed=0)
    assert inside and all(len(s) == 4 for s in inside)
    assert set(map(tuple, inside)) <= set(map(tuple, data.valid_sources))  # never drawn by training
    outside = unseen_sources(data, 7, 30, seed=0)
    assert len(outside) == 30 and all(len(s) == 7 and all(0 <= x < 10 for x in s) for s in outside)
    assert outside == unseen_sources(data, 7, 30, seed=0) != unseen_sources(data, 7, 30, seed=1)
    assert len(unseen_sources(data, 4, 5, seed=0)) == 5


def test_a_gallery_task_is_tested_on_its_own_sources_and_a_task_from_examples_on_its_pairs_only():
    data = TaskData(DataConfig("add", min_len=3, max_len=5, n_valid=60))
    longer = unseen_sources(data, 9, 20, seed=0)
    assert len(longer) == 20 and all(data.task.target(s, 10) for s in longer)  # each an addition
    assert unseen_sources(TaskData(DataConfig("count", 1, 5, 3)), 12, 20, seed=0) == []  # counts stay one digit
    rows = [(f"row {i}", f"{a} {b}", b) for i, (a, b) in enumerate(zip("abcdef", "fedcba"), 1)]
    pairs = TaskData(DataConfig.from_pairs(pairs_from_rows(rows, "mine")))
    assert unseen_sources(pairs, 2, 10, seed=0) == pairs.valid_sources
    assert unseen_sources(pairs, 1, 10, seed=0) == unseen_sources(pairs, 3, 10, seed=0) == []


def test_lengths_whose_outputs_the_model_cannot_hold_are_left_out():
    task = DataConfig("repeat", min_len=1, max_len=3, n_symbols=4, n_valid=20)
    vocab = Vocab(TaskData(task).task.symbols(4))
    model = Transformer(ModelConfig(vocab_size=len(vocab), d_model=8, n_heads=1, d_ff=8, max_len=9)).eval()
    report = score_lengths(model, vocab, task, range(1, 9), n=3)
    assert report.scores["length"].tolist() == [1, 2, 3, 4]  # 2 x 4 output symbols fit 8 positions, 2 x 5 do not


def fake_decoder(outputs_for: dict[int, list[list[int]]]):
    """A stand-in for greedy_decode that answers each batch of inputs of length L with outputs_for[L] (token ids)."""

    def decode(model, src, bos_id, eos_id, max_len):
        rows = outputs_for[src.size(1)][: src.size(0)]
        width = max(map(len, rows))
        return torch.tensor([row + [Vocab.pad_id] * (width - len(row)) for row in rows])

    return decode


def test_scores_count_exact_outputs_symbols_in_place_and_output_length(monkeypatch: pytest.MonkeyPatch):
    vocab, model = Vocab.digits(), Transformer(ModelConfig())
    data = TaskData(TASK)
    sources = unseen_sources(data, 6, 5, seed=0)
    want = [[vocab.symbol_id(s) for s in reversed(source)] for source in sources]  # 6 symbols each
    eos = vocab.eos_id
    outputs = [
        want[0] + [eos],  # right
        [vocab.symbol_id((vocab.symbol_index(want[1][0]) + 1) % 10)] + want[1][1:] + [eos],  # first symbol wrong
        want[2][:4] + [eos],  # stops two symbols early
        want[3] + want[3][:3],  # never writes EOS: 9 symbols
        want[4][:3] + [vocab.pad_id] + want[4][4:] + [eos],  # a PAD for one symbol: wrong, and shown
    ]
    monkeypatch.setattr(lengths, "greedy_decode", fake_decoder({6: outputs}))
    report = score_lengths(model, vocab, TASK, [6], n=5)
    row = report.scores.iloc[0]
    assert (row["length"], bool(row["trained"]), row["n"]) == (6, False, 5)
    assert row["exact_match"] == pytest.approx(1 / 5)
    assert row["symbols_right"] == pytest.approx((6 + 5 + 4 + 6 + 5) / 30)
    assert row["output_len"] == pytest.approx((6 + 6 + 4 + 9 + 5) / 5)
    assert row["target_len"] == 6
    assert report.mistakes["length"].tolist() == [6, 6, 6, 6]
    assert report.mistakes["output"].tolist()[:3] == [vocab.decode(o) for o in outputs[1:4]]
    assert report.mistakes["output"].tolist()[3] == " ".join(vocab.tokens(outputs[4][:-1]))  # the PAD shows
    assert report.mistakes["expected"].tolist() == [vocab.decode(w) for w in want[1:]]


def test_a_wrong_input_drawn_again_is_shown_once(monkeypatch: pytest.MonkeyPatch):
    vocab = Vocab.digits()
    drawn = [[1, 2, 3, 4, 5, 6]] * 3 + [[6, 5, 4, 3, 2, 1]] * 2  # a short length has few inputs to draw
    monkeypatch.setattr(lengths, "unseen_sources", lambda data, length, n, seed: drawn[:n])
    monkeypatch.setattr(lengths, "greedy_decode", fake_decoder({6: [[vocab.eos_id]] * 5}))  # every output wrong
    report = score_lengths(Transformer(ModelConfig()), vocab, TASK, [6], n=5)
    assert report.scores["exact_match"].tolist() == [0.0]
    assert report.mistakes["input"].tolist() == ["1 2 3 4 5 6", "6 5 4 3 2 1"]


def test_a_model_that_solved_reverse_fails_past_its_longest_training_input():
    shipped = load_checkpoint(SHIPPED / "reverse.pt")  # trained on lengths 1-10
    report = score_lengths(shipped.model, shipped.vocab, shipped.task, [9, 10, 11, 14], n=50)
    scores = report.scores.set_index("length")
    assert scores["trained"].tolist() == [True, True, False, False]
    assert scores.loc[[9, 10], "exact_match"].tolist() == [1.0, 1.0]
    assert scores.loc[[11, 14], "exact_match"].max() < 0.5
    assert scores.loc[14, "output_len"] < 13  # it stops near the lengths it saw
    assert set(report.mistakes["length"]) == {11, 14} and len(report.mistakes) == 10  # 5 shown per length


@pytest.mark.parametrize(
    "lengths_, n, message",
    [
        ([], 10, "at least one length"),
        ([0], 10, "from 1 to 63"),
        ([64], 10, "from 1 to 63"),
        ([True], 10, "whole numbers"),
        ([2.5], 10, "whole numbers"),
        ([3], 0, "n must be"),
        ([3], 1001, "n must be"),
    ],
)
def test_bad_settings_are_refused(lengths_, n, message):
    with pytest.raises(ValueError, match=message):
        score_lengths(Transformer(ModelConfig()), Vocab.digits(), TASK, lengths_, n)


def scores_frame(exact: dict[int, float], output_len: dict[int, float] | None = None) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "length": k,
                "trained": TASK.min_len <= k <= TASK.max_len,
                "n": 10,
                "exact_match": v,
                "symbols_right": v,
                "output_len": (output_len or {}).get(k, k),
                "target_len": k,
            }
            for k, v in exact.items()
        ]
    )


def test_summary_reads_the_trained_shorter_and_longer_lengths():
    lines = summary(
        scores_frame({1: 0.5, 2: 0.25, 3: 1.0, 4: 0.9, 5: 1.0, 6: 0.4, 7: 0.0, 8: 0.0}, {6: 5.0, 7: 5.5, 8: 5.25}), TASK
    )
    assert lines == [
        "At lengths it trained on (3-5): exact match 90% to 100%.",
        "Shorter than any it trained on (1-2): exact match 25% to 50%.",
        "Longer than any it trained on: exact match 40% at length 6, 0% from length 7 on. Its outputs there "
        "average 5.0 to 5.5 symbols, against 6 to 8 expected.",
    ]
    varied = scores_frame({9: 1.0, 10: 1.0}, {9: 4.79, 10: 5.71})  # dedup's: outputs of varied lengths
    varied["target_len"] = varied["output_len"]  # every output the length expected
    assert summary(varied, TASK)[0].endswith("average 4.8 to 5.7 symbols, against 4.8 to 5.7 expected.")
    longer = "Longer than any it trained on: exact match "
    assert summary(scores_frame({6: 0.3}), TASK)[0].startswith(longer + "30% at length 6. ")
    assert summary(scores_frame({6: 0.0, 7: 0.2}), TASK)[0].startswith(longer + "0% at length 6, 20% at length 7. ")
    falling = scores_frame({6: 0.94, 7: 0.7, 8: 0.41})  # never 0%: where the test ends says how far it fell
    assert summary(falling, TASK)[0].startswith(longer + "94% at length 6, 41% at length 8. ")
    assert summary(scores_frame({6: 0.0, 7: 0.0}), TASK)[0].startswith(longer + "0% from length 6 on. ")


def test_a_share_reads_to_a_tenth_where_a_whole_percent_would_round_it():
    assert (
        summary(scores_frame({3: 0.125, 4: 0.9996}), TASK)[0]
        == "At lengths it trained on (3-4): exact match 12.5% to 99.9%."
    )


def test_the_lengths_a_test_leaves_out_are_named_with_why():
    rows = [(f"row {i}", f"{a} {b}", b) for i, (a, b) in enumerate(zip("abcdef", "fedcba"), 1)]
    pairs = DataConfig.from_pairs(pairs_from_rows(rows, "mine"))  # every source 2 symbols long
    assert untested(scores_frame({2: 1.0}), range(1, 5), pairs) == [
        "This task's pairs have inputs of 2 symbols: lengths 1, 3 and 4 have none, so the test leaves them out."
    ]
    assert untested(scores_frame({2: 1.0}), range(2, 4), pairs) == [
        "This task's pairs have inputs of 2 symbols: length 3 has none, so the test leaves it out."
    ]
    [one] = untested(scores_frame({3: 1.0, 5: 1.0}), range(3, 6), TASK)
    assert one.startswith("The test leaves out length 4:")
    [two] = untested(scores_frame({3: 1.0}), range(3, 6), TASK)
    assert two.startswith("The test leaves out lengths 4 and 5:")
    assert untested(scores_frame({3: 1.0, 4: 1.0}), range(3, 5), TASK) == []


def reversed_pairs(lengths: list[int]) -> list[tuple[str, str, str]]:
    """Rows of distinct reversed pairs, the i-th of lengths[i] symbols (its first two spell i)."""
    rows = []
    for i, length in enumerate(lengths):
        source = [str(i // 10), str(i % 10)] + ["x"] * (length - 2)
        rows.append((f"line {i + 1}", " ".join(source), " ".join(reversed(source))))
    return rows


def test_a_length_only_training_pairs_have_is_a_trained_length_the_held_out_set_cannot_test():
    # 60 pairs of 3-6 symbols, arranged so that the fixed split holds out none of the 11 of length 6
    held = sorted(random.Random(SPLIT_SEED).sample(range(60), 60 // HELD_OUT_EVERY))
    held_lengths, train_lengths = iter([3] * 6 + [4] * 3 + [5] * 3), iter([6] * 11 + [3, 4, 5] * 12 + [3])
    rows = reversed_pairs([next(held_lengths) if i in held else next(train_lengths) for i in range(60)])
    pairs = pairs_from_rows(rows, "reversed.csv")
    held_out = sorted(len(source.split()) for source, _ in pairs.held_out)
    assert held_out == [3] * 6 + [4] * 3 + [5] * 3 and sum(len(s.split()) == 6 for s, _ in pairs.train) == 11
    task = DataConfig.from_pairs(pairs)
    vocab = TaskData(task).vocab
    model = Transformer(ModelConfig(vocab_size=len(vocab), d_model=8, n_heads=1, d_ff=8, max_len=8)).eval()
    scores = score_lengths(model, vocab, task, range(3, 7), n=10).scores
    assert scores["length"].tolist() == [3, 4, 5] and scores["trained"].all()  # no held-out pair of length 6
    assert untested(scores, range(3, 7), task) == [
        "Length 6 has no pair in the held-out set, so the test cannot score it: the model trained on every pair of "
        "that length."
    ]
    assert untested(scores, range(3, 7), task, translator("zh-CN")) == [
        "留出集里没有长度为 6 的序列对，所以无法测试这样的长度：模型训练过所有这样长的序列对。"
    ]
    [absent, unheld] = untested(scores, range(3, 8), task)  # 7: no pair at all; 6: training pairs only
    assert absent.startswith("This task's pairs have inputs of 3 to 6 symbols: length 7 has none")
    assert unheld.startswith("Length 6 has no pair in the held-out set")
    assert summary(scores, task, range(3, 7))[0].startswith("At lengths it trained on (3-6): exact match ")
    assert len(summary(scores, task, range(3, 7))) == 1  # nothing shorter or longer was tested


def test_the_lengths_a_task_from_examples_trained_on_are_its_training_pairs_lengths():
    symbols = tuple("abcdefg")
    train = (("a b", "b a"), ("c d", "d c"), ("e f", "f e"), ("a b c", "c b a"), ("d e f g", "g f e d"))
    held_out = (("b c", "c b"), ("a b c d e", "e d c b a"))  # length 5 only held out; no held-out pair of 3 or 4
    task = DataConfig.from_pairs(TaskPairs("mine", symbols, train, held_out))
    assert (task.min_len, task.max_len, task.pairs.train_lengths) == (2, 5, (2, 3, 4))
    vocab = TaskData(task).vocab
    model = Transformer(ModelConfig(vocab_size=len(vocab), d_model=8, n_heads=1, d_ff=8, max_len=8)).eval()
    scores = score_lengths(model, vocab, task, range(2, 6), n=10).scores
    assert scores["length"].tolist() == [2, 5] and scores["trained"].tolist() == [True, False]
    lines = summary(scores, task, range(2, 6))
    assert lines[0].startswith("At lengths it trained on (2-4): exact match ")
    assert lines[1].startswith("Longer than any it trained on: exact match ")  # a held-out pair past them all
    assert untested(scores, range(2, 6), task) == [
        "Lengths 3 and 4 have no pair in the held-out set, so the test cannot score them: the model trained on every "
        "pair of those lengths."
    ]
    [zh] = untested(scores, range(2, 6), task, translator("zh-CN"))
    assert zh.startswith("留出集里没有长度为 3 和 4 的序列对")


def test_figures_shade_the_trained_lengths_and_plot_the_scores():
    scores = scores_frame({2: 0.5, 3: 1.0, 4: 1.0, 5: 1.0, 6: 0.25})
    accuracy = length_accuracy_figure(scores)
    bars, line = accuracy.data
    assert list(bars.x) == [2, 3, 4, 5, 6] and list(bars.y) == [50, 100, 100, 100, 25]
    (shade,) = accuracy.layout.shapes
    assert (shade.x0, shade.x1) == (2.5, 5.5)
    output, expected = output_length_figure(scores).data  # the dashed expected length over the output's line
    assert list(expected.y) == [2, 3, 4, 5, 6] and expected.name == "expected"
    assert output_length_figure(scores).layout.yaxis.range[1] > max(*expected.y, *output.y)  # room for the label
    assert output_length_figure(scores_frame({7: 0.0})).layout.shapes == ()  # no trained length tested: no shade


@pytest.mark.parametrize(
    "lengths, step", [(range(1, 13), 1), (range(1, 22), 2), (range(3, 27), 2), (range(1, 26), None)]
)
def test_the_length_axis_labels_every_length_only_while_they_fit(lengths, step):
    scores = scores_frame(dict.fromkeys(lengths, 1.0))
    assert length_accuracy_figure(scores).layout.xaxis.dtick == step == output_length_figure(scores).layout.xaxis.dtick


def test_the_lengths_offered_are_those_the_task_has_inputs_of_within_the_model_s_reach():
    model = ModelConfig(max_len=20)  # positions up to 19: inputs up to 19 symbols
    assert lengths.testable_lengths(DataConfig("translate", 3, 7, 10), model) == range(3, 8)  # sentences of 3-7 words
    assert lengths.testable_lengths(DataConfig("repeat", 1, 8, 10), model) == range(1, 20)
    assert lengths.testable_lengths(DataConfig("reverse", 6, 8), ModelConfig(max_len=9)) == range(1, 9)
