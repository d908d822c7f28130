"""Alignment scores: how much of a head's attention lands where the task says it should."""

import pytest
import torch

from transformer.alignment import (
    alignment_series,
    best_head,
    found_at,
    head_scores,
    ideal_alignment,
    source_positions,
    unaligned_input,
)
from transformer.gallery import SOURCE_WORDS, TARGET_WORDS
from transformer.tasks import TASKS, DataConfig, TaskData

TRANSLATION = {s: t for kind in SOURCE_WORDS for s, t in zip(SOURCE_WORDS[kind], TARGET_WORDS[kind])}


def one_head_score(task: str, source: list[int], weights: torch.Tensor) -> float:
    """`head_scores` of a model with one layer of one head whose cross-attention is `weights` (T_query, T_key)."""
    return head_scores(task, source, [weights[None]]).item()


def test_a_perfect_diagonal_scores_one_on_copy():
    weights = torch.full((6, 5), 1 / 5)  # 5 source tokens; BOS + 5 target tokens query them
    weights[:5] = torch.eye(5)  # the EOS row (last) has no ideal key, so what it does is not scored
    assert one_head_score("copy", [4, 0, 2, 2, 9], weights) == pytest.approx(1.0)


def test_the_anti_diagonal_is_perfect_for_reverse_and_the_diagonal_is_not():
    anti = torch.zeros(5, 4)
    anti[:4] = torch.eye(4).flip(1)
    assert one_head_score("reverse", [1, 2, 3, 4], anti) == pytest.approx(1.0)
    diagonal = torch.zeros(5, 4)
    diagonal[:4] = torch.eye(4)
    assert one_head_score("reverse", [1, 2, 3, 4], diagonal) == pytest.approx(0.0)


@pytest.mark.parametrize("task", ["copy", "reverse", "swap_pairs", "sort", "increment"])
def test_every_ideal_scores_one_and_uniform_attention_one_over_the_source_length(task):
    source = [3, 1, 4, 1, 5, 9, 2, 6]
    ideal = ideal_alignment(task, source, 9)
    assert one_head_score(task, source, ideal) == pytest.approx(1.0)
    assert one_head_score(task, source, torch.full((9, 8), 1 / 8)) == pytest.approx(1 / 8)


def test_ideal_alignments_have_one_key_per_output_token():
    reverse = ideal_alignment("reverse", [0, 0, 0], 4)
    assert reverse.shape == (4, 3)
    assert reverse.tolist() == [[0, 0, 1], [0, 1, 0], [1, 0, 0], [0, 0, 0]]
    swap = ideal_alignment("swap_pairs", [0] * 5, 6)
    assert swap.argmax(dim=1)[:5].tolist() == [1, 0, 3, 2, 4]  # the odd last symbol stays


def test_sort_aligns_by_rank_and_takes_equal_symbols_in_source_order():
    source = [3, 1, 3, 0, 1]
    positions = source_positions("sort", source)
    assert positions == [3, 1, 4, 0, 2]  # 0, then the first 1, the second 1, the first 3, the second 3
    assert [source[p] for p in positions] == TASKS["sort"].fn(source, 10)


@pytest.mark.parametrize("task", ["copy", "reverse", "swap_pairs", "sort", "increment"])
def test_each_output_token_comes_from_its_source_position(task):
    source = [7, 2, 9, 2, 0, 5, 2]
    target = TASKS[task].fn(list(source), 10)
    expected = [(s + 1) % 10 for s in source] if task == "increment" else source
    assert [expected[p] for p in source_positions(task, source)] == target


def test_a_task_without_an_alignment_has_no_ideal_and_no_scores():
    assert source_positions("no such task", [1, 2]) is None
    assert ideal_alignment("no such task", [1, 2], 3) is None
    assert alignment_series("no such task", [1, 2], [[torch.full((1, 3, 2), 0.5)]]) == {}


def test_a_source_with_no_output_to_align_has_no_scores_and_says_why():
    assert head_scores("copy", [], [torch.ones(1, 3, 4)]) is None  # no output token to align
    assert head_scores("caesar", [3], [torch.ones(1, 3, 1)]) is None  # a key with no letter to shift
    assert unaligned_input("caesar", [3]).startswith("caesar reads a key letter")
    assert unaligned_input("translate", [0]).startswith("translate reads sentences")  # a verb alone
    assert unaligned_input("caesar", [3, 1]) is None  # aligned
    assert unaligned_input("count", [0, 1]) is None and unaligned_input("no such task", [1]) is None  # no alignment


def test_head_scores_leave_out_padded_keys_and_score_each_head():
    source = [5, 6, 7]
    head0 = torch.zeros(4, 5)  # 3 real keys and 2 padding keys (weight 0); BOS + 3 targets + the EOS row
    head0[:3, :3] = torch.eye(3).flip(1)
    head1 = torch.zeros(4, 5)
    head1[:, :3] = 1 / 3
    scores = head_scores("reverse", source, [torch.stack([head0, head1])])
    assert scores.shape == (1, 2)
    assert scores[0].tolist() == pytest.approx([1.0, 1 / 3])


def test_the_series_follows_each_head_and_the_best_head_passes_the_threshold_at_its_step():
    source = [1, 2, 3, 4]
    uniform = torch.full((2, 5, 4), 1 / 4)  # two heads
    learned = uniform.clone()
    learned[1, :4] = torch.eye(4).flip(1)  # head 1 finds the anti-diagonal
    series = alignment_series("reverse", source, [[uniform], [uniform], [learned]])
    assert list(series) == ["L0 H0", "L0 H1"]
    assert series["L0 H1"] == pytest.approx([0.25, 0.25, 1.0])
    best = best_head(series)
    assert [label for label, _ in best][-1] == "L0 H1"
    assert found_at([0, 25, 50], [score for _, score in best]) == 50
    assert found_at([0, 25], [0.25, 0.89]) is None


@pytest.mark.parametrize("task", ["translate", "dedup", "caesar", "repeat"])
def test_each_gallery_output_token_comes_from_its_source_position(task):
    config = DataConfig(task=task, min_len=3, max_len=7, n_symbols=6)
    data = TaskData(config)
    symbols, n = data.vocab.symbols, config.n_symbols
    same = {"translate": lambda s, t: TRANSLATION[s] == t, "dedup": str.__eq__, "repeat": str.__eq__}
    for source in data.valid_sources[:100]:
        target = [symbols[i] for i in data.task.target(source, n)]
        positions = source_positions(task, source)
        assert len(positions) == len(target)
        for position, out in zip(positions, target):
            if task == "caesar":  # shifted by the key, at 0
                assert (source[position] + source[0]) % n == symbols.index(out)
            else:
                assert same[task](symbols[source[position]], out)
        ideal = ideal_alignment(task, source, len(target) + 1)
        assert one_head_score(task, source, ideal) == pytest.approx(1.0)


@pytest.mark.parametrize("task", ["add", "count", "brackets", "pairs"])
def test_tasks_whose_outputs_gather_from_many_places_have_no_alignment(task):
    assert source_positions(task, [1, 2, 3]) is None and ideal_alignment(task, [1, 2, 3], 4) is None


def test_a_source_of_translate_that_is_no_sentence_has_no_alignment():
    assert source_positions("translate", [0, 0, 0]) is None  # three verbs
