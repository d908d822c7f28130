"""Alignment: how much of a cross-attention head's weight lands where the task says it should (the diagonal for
copy, the anti-diagonal for reverse).
"""

from collections.abc import Callable, Sequence
from typing import Any

import torch

ALIGNMENTS: dict[str, Callable[[int, int], int]] = {  # task -> (output position i, length n) -> source position
    "copy": lambda i, n: i,
    "increment": lambda i, n: i,
    "reverse": lambda i, n: n - 1 - i,
    "swap_pairs": lambda i, n: i ^ 1 if i < n - n % 2 else i,
}


def ideal_alignment(task: str, src_len: int, tgt_len: int) -> torch.Tensor | None:
    """The (tgt_len, src_len) attention a decoder query should pay to the source for `task`, or None when the
    task has no fixed alignment (sort: where a symbol goes depends on the others).

    Query row i is the decoder input at position i (BOS, then the target), which predicts output token i; it
    should put all its weight on the source token that output comes from. Rows past the source length (the one
    that predicts EOS) have no ideal key and stay zero.
    """
    if task not in ALIGNMENTS:
        return None
    ideal = torch.zeros(tgt_len, src_len)
    for i in range(min(tgt_len, src_len)):
        ideal[i, ALIGNMENTS[task](i, src_len)] = 1.0
    return ideal


def alignment_score(weights: Any, ideal: Any) -> float:
    """Mean over query rows of the attention mass on the ideal keys: 1 for a perfect match, about 1/T_key for
    uniform attention. Rows whose ideal is all zero are skipped. `weights` and `ideal` are (T_query, T_key)."""
    weights, ideal = torch.as_tensor(weights, dtype=torch.float32), torch.as_tensor(ideal, dtype=torch.float32)
    if weights.dim() != 2 or weights.shape != ideal.shape:
        raise ValueError(f"weights {tuple(weights.shape)} and ideal {tuple(ideal.shape)} must be equal 2-D shapes")
    mass = ideal.sum(dim=1)
    rows = mass > 0
    if not rows.any():
        raise ValueError("the ideal alignment has no row to score")
    return ((weights * ideal).sum(dim=1)[rows] / mass[rows]).mean().item()


def head_labels(n_layers: int, n_heads: int) -> list[str]:
    """'L0 H0', 'L0 H1', ...: one label per cross-attention head, layer by layer (0-based, as the heatmaps)."""
    return [f"L{layer} H{head}" for layer in range(n_layers) for head in range(n_heads)]


def alignment_series(task: str, cross: Sequence[Sequence[Any]]) -> dict[str, list[float]]:
    """Per head, its alignment score at each snapshot; {} when the task has no ideal alignment.

    `cross` holds one snapshot per step, each a list of per-layer (H, T_query, T_key) cross-attention maps (none for
    a model without attention).
    """
    if not cross or not cross[0]:
        return {}
    first = torch.as_tensor(cross[0][0])
    ideal = ideal_alignment(task, first.shape[2], first.shape[1])
    if ideal is None:
        return {}
    labels = head_labels(len(cross[0]), first.shape[0])
    series: dict[str, list[float]] = {label: [] for label in labels}
    for layers in cross:
        heads = [head for layer in layers for head in torch.as_tensor(layer)]
        for label, head in zip(labels, heads):
            series[label].append(alignment_score(head, ideal))
    return series
