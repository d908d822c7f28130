"""The paper's optimizer against PyTorch's: the same updates, step by step, from the same gradients."""

import pytest
import torch

from transformer.model import ModelConfig, Transformer
from transformer.optimizer import Adam

BETAS, EPS = (0.9, 0.98), 1e-9


def twins() -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """The parameters of one model, twice: the same values, separate tensors."""
    ours = [
        p.detach().clone().requires_grad_()
        for p in Transformer(ModelConfig(), torch.Generator().manual_seed(0)).parameters()
    ]
    return ours, [p.detach().clone().requires_grad_() for p in ours]


@pytest.mark.parametrize("implementation", ["foreach", "fused", "for-loop"])
def test_adam_takes_the_steps_torch_optim_adam_takes(implementation):
    """30 updates from random gradients at a rate that changes every step (warm-up, then decay, as the schedule):
    equal to float32's rounding (assert_close's float32 defaults) to each of PyTorch's three implementations, whose
    order of operations differs."""
    ours, theirs = twins()
    options = {"foreach": {"foreach": True}, "fused": {"fused": True}, "for-loop": {"foreach": False}}[implementation]
    reference = torch.optim.Adam(theirs, lr=1.0, betas=BETAS, eps=EPS, **options)
    adam = Adam(ours, betas=BETAS, eps=EPS)
    generator = torch.Generator().manual_seed(1)
    for step in range(1, 31):
        lr = 0.03 * min(step / 10, (10 / step) ** 0.5)
        for a, b in zip(ours, theirs):
            a.grad = torch.randn(a.shape, generator=generator) * step
            b.grad = a.grad.clone()
        adam.step(lr)
        reference.param_groups[0]["lr"] = lr
        reference.step()
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b)
    assert any(not torch.equal(a, b) for a, b in zip(ours, twins()[0]))  # the parameters moved


def test_a_parameter_without_a_gradient_stays_and_zero_grad_drops_every_gradient():
    ours, _ = twins()
    before = [p.detach().clone() for p in ours]
    for p in ours[1:]:
        p.grad = torch.ones_like(p)
    adam = Adam(ours)
    adam.step(0.01)
    assert torch.equal(ours[0], before[0])
    assert not torch.equal(ours[1], before[1])
    adam.zero_grad()
    assert all(p.grad is None for p in ours)
