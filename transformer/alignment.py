"""Alignment: how much of a cross-attention head's weight lands where the task says it should (the diagonal for
copy, the anti-diagonal for reverse, the alignment by rank for sort, the word order for translate).

A task's alignment is its own (`Task.source_positions`), defined for each input where each output token comes from
one source token: output token i comes from source position `source_positions(...)[i]`. For sort, equal symbols are
taken in their source order (a stable sort): the first 3 of the output comes from the first 3 of the input. A head
that spreads its weight evenly over equal symbols therefore scores below 1 on them. Tasks whose outputs gather from
many places (add, count, brackets) and tasks from examples have no alignment, and the views say so.
"""

import math
import re
from collections.abc import Sequence
from typing import Any

import torch

from .tasks import get_task

FOUND = 0.9  # an alignment at which a head has found the task's algorithm


def shown_score(score: float) -> float:
    """`score` as every view shows it, to two decimals: rounded down, so that a head short of FOUND never reads as
    having reached it (0.899 shows 0.89, not 0.90)."""
    return math.floor(round(score * 100, 6)) / 100  # round first: 0.29 * 100 is 28.999999999999996


def source_positions(task: str, source: Sequence[int]) -> list[int] | None:
    """For each output token of the task called `task` on `source` (symbol indices), the source position it comes
    from; None when no task by that name has such an alignment, or this source no output (a source of translate that
    is no sentence)."""
    try:
        return get_task(task).source_positions(list(source))
    except ValueError:
        return None


def unaligned_input(task: str, source: Sequence[int]) -> str | None:
    """Why the task called `task`, which has an alignment, has none on `source`: the task's own reason, a source it
    reads no output for (a source of translate that is no sentence, a key of caesar with no letter to shift); None
    when `source` has one, or when the task has no alignment at all (its outputs gather from many places)."""
    try:
        named = get_task(task)
    except ValueError:  # a task from examples
        return None
    try:
        named.source_positions(list(source))
    except ValueError as err:
        return err.args[0]
    return None


def ideal_alignment(task: str, source: Sequence[int], tgt_len: int) -> torch.Tensor | None:
    """The (tgt_len, len(source)) attention a decoder query should pay to the source for `task`, or None when the
    task has no alignment.

    Query row i is the decoder input at position i (BOS, then the target), which predicts output token i; it
    should put all its weight on the source token that output comes from. Rows past the source length (the one
    that predicts EOS) have no ideal key and stay zero.
    """
    positions = source_positions(task, source)
    if not positions:  # no alignment, or no output token to align
        return None
    ideal = torch.zeros(tgt_len, len(source))
    rows = min(tgt_len, len(positions))
    ideal[torch.arange(rows), torch.tensor(positions[:rows], dtype=torch.long)] = 1.0
    return ideal


def _scores(weights: torch.Tensor, ideal: torch.Tensor) -> torch.Tensor:
    """Mean over the scored query rows of the attention mass on the ideal keys: weights (..., T_query, T_key),
    ideal (T_query, T_key) -> (...)."""
    mass = ideal.sum(dim=1)  # (T_query,)
    rows = mass > 0
    if not rows.any():
        raise ValueError("the ideal alignment has no row to score")
    return ((weights * ideal).sum(dim=-1)[..., rows] / mass[rows]).mean(dim=-1)


def head_label(layer: int, head: int) -> str:
    """'L0 H1': a cross-attention head's label (0-based, as the heatmaps), the key of its `head_series` and of files;
    pages name it in words (`figures.alignment.head_name`)."""
    return f"L{layer} H{head}"


def head_of(label: str) -> tuple[int, int] | None:
    """(layer, head) of a `head_label`; None for any other text (a label read from a file may be anything)."""
    match = re.fullmatch(r"L(\d{1,3}) H(\d{1,3})", label)
    return (int(match[1]), int(match[2])) if match else None


def head_labels(n_layers: int, n_heads: int) -> list[str]:
    """'L0 H0', 'L0 H1', ...: one label per cross-attention head, layer by layer."""
    return [head_label(layer, head) for layer in range(n_layers) for head in range(n_heads)]


def head_scores(task: str, source: Sequence[int], cross: Sequence[Any]) -> torch.Tensor | None:
    """Each head's alignment score on one input, as (n_layers, n_heads); None when the task has no alignment.

    `cross` holds the per-layer (H, T_query, T_key) cross-attention of `source`; keys past its length are padding
    (weight 0) and are cut off.
    """
    maps = torch.stack([torch.as_tensor(layer, dtype=torch.float32) for layer in cross])  # (L, H, T_q, T_key)
    ideal = ideal_alignment(task, source, maps.size(2))
    if ideal is None:
        return None
    return _scores(maps[..., : len(source)], ideal)


def alignment_series(task: str, source: Sequence[int], cross: Sequence[Sequence[Any]]) -> dict[str, list[float]]:
    """Per head, its alignment score at each snapshot; {} when the task has no ideal alignment.

    `cross` holds one snapshot per step of the cross-attention of `source`, each as in `head_scores` (no layers
    for a model without attention).
    """
    if not cross or not cross[0]:
        return {}
    scores = [head_scores(task, source, layers) for layers in cross]
    return {} if scores[0] is None else head_series(scores)


def head_series(scores: Sequence[torch.Tensor]) -> dict[str, list[float]]:
    """Per head label, its score at each snapshot, from each snapshot's (n_layers, n_heads) `head_scores`."""
    table = torch.stack([s.flatten() for s in scores]).T.tolist()  # (heads, snapshots)
    return dict(zip(head_labels(*scores[0].shape), table))


def best_head(series: dict[str, list[float]]) -> list[tuple[str, float]]:
    """At each snapshot, the best-aligned head and its score."""
    return [max(zip(series, scores), key=lambda pair: pair[1]) for scores in zip(*series.values())]


def found_at(steps: Sequence[int], best: Sequence[float], threshold: float = FOUND) -> int | None:
    """The first step at which the best head's score reaches `threshold`; None if it never does."""
    return next((step for step, score in zip(steps, best) if score >= threshold), None)
