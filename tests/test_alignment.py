"""Alignment scores: how much of a head's attention lands where the task says it should."""

import pytest
import torch

from transformer.alignment import alignment_score, ideal_alignment


def test_a_perfect_diagonal_scores_one_on_copy():
    ideal = ideal_alignment("copy", 5, 6)  # 5 source tokens; BOS + 5 target tokens query them
    weights = torch.full((6, 5), 1 / 5)  # the EOS row (last) has no ideal key, so what it does is not scored
    weights[:5] = torch.eye(5)
    assert alignment_score(weights, ideal) == pytest.approx(1.0)


def test_the_anti_diagonal_is_perfect_for_reverse_and_the_diagonal_is_not():
    ideal = ideal_alignment("reverse", 4, 5)
    anti = torch.zeros(5, 4)
    anti[:4] = torch.eye(4).flip(1)
    assert alignment_score(anti, ideal) == pytest.approx(1.0)
    diagonal = torch.zeros(5, 4)
    diagonal[:4] = torch.eye(4)
    assert alignment_score(diagonal, ideal) == pytest.approx(0.0)


@pytest.mark.parametrize("task", ["copy", "reverse", "swap_pairs"])
def test_uniform_attention_scores_one_over_the_source_length(task):
    assert alignment_score(torch.full((9, 8), 1 / 8), ideal_alignment(task, 8, 9)) == pytest.approx(1 / 8)


def test_ideal_alignments_have_one_key_per_output_token():
    reverse = ideal_alignment("reverse", 3, 4)
    assert reverse.shape == (4, 3)
    assert reverse.tolist() == [[0, 0, 1], [0, 1, 0], [1, 0, 0], [0, 0, 0]]
    swap = ideal_alignment("swap_pairs", 5, 6)
    assert swap.argmax(dim=1)[:5].tolist() == [1, 0, 3, 2, 4]  # the odd last symbol stays
    assert ideal_alignment("sort", 5, 6) is None  # where a symbol goes depends on the others


def test_alignment_score_refuses_mismatched_or_unscorable_inputs():
    with pytest.raises(ValueError):
        alignment_score(torch.ones(3, 4), torch.ones(4, 3))
    with pytest.raises(ValueError):
        alignment_score(torch.ones(3, 4), torch.zeros(3, 4))
