"""Whether N runs of a class that differ only in their seed train faster as one batched model than one after another.

    python benchmarks/batched_runs_bench.py [--quick] [--runs 1 2 4 8 16 32] [--threads 1 2] [--rounds 10] \
        [--warmup 2] [--json FILE]

Every run is the Train page's default run (`default_configs`: reverse at lengths 6-8, d_model 32, 4 heads, one layer
each side, batch 64, Adam with the paper's schedule, clipping at 1.0, the weight average), run s with seed s. A
model-step is one run's step: its batch drawn, forward, loss, backward, clipping, Adam and the weight average. Each
round gives every one of the N runs one model-step:
- sequential: the N runs in turn, each through `Trainer._optimizer_step`, the step a worker process trains with;
- vmap: the N runs' weights stacked in one (N, weights) tensor, whose per-run rows are cut into the model's
  parameters; the model's layers (`TeacherForced`, masks always built) go through `functional_call` under `vmap`,
  each run on its own batch (the N batches stacked on a leading axis, padded to the widest), each run's gradients
  taken inside the vmap (`grad_and_value`). That is what a summed loss and one backward give (a run's weights are in
  its own loss alone), but under a plain vmap the model sees tensors that do not require grad, picks the inference
  choice of attention kernel (PyTorch's fused one) and vmap, with no batching rule for it on a CPU, loops over the
  runs; inside `grad_and_value` it takes a training step's kernel. The gradients, gathered in one (N, weights)
  tensor, are clipped per run by its own norm (clip_grad_norm_'s formula); then one Adam step and one weight-average
  update go over the stacked tensor. The Adam is the runs' own (`transformer.optimizer.Adam`, torch.optim.Adam's
  arithmetic without its per-step overhead), so both sides pay for the same optimizer. Adam is elementwise, so one
  Adam over (N, weights) is N Adams, one per run: asserted on a tiny case before timing.

Before timing, the vmap path's losses for the runs' starting weights and first batches are asserted equal to each
run's own (`torch.testing.assert_close`, float32's default tolerances). Each side is timed with `time.perf_counter`
and `time.process_time` over --rounds rounds after --warmup rounds, both in this process, the side that goes first
alternating with N: on a shared, loaded machine only the ratio of two sides measured in the same run compares.
Prints a table (model-steps per second and process CPU ms per model-step of each side, and their ratio
vmap / sequential), and with --json writes the rows to FILE.
"""

import argparse
import copy
import dataclasses
import json
import os
import platform
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.func import functional_call, grad_and_value, vmap

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from ensemble_bench import TeacherForced, stacked  # noqa: E402 (the repository root goes on the path first)

from transformer.optimizer import Adam  # noqa: E402
from transformer.run_configs import default_configs  # noqa: E402
from transformer.tasks import Batch  # noqa: E402
from transformer.training import Trainer  # noqa: E402

QUICK = {"runs": [1, 4, 16], "rounds": 5, "warmup": 1}


def runs_of(n: int, rounds: int) -> list[Trainer]:
    """N Train-page default runs, seeds 0..N-1, whose step budget and metric rows stay out of `rounds` steps."""
    trainers = []
    for seed in range(n):
        model, data, train = default_configs(seed, device="cpu")
        train = dataclasses.replace(train, steps=rounds + 1, eval_every=rounds + 1, early_stop=False)
        trainers.append(Trainer(model, data, train))
    return trainers


class Sequential:
    """The N runs, each taking its own step in turn."""

    def __init__(self, runs: list[Trainer]):
        self.runs = runs

    def round(self) -> list[float]:
        losses = []
        for run in self.runs:
            run.step += 1
            batch = run.data.train_batch(run.train_config.batch_size)
            losses.append(run._optimizer_step(batch, run.train_config.lr_at(run.step))[0])
        return losses


class Batched:
    """The N runs as one model: their weights stacked in one tensor, stepped together under vmap."""

    def __init__(self, runs: list[Trainer]):
        self.runs, self.cfg = runs, runs[0].train_config
        self.pad = runs[0].vocab.pad_id
        network = runs[0].network
        self.shapes = [(f"net.{name}", p.shape) for name, p in network.named_parameters()]
        self.buffers = {f"net.{name}": b for name, b in network.named_buffers()}
        self.model = TeacherForced(copy.deepcopy(network).to("meta"))  # its layers; the weights are passed in
        self.weights = torch.stack([run.weights.detach() for run in runs])  # (N, weights)
        self.average = self.weights.clone()
        self.optimizer = Adam([self.weights], betas=(0.9, 0.98), eps=1e-9)  # the Trainer's
        self.grads_and_losses = vmap(grad_and_value(self._loss), in_dims=(0, None, 0, 0, 0))
        self.step = 0

    def parameters(self) -> dict[str, torch.Tensor]:
        """The model's parameters as (N, *shape) views of the stacked weights."""
        parameters, offset = {}, 0
        for name, shape in self.shapes:
            size = shape.numel()
            parameters[name] = self.weights[:, offset : offset + size].view(-1, *shape)
            offset += size
        return parameters

    def _loss(self, parameters, buffers, src, tgt_in, tgt_out) -> torch.Tensor:
        logits = functional_call(self.model, (parameters, buffers), (src, tgt_in))
        return F.cross_entropy(
            logits.flatten(0, 1), tgt_out.flatten(), ignore_index=self.pad, label_smoothing=self.cfg.label_smoothing
        )

    def grads_and_losses_of(self, batches: list[Batch]) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """Each run's gradients, (N, *shape) per parameter, and (N,) loss on its batch, on the stacked weights."""
        src, tgt_in, tgt_out = (
            stacked([getattr(b, part) for b in batches], self.pad) for part in ("src", "tgt_in", "tgt_out")
        )
        return self.grads_and_losses(self.parameters(), self.buffers, src, tgt_in, tgt_out)

    def round(self) -> list[float]:
        self.step += 1
        grads, losses = self.grads_and_losses_of([run.data.train_batch(self.cfg.batch_size) for run in self.runs])
        values = losses.tolist()  # one read back for the N runs, as each run reads its own once
        grad = torch.cat([g.flatten(1) for g in grads.values()], dim=1)  # (N, weights), as the Trainer's weights.grad
        if self.cfg.clip_grad:  # clip_grad_norm_ per run: scale by min(max_norm / (norm + 1e-6), 1)
            grad.mul_(
                torch.clamp(self.cfg.clip_grad / (torch.linalg.vector_norm(grad, dim=1) + 1e-6), max=1.0)[:, None]
            )
        self.weights.grad = grad
        self.optimizer.step(self.cfg.lr_at(self.step))
        if self.cfg.ema_decay:  # WeightAverage.update's
            self.average.lerp_(self.weights, 1 - min(self.cfg.ema_decay, (1 + self.step) / (10 + self.step)))
        return values


