"""Runs trained together: several runs of one model shape take their steps as one batched model.

Each run stays its own `Trainer`: its seed's starting weights and data, its learning rate and schedule, its Adam,
clipping and weight average, its early stop, metric rows, budgets and controls. Only the forward and backward pass is
shared: the runs' weights stacked on a leading run axis, each run's loss and gradients on its own batch under
`torch.func.vmap` (`functional_call` of the model's layers), one batched pass instead of N small ones. On this
project's 2-core CPU that is not faster (the passes are bound by arithmetic, docs/benchmarks.md), so a server's slots
use it only when `LAB_TRAIN_TOGETHER` asks them to.

The runs must share the model's configuration, the batch size and label smoothing (`together_key`), and have no
dropout: a run draws its dropout masks from its own generator, which vmap cannot follow. Batched kernels sum in
another order, so a run trained together equals its run alone to rounding (the same steps to solve in float64,
tests/test_batched.py), as the same run on one and on two threads does.
"""

import copy
import math
import time
from collections.abc import Callable, Iterator, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad_and_value, vmap

from .kernels import explicit_attention
from .masks import decoder_mask, padding_mask
from .model import ModelConfig, Transformer
from .tasks import Batch
from .training import MetricRow, TrainConfig, Trainer, TrainingDiverged

BATCH_PARTS = ("src", "tgt_in", "tgt_out")  # a Batch's token id tensors
HOLD_POLL_S = 0.05  # how often the controls of runs that are all held are asked again
Control = Callable[[], bool | None]  # before each step: True ends the run, None holds it this round, False steps


def together_key(model_config: ModelConfig, train_config: TrainConfig) -> tuple | None:
    """What runs trained together must share, or None for a run that trains alone (dropout; the recurrent
    baseline)."""
    if model_config.dropout > 0 or model_config.architecture != "transformer":
        return None
    return model_config, train_config.batch_size, train_config.label_smoothing, train_config.device


class TeacherForced(nn.Module):
    """`Transformer.forward` for training with its masks always built: the model's forward branches on token values
    (it checks the ids, and passes no mask to a batch without padding), which vmap cannot; a mask of all True
    changes no score."""

    def __init__(self, net: Transformer):
        super().__init__()
        self.net = net

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        net, pad = self.net, self.net.config.pad_id
        src_mask = padding_mask(src, pad)
        memory, _ = net.encode(src, src_mask)
        tgt_mask = decoder_mask(tgt_in, pad, net.config.causal_mask)
        x, _, _ = net.decoder(net.positional(net.embed(tgt_in)), memory, src_mask, tgt_mask)
        return net.generator(x)  # (B, T, V)


def stacked(ids: Sequence[torch.Tensor], pad_id: int) -> torch.Tensor:
    """(N, B, T) from N (B, T_n) token id tensors, right-padded with PAD to the widest: masked, and left out of the
    loss."""
    width = max(t.size(1) for t in ids)
    return torch.stack([F.pad(t, (0, width - t.size(1)), value=pad_id) for t in ids])


