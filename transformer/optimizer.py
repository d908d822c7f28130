"""Adam, the optimizer the paper trains with (section 5.3): beta1 = 0.9, beta2 = 0.98, eps = 1e-9, its learning rate
set at every step by the schedule (`TrainConfig.lr_at`); and the weights it updates, held in one tensor."""

import math
from collections.abc import Iterable, Iterator, Sequence

import torch


def into_one_tensor(parameters: Sequence[torch.Tensor]) -> torch.Tensor:
    """Copy `parameters` into one new 1-D tensor and make each parameter's data a view of its slice; returns the
    tensor. An elementwise update of it (Adam's, the weight average's) is then one op for every weight: on a CPU,
    an op for each parameter tensor (33 in the default model, about ten for each in Adam) cost more than the
    arithmetic of the update."""
    flat = torch.cat([p.detach().reshape(-1) for p in parameters])  # (n_weights,)
    for p, view in zip(parameters, _slices(flat, parameters)):
        p.data = view
    return flat


def gradients_into_one_tensor(parameters: Sequence[torch.Tensor], flat: torch.Tensor) -> None:
    """Give `flat`, made by `into_one_tensor(parameters)`, a zero gradient whose slices are the parameters'
    gradients: the backward pass adds into them, so `flat.grad` holds every gradient, and zeroing it zeroes all."""
    flat.grad = torch.zeros_like(flat)
    for p, view in zip(parameters, _slices(flat.grad, parameters)):
        p.grad = view


def _slices(flat: torch.Tensor, like: Sequence[torch.Tensor]) -> Iterator[torch.Tensor]:
    """Consecutive slices of `flat`, shaped as the tensors of `like`."""
    offset = 0
    for t in like:
        yield flat[offset : offset + t.numel()].view_as(t)
        offset += t.numel()


class Adam:
    """Adam (Kingma and Ba, 2015), one update of every parameter at once (PyTorch's `_foreach` ops):

        m <- beta1 m + (1 - beta1) g            a running mean of the gradient g
        v <- beta2 v + (1 - beta2) g * g        and of its square
        theta <- theta - lr * m_hat / (sqrt(v_hat) + eps),  m_hat = m / (1 - beta1^t), v_hat = v / (1 - beta2^t)

    The arithmetic of `torch.optim.Adam` (tests/test_optimizer.py), without its machinery: at these sizes that
    machinery is most of an update's time, and its first use in a process imports PyTorch's compiler (about 1 s).
    Parameters without a gradient are left as they are, as `torch.optim.Adam` leaves them; the bias corrections
    count the updates of the optimizer, not of each parameter (these models give every parameter a gradient at
    every step, so the two are the same). Given the one tensor of `into_one_tensor`, an update is seven ops.
    """

    def __init__(self, parameters: Iterable[torch.Tensor], betas: tuple[float, float] = (0.9, 0.98), eps: float = 1e-9):
        self.parameters = list(parameters)
        self.beta1, self.beta2 = betas
        self.eps = eps
        self.t = 0  # updates so far
        self.m = [torch.zeros_like(p) for p in self.parameters]  # first moments
        self.v = [torch.zeros_like(p) for p in self.parameters]  # second moments

    @torch.no_grad()
    def step(self, lr: float) -> None:
        """One update at learning rate `lr` from the gradients the backward pass left in `.grad`."""
        rows = [i for i, p in enumerate(self.parameters) if p.grad is not None]
        if not rows:
            return
        params = [self.parameters[i] for i in rows]
        grads, m, v = [p.grad for p in params], [self.m[i] for i in rows], [self.v[i] for i in rows]
        self.t += 1
        torch._foreach_lerp_(m, grads, 1 - self.beta1)
        torch._foreach_mul_(v, self.beta2)
        torch._foreach_addcmul_(v, grads, grads, 1 - self.beta2)
        denominator = torch._foreach_sqrt(v)
        torch._foreach_div_(denominator, math.sqrt(1 - self.beta2**self.t))
        torch._foreach_add_(denominator, self.eps)
        torch._foreach_addcdiv_(params, m, denominator, -lr / (1 - self.beta1**self.t))