def check_one_adam_is_n_adams() -> None:
    """One Adam over a stacked (N, weights) tensor makes the same updates as N Adams, one per row."""
    gen = torch.Generator().manual_seed(0)
    rows = [torch.randn(5, generator=gen) for _ in range(3)]
    alone = [row.clone() for row in rows]
    together = torch.stack(rows)
    adams, adam = [Adam([w]) for w in alone], Adam([together])
    for step in range(1, 4):
        grads = torch.randn(3, 5, generator=gen)
        for w, g, a in zip(alone, grads, adams):
            w.grad = g.clone()
            a.step(0.01 * step)
        together.grad = grads
        adam.step(0.01 * step)
    torch.testing.assert_close(together, torch.stack(alone))


def check_same_losses(n: int) -> None:
    """The vmap path's losses equal each run's own for the same weights and batches."""
    runs = runs_of(n, 1)
    batches = [run.data.train_batch(run.train_config.batch_size) for run in runs]
    alone = []
    for run, batch in zip(runs, batches):
        logits = run.network(batch.src, batch.tgt_in)
        alone.append(F.cross_entropy(logits.flatten(0, 1), batch.tgt_out.flatten(), ignore_index=run.vocab.pad_id))
    torch.testing.assert_close(Batched(runs).grads_and_losses_of(batches)[1], torch.stack(alone).detach())


def timed(side: Sequential | Batched, rounds: int, warmup: int) -> tuple[float, float]:
    """Wall and process CPU seconds of `rounds` rounds after `warmup` untimed ones."""
    for _ in range(warmup):
        side.round()
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(rounds):
        side.round()
    return time.perf_counter() - wall, time.process_time() - cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"N in {QUICK['runs']}, {QUICK['rounds']} rounds")
    parser.add_argument("--runs", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32], help="numbers of runs N")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="torch thread counts, in turn")
    parser.add_argument("--rounds", type=int, default=10, help="timed rounds (a model-step of every run each)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed rounds before them")
    parser.add_argument("--json", type=Path, help="write the rows as JSON to this file")
    args = parser.parse_args(argv)
    if args.quick:
        vars(args).update(QUICK)
    print(
        f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, {platform.node()}, {os.cpu_count()} CPUs, "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, torch {torch.__version__}; "
        f"{args.rounds} rounds after {args.warmup}",
        flush=True,
    )
    check_one_adam_is_n_adams()
    check_same_losses(4)
    print(
        f"{'threads':>7} {'N':>3} {'seq. steps/s':>12} {'vmap steps/s':>12} {'vmap/seq.':>9} "
        f"{'seq. CPU ms/step':>16} {'vmap CPU ms/step':>16}",
        flush=True,
    )
    rows = []
    for threads in args.threads:
        torch.set_num_threads(threads)
        for i, n in enumerate(args.runs):
            sides = {"sequential": Sequential(runs_of(n, args.warmup + args.rounds))}
            sides["vmap"] = Batched(runs_of(n, args.warmup + args.rounds))
            times = {name: timed(sides[name], args.rounds, args.warmup) for name in list(sides)[:: -1 if i % 2 else 1]}
            steps = n * args.rounds
            row = {"threads": threads, "runs": n, "model_steps": steps}
            for name, (wall, cpu) in times.items():
                row[f"{name}_steps_per_s"] = steps / wall
                row[f"{name}_cpu_ms_per_step"] = 1000 * cpu / steps
            row["ratio"] = row["vmap_steps_per_s"] / row["sequential_steps_per_s"]
            rows.append(row)
            print(
                f"{threads:>7} {n:>3} {row['sequential_steps_per_s']:>12.1f} {row['vmap_steps_per_s']:>12.1f} "
                f"{row['ratio']:>9.2f} {row['sequential_cpu_ms_per_step']:>16.1f} {row['vmap_cpu_ms_per_step']:>16.1f}",
                flush=True,
            )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.json:
        args.json.write_text(json.dumps({"rounds": args.rounds, "warmup": args.warmup, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