class TogetherPass:
    """The forward and backward pass of runs of one shape, batched: each run's loss, logits and gradients."""

    def __init__(self, like: Trainer):
        network = like.network
        self.shapes = [(f"net.{name}", p.shape) for name, p in network.named_parameters()]
        canonical = {id(p): f"net.{name}" for name, p in reversed(list(network.named_parameters()))}
        self.tied = {  # a second name of a parameter (the generator's, tied to the embedding) -> its first
            f"net.{name}": canonical[id(p)]
            for name, p in network.named_parameters(remove_duplicate=False)
            if canonical[id(p)] != f"net.{name}"
        }
        self.buffers = {f"net.{name}": b for name, b in network.named_buffers()}  # the same for every run
        self.layers = TeacherForced(copy.deepcopy(network).to("meta"))  # the layers; the weights are passed in
        self.pad, self.smoothing = like.vocab.pad_id, like.train_config.label_smoothing
        self.per_run = vmap(grad_and_value(self._loss, has_aux=True), in_dims=(0, None, 0, 0, 0))

    def _loss(self, parameters, buffers, src, tgt_in, tgt_out) -> tuple[torch.Tensor, torch.Tensor]:  # noqa: ANN001
        parameters = {**parameters, **{name: parameters[first] for name, first in self.tied.items()}}
        logits = functional_call(self.layers, (parameters, buffers), (src, tgt_in), tie_weights=False)
        loss = F.cross_entropy(
            logits.flatten(0, 1), tgt_out.flatten(), ignore_index=self.pad, label_smoothing=self.smoothing
        )
        return loss, logits

    def __call__(self, runs: Sequence[Trainer], batches: Sequence[Batch]) -> list[tuple[float, torch.Tensor]]:
        """Each run's loss and logits (B, T, V) on its batch; its gradients land in its `weights.grad`."""
        weights = torch.stack([run.weights.detach() for run in runs])  # (N, n_weights)
        parameters, offset = {}, 0
        for name, shape in self.shapes:  # (N, *shape) views of each run's row
            parameters[name] = weights[:, offset : offset + shape.numel()].view(-1, *shape)
            offset += shape.numel()
        src, tgt_in, tgt_out = (stacked([getattr(b, part) for b in batches], self.pad) for part in BATCH_PARTS)
        with explicit_attention():
            grads, (losses, logits) = self.per_run(parameters, self.buffers, src, tgt_in, tgt_out)
        grad = torch.cat([g.flatten(1) for g in grads.values()], dim=1)  # (N, n_weights), in the runs' own order
        for run, row in zip(runs, grad):
            run.weights.grad.copy_(row)
        widths = [b.tgt_in.size(1) for b in batches]
        return [(loss, logits[i, :, : widths[i]]) for i, loss in enumerate(losses.tolist())]


def train_together(
    runs: Sequence[Trainer], controls: Sequence[Control | None]
) -> Iterator[tuple[int, MetricRow | None]]:
    """Train `runs` (one `together_key`) in step: yields (run's index, metric row) as `Trainer.train` yields each
    run's rows, and (run's index, None) once that run has ended, with its `result` set, or its `error` (a run whose
    loss diverged ends alone).

    Every round, each run's control decides whether it steps, holds or ends (a control must not block: the other
    runs wait on it); the runs that step share one batched pass, or take their own when one steps alone (a batched
    pass of one run is slower than its own). The pass's time (on the runs' `clock`) counts towards each stepping run's
    time budget in equal shares (the rest is the run's `shared_s`), and a held run's whole round is its pause
    (`paused_s`), so a run's budget buys it about the steps it would take alone."""
    together, clock = TogetherPass(runs[0]), runs[0].clock
    for run in runs:
        run.begin()
    live = list(range(len(runs)))
    while live:
        began = clock()
        paused_before = {i: runs[i].paused_s for i in live}
        stepping = [i for i in live if runs[i].may_step(controls[i])]
        for i in [i for i in live if runs[i].reason is not None]:
            live.remove(i)
            yield from ((i, row) for row in runs[i].end())
            yield i, None
        if not stepping:
            time.sleep(HOLD_POLL_S)  # every run left is held: ask their controls again shortly
            continue
        stepped = clock()
        yield from _round(together, [runs[i] for i in stepping], stepping, live)
        share = (clock() - stepped) * (1 - 1 / len(stepping))
        for i in live:
            if i in stepping:
                runs[i].shared_s += share
            else:
                runs[i].paused_s = paused_before[i] + clock() - began


def _round(together: TogetherPass, runs: list[Trainer], indices: list[int], live: list[int]) -> Iterator[tuple]:
    """One step of each of `runs` (at `indices`), their forward and backward pass batched; a run whose loss
    diverged ends, and leaves `live`."""
    drawn = [run.next_batch() for run in runs]
    if len(runs) == 1:
        passes = [_alone(runs[0], drawn[0][0])]
    else:
        passes = together(runs, [batch for batch, _ in drawn])
    for i, run, (batch, lr), (loss, logits) in zip(indices, runs, drawn, passes):
        try:
            run.check_finite(loss)
        except TrainingDiverged as err:
            run.error = err
            live.remove(i)
            yield i, None
            continue
        run.apply_update(lr)
        row = run.after_step(batch, lr, loss, logits)
        if row is not None:
            yield i, row
            run.row_taken()


def _alone(run: Trainer, batch: Batch) -> tuple[float, torch.Tensor]:
    """One run's own forward and backward pass; a loss that is not finite is returned, not raised (see `_round`)."""
    try:
        return run.forward_backward(batch)
    except TrainingDiverged:
        return math.nan, torch.empty(0)
