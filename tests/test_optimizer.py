"""The paper's optimizer against PyTorch's: the same updates, step by step, from the same gradients."""

import pytest
import torch

from transformer.model import ModelConfig, Transformer
from transformer.optimizer import Adam, gradients_into_one_tensor, into_one_tensor

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


def test_a_parameter_without_a_gradient_stays():
    ours, _ = twins()
    before = [p.detach().clone() for p in ours]
    for p in ours[1:]:
        p.grad = torch.ones_like(p)
    Adam(ours).step(0.01)
    assert torch.equal(ours[0], before[0])
    assert not torch.equal(ours[1], before[1])


def test_parameters_in_one_tensor_keep_their_values_and_follow_its_updates():
    model = Transformer(ModelConfig(), torch.Generator().manual_seed(0))
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    parameters = list(model.parameters())
    flat = into_one_tensor(parameters)
    assert flat.numel() == sum(p.numel() for p in parameters) == model.num_parameters()
    for name, p in model.named_parameters():
        assert torch.equal(p, before[name]) and p.untyped_storage().data_ptr() == flat.untyped_storage().data_ptr()
    flat.add_(1.0)
    for name, p in model.named_parameters():
        assert torch.equal(p, before[name] + 1.0), name


def test_gradients_in_one_tensor_are_the_gradients_backward_computes():
    """The backward pass adds each gradient into its zeroed slice: 0 + g is g exactly, step after step."""
    config = ModelConfig(vocab_size=12, d_model=16, n_heads=2, d_ff=32)
    ours, reference = (Transformer(config, torch.Generator().manual_seed(0)) for _ in range(2))
    parameters = list(ours.parameters())
    flat = into_one_tensor(parameters)
    gradients_into_one_tensor(parameters, flat)
    generator = torch.Generator().manual_seed(1)
    for _ in range(2):
        src, tgt = (torch.randint(3, 12, (4, 6), generator=generator) for _ in range(2))
        flat.grad.zero_()
        reference.zero_grad(set_to_none=True)
        for model in (ours, reference):
            model(src, tgt).square().mean().backward()
        for (name, p), q in zip(ours.named_parameters(), reference.parameters()):
            assert torch.equal(p.grad, q.grad), name
        assert torch.equal(flat.grad, torch.cat([q.grad.reshape(-1) for q in reference.parameters()]))


def test_adam_on_one_tensor_takes_the_steps_it_takes_on_the_parameters():
    """Adam's update is elementwise, so one tensor or 33 give the same weights (to float32 rounding: a kernel's
    vector and scalar loops may round differently)."""
    ours, theirs = twins()
    flat = into_one_tensor(ours)
    gradients_into_one_tensor(ours, flat)
    one, many = Adam([flat], betas=BETAS, eps=EPS), Adam(theirs, betas=BETAS, eps=EPS)
    generator = torch.Generator().manual_seed(2)
    for _ in range(10):
        for a, b in zip(ours, theirs):
            a.grad.copy_(torch.randn(a.shape, generator=generator))
            b.grad = a.grad.clone()
        one.step(0.01)
        many.step(0.01)
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b)
