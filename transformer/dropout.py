"""Dropout (section 5.4), its masks drawn from a run's own generator.

Runs that train side by side in one process (the classroom server's threads) must not draw their dropout masks from
each other: inside `dropout_rng(g)` every mask this thread draws comes from g, not PyTorch's process-wide generator.
"""

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import torch
import torch.nn.functional as F

_dropout = threading.local()  # .rng: the dropout generator of the run training on this thread


@contextmanager
def dropout_rng(rng: torch.Generator | None) -> Iterator[None]:
    """Draw the dropout masks of this thread's forward passes from `rng`, a run's own generator, instead of
    PyTorch's process-wide one, so that runs training side by side in one process never draw from each other."""
    outer = dropout_generator()
    _dropout.rng = rng
    try:
        yield
    finally:
        _dropout.rng = outer


def dropout_generator() -> torch.Generator | None:
    """The generator this thread's dropout masks come from, or None for PyTorch's process-wide one."""
    return getattr(_dropout, "rng", None)


def dropout(x: torch.Tensor, p_drop: float, training: bool) -> torch.Tensor:
    """Dropout (section 5.4): in training, zero each element with probability p_drop and scale the rest
    by 1 / (1 - p_drop); in eval mode or at rate 0, x itself.

    A function of the module's rate and mode rather than an `nn.Dropout` module, so that where it can change
    nothing, nothing is called: at these sizes module calls take much of a decoding step's time. Inside
    `dropout_rng(g)` the mask is drawn from g.
    """
    if not training or p_drop == 0:
        return x
    rng = dropout_generator()
    if rng is None:
        return F.dropout(x, p_drop)
    keep = torch.rand(x.shape, generator=rng, device=x.device) >= p_drop
    return x * keep / (1 - p_drop)
