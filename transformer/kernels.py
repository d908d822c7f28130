"""Which attention kernel is faster: PyTorch's fused one or the explicit formula, and the explicit path's softmax.

Both paths compute the same attention (`transformer.model.scaled_dot_product_attention`, proven equal in
`tests/test_model.py`); this module only says which one a shape runs faster on. The figures behind the thresholds
are in docs/benchmarks.md.
"""

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import torch

_explicit = threading.local()  # `explicit_attention` in force on this thread


def fused_is_faster(q: torch.Tensor, k: torch.Tensor) -> bool:
    """Whether PyTorch's fused attention kernel beats the explicit path for q (B, H, T_q, d_k), k (B, H, T_k, d_k).

    Assumed so on a GPU (its fused kernels are built for it). On a CPU, with at most 32 keys (these tasks), the
    kernel (flash attention) pays a fixed cost per block of queries and per head, and three cases go faster the
    explicit way (measured on a 2-core AVX-512 machine, docs/benchmarks.md):
    - training with 8-13 keys, heads of at most 16 dimensions and over 4k scores (most runs here: batches of 64
      inputs of 7-12 tokens, 2 or more heads at d_model 32): a whole training step 5-34% faster, the default run's
      10% (the explicit path's softmax written out, see `softmax`);
    - training, once the scores (B, H, T_q, T_k) outnumber 32k: its backward pass is 1.3-3x slower at batch 128;
    - a decoding step (one query per row) with 8k scores or more: 1.2-2x slower for 1,000 rows.
    """
    if getattr(_explicit, "on", False):
        return False
    if q.device.type != "cpu" or k.size(-2) > 32:
        return True
    scores = q.shape[:-1].numel() * k.size(-2)
    if not q.requires_grad:
        return q.size(-2) > 1 or scores < 8192
    return scores <= 4096 or (scores <= 32_768 and not (8 <= k.size(-2) <= 13 and q.size(-1) <= 16))


@contextmanager
def explicit_attention() -> Iterator[None]:
    """Within, attention takes the explicit path whatever the shapes: under `torch.func.vmap` (runs trained
    together, `transformer.batched`) the fused CPU kernel has no batching rule, and vmap would loop over the runs."""
    _explicit.on = True
    try:
        yield
    finally:
        _explicit.on = False


def softmax(scores: torch.Tensor) -> torch.Tensor:
    """softmax over the last dimension: exp(s - max) / sum(exp(s - max)), the max subtracted so that exp cannot
    overflow. Written out over fewer than 16 keys on a CPU, where PyTorch's softmax kernel is slower than these
    four ops (1.5x over 9 keys, forward and backward); PyTorch's over more."""
    if scores.device.type != "cpu" or scores.size(-1) >= 16:
        return scores.softmax(dim=-1)
    e = (scores - scores.detach().amax(dim=-1, keepdim=True)).exp()  # the max only shifts: no gradient through it
    return e / e.sum(dim=-1, keepdim=True)
