"""Whether K training runs that differ only in their seed train faster as one vmapped ensemble than one after another,
and whether each ensemble member still is the run its seed makes alone.

    python benchmarks/ensemble_bench.py [--members 1 2 4 8] [--steps 50] [--threads 1 2] [--repeats 2]

Every run has the app's defaults (ModelConfig(), DataConfig(): reverse at lengths 1-16, TrainConfig(): batch 128,
lr 5e-3, noam warm-up 100, clipping at 1.0, fused Adam, weight average at 0.99, no dropout); seed s sets the data
seed and the training seed, as the app does. Early stopping and metric rows are off on both sides: the figures are
of training steps alone. torch runs on one thread first, as the app sets it (LAB_TORCH_THREADS = 1), then on each
further --threads count.

- Solo: the K runs one after another, each through `Trainer.run` (the app's own step loop), timed over N steps.
- Ensemble: K Trainers built the same way give their starting weights and their batch streams. Their weights are
  stacked (`torch.func.stack_module_state`); each step draws every member's batch from its own stream, gets every
  member's loss and gradients in one `vmap(grad_and_value(...))` of `functional_call`, scales each member's
  gradients by its own norm (clip_grad_norm_'s formula, inside the vmap), takes one fused Adam step over the stacked
  tensors (Adam is elementwise and every member has the same schedule: K Adams in one) and one stacked
  weight-average update (WeightAverage.update's). Timed over N steps.

Each side is timed --repeats times, the order of the two reversed at every other repeat; the fastest counts.
Prints, per thread count and K: the runs' training steps per second one after another and in the ensemble, their
ratio, each side's peak resident memory (Linux's VmHWM, reset before each side, after glibc's malloc_trim; "+" is
its growth over the resident set then: what the configuration adds), and how far the members are from their solo
runs after N steps; then one line of JSON with every figure. Exits 1 when a member is further from its run than
these tolerances:
- float32, as the app trains: per-step losses within LOSS_TOL = 1e-4, weights and averaged weights within
  WEIGHT_TOL = 1e-2, for the default N = 50. Batched kernels sum in another order, and training amplifies the
  rounding, more with every step: Adam divides each gradient by its own running size, so noise on a near-zero
  gradient becomes a step of the learning rate's size. The key bias (the middle third of each in_proj.bias) has a
  gradient of exactly zero in exact arithmetic (softmax ignores a constant added to all of a query's scores), so it
  drifts by up to the learning rate per step on either side, with no effect on any output. The same solo runs on
  1 and on 2 threads differ by as much.
- float64 (the runs and the ensemble with their weights in float64, untimed, at the largest K): within
  EXACT_TOL = 1e-9, where rounding cannot hide a difference in the math.

Not bitwise equal, and not `Transformer.forward`, which vmap cannot run: it branches on token values (to validate
the ids, and to pass no mask for a batch without padding). The ensemble calls the model's own layers with the masks
always built (`TeacherForced`); an all-True mask changes no score, and a batch of 128 at lengths 1-16 is unpadded
with probability about 16^-128. Members' batches of different widths are padded to the widest (extra PAD columns,
masked and ignored by the loss; the steps where it happened are counted). With dropout > 0 no member could be its
run: a run draws its masks from its own generator, and vmap draws random numbers for all members at once
(randomness "same" or "different"), never from each member's stream. At sizes where the model picks PyTorch's
fused attention kernel (at most 32k scores, far below batch 128), vmap has no batching rule for it on the CPU and
loops over the members; the default sizes take the explicit path.
"""

import argparse
import copy
import ctypes
import datetime
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.func import functional_call, grad_and_value, stack_module_state, vmap

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from transformer.batched import TeacherForced, stacked  # noqa: E402 (the repository root goes on the path first)
from transformer.model import ModelConfig  # noqa: E402
from transformer.tasks import DataConfig  # noqa: E402
from transformer.training import TrainConfig, Trainer, TrainingDiverged  # noqa: E402

LOSS_TOL = 1e-4  # largest |member's loss - its solo run's loss| allowed at any step
WEIGHT_TOL = 1e-2  # largest |member's weight - its solo run's weight| allowed after the last step, averages too
EXACT_TOL = 1e-9  # both, when the runs and the ensemble compute in float64

LIBC = ctypes.CDLL("libc.so.6")  # glibc: Linux only, as /proc/self/clear_refs
Weights = dict[str, torch.Tensor]  # parameter name -> (K, ...) stacked over the runs


@dataclass
class Outcome:
    """K runs after N steps: seconds spent training, per-step losses (K, N), weights and averaged weights."""

    seconds: float
    losses: torch.Tensor
    weights: Weights
    averages: Weights
    widened_steps: int = 0  # steps where a member's batch was padded to a wider member's


def trainer(seed: int, steps: int, dtype: torch.dtype) -> Trainer:
    """A Trainer of the app's defaults for `seed`, with early stopping and metric rows out of the way, its weights
    (and their average) in `dtype`."""
    train = TrainConfig(seed=seed, steps=steps + 1, early_stop=False, eval_every=steps + 1, device="cpu")
    run = Trainer(ModelConfig(), DataConfig(seed=seed), train)
    for module in (run.network, run.model):
        module.to(dtype)  # in place: the optimizer and the average keep their tensors
    return run


def solo(seeds: list[int], steps: int, dtype: torch.dtype = torch.float32) -> Outcome:
    """Each seed's run in turn through `Trainer.run`, timed until its `steps`-th step ends."""
    seconds, runs = 0.0, []
    for seed in seeds:
        run, ended = trainer(seed, steps, dtype), []

        def stop(run: Trainer = run, ended: list[float] = ended) -> bool:  # asked before each step
            if run.step < steps:
                return False
            ended.append(time.perf_counter())
            return True

        start = time.perf_counter()
        run.run(stop=stop)
        seconds += ended[0] - start
        runs.append(run)
    weights, averages = (stack_module_state([getattr(r, kept) for r in runs])[0] for kept in ("network", "model"))
    return Outcome(seconds, torch.tensor([r.step_losses for r in runs], dtype=torch.float64), weights, averages)


def ensemble(seeds: list[int], steps: int, dtype: torch.dtype = torch.float32) -> Outcome:
    """The seeds' runs as one vmapped ensemble, timed over `steps` steps."""
    runs = [trainer(seed, steps, dtype) for seed in seeds]
    cfg, pad = runs[0].train_config, runs[0].vocab.pad_id
    weights, buffers = (
        {f"net.{name}": t for name, t in state.items()} for state in stack_module_state([r.network for r in runs])
    )
    model = TeacherForced(copy.deepcopy(runs[0].network).to("meta"))  # its layers; the weights are passed in
    tensors = list(weights.values())
    optimizer = torch.optim.Adam(tensors, **runs[0].optimizer.defaults)
    averages = [t.detach().clone() for t in tensors]

    def loss_of(weights: Weights, buffers: Weights, src, tgt_in, tgt_out) -> torch.Tensor:
        logits = functional_call(model, (weights, buffers), (src, tgt_in))
        return F.cross_entropy(
            logits.flatten(0, 1), tgt_out.flatten(), ignore_index=pad, label_smoothing=cfg.label_smoothing
        )

    def member_step(weights: Weights, buffers: Weights, src, tgt_in, tgt_out) -> tuple[Weights, torch.Tensor]:
        grads, loss = grad_and_value(loss_of)(weights, buffers, src, tgt_in, tgt_out)
        if cfg.clip_grad:  # clip_grad_norm_: scale by min(max_norm / (total norm + 1e-6), 1)
            norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads.values()]))
            scale = torch.clamp(cfg.clip_grad / (norm + 1e-6), max=1.0)
            grads = {name: g * scale for name, g in grads.items()}
        return grads, loss

    all_members, losses, widened = vmap(member_step), [], 0
    start = time.perf_counter()
    for step in range(1, steps + 1):
        batches = [r.data.train_batch(cfg.batch_size) for r in runs]
        widened += len({(b.src.size(1), b.tgt_in.size(1)) for b in batches}) > 1
        src, tgt_in, tgt_out = (
            stacked([getattr(b, part) for b in batches], pad) for part in ("src", "tgt_in", "tgt_out")
        )
        for group in optimizer.param_groups:
            group["lr"] = cfg.lr_at(step)
        with torch.no_grad():  # grad_and_value differentiates inside; nothing to record outside
            grads, loss = all_members(weights, buffers, src, tgt_in, tgt_out)
        if not torch.isfinite(loss).all():
            raise TrainingDiverged(f"the members' losses became {loss.tolist()} at step {step}")
        for t, g in zip(tensors, grads.values()):
            t.grad = g
        optimizer.step()
        if cfg.ema_decay:
            torch._foreach_lerp_(averages, tensors, 1 - min(cfg.ema_decay, (1 + step) / (10 + step)))
        losses.append(loss)
    seconds = time.perf_counter() - start
    names = [name.removeprefix("net.") for name in weights]
    kept = averages if cfg.ema_decay else tensors
    return Outcome(
        seconds,
        torch.stack(losses, dim=1),
        {n: t.detach() for n, t in zip(names, tensors)},
        {n: t.detach() for n, t in zip(names, kept)},
        widened,
    )


def _status_mb(field: str) -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field)) / 1024


@dataclass
class Side:
    """One way of training K runs, measured `repeats` times: its fastest time, its highest peak resident MB and
    growth over the resident set at its start, and its first outcome (every repeat trains the same)."""

    outcome: Outcome
    seconds: float
    peak_mb: float
    growth_mb: float


def measured(trains: dict[str, Callable[[], Outcome]], repeats: int) -> dict[str, Side]:
    """Each of `trains`, `repeats` times, in turn, the order reversed at every other repeat."""
    seen: dict[str, list[tuple[Outcome, float, float]]] = {name: [] for name in trains}
    for repeat in range(repeats):
        for name in list(trains)[:: -1 if repeat % 2 else 1]:
            LIBC.malloc_trim(0)  # hands back what earlier runs freed, so the growth is this side's own
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")  # resets the peak resident set (VmHWM) to the current one
            base_mb = _status_mb("VmHWM:")
            outcome = trains[name]()
            peak_mb = _status_mb("VmHWM:")
            seen[name].append((outcome, peak_mb, peak_mb - base_mb))
    return {
        name: Side(
            runs[0][0],
            min(o.seconds for o, _, _ in runs),
            max(peak for _, peak, _ in runs),
            max(growth for _, _, growth in runs),
        )
        for name, runs in seen.items()
    }


def gaps(alone: Outcome, together: Outcome) -> dict[str, float]:
    """Largest absolute differences between the solo runs and the members: per-step losses, weights, averages."""

    def largest(a: Weights, b: Weights) -> float:
        return max((a[name] - b[name]).abs().max().item() for name in a)

    return {
        "loss_gap": (alone.losses - together.losses.double()).abs().max().item(),
        "weight_gap": largest(alone.weights, together.weights),
        "average_gap": largest(alone.averages, together.averages),
    }


def within(gaps: dict[str, float], loss_tol: float, weight_tol: float) -> bool:
    return gaps["loss_gap"] < loss_tol and max(gaps["weight_gap"], gaps["average_gap"]) < weight_tol


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--members", type=int, nargs="+", default=[1, 2, 4, 8], help="ensemble sizes K")
    parser.add_argument("--steps", type=int, default=50, help="training steps N of every run")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="torch thread counts, in turn")
    parser.add_argument("--repeats", type=int, default=2, help="timings of each side, the fastest kept")
    args = parser.parse_args(argv)
    print(
        f"{datetime.datetime.now().isoformat(timespec='seconds')}, {platform.node()}, {platform.machine()}, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}, torch {torch.__version__}, "
        f"Python {platform.python_version()}; {args.steps} steps per run, seeds 0..K-1, fastest of {args.repeats}",
        flush=True,
    )
    print(
        f"{'threads':>7} {'K':>3} {'solo steps/s':>12} {'ens. steps/s':>12} {'ens./solo':>9} "
        f"{'solo peak MB':>13} {'ens. peak MB':>13} {'max |dloss|':>11} {'|dweight|':>9} {'|daverage|':>10} widened",
        flush=True,
    )
    rows = []
    for threads in args.threads:
        torch.set_num_threads(threads)
        solo([0], 3)  # one-off costs (fused Adam's first step, vmap's first call) left out of every timing
        ensemble([0, 1], 3)
        for k in args.members:
            seeds = list(range(k))
            sides = measured(
                {
                    "solo": lambda seeds=seeds: solo(seeds, args.steps),
                    "ensemble": lambda seeds=seeds: ensemble(seeds, args.steps),
                },
                args.repeats,
            )
            alone, together = sides["solo"], sides["ensemble"]
            row = {
                "threads": threads,
                "k": k,
                "solo_steps_per_s": k * args.steps / alone.seconds,
                "ensemble_steps_per_s": k * args.steps / together.seconds,
                "ratio": alone.seconds / together.seconds,
                "solo_peak_mb": alone.peak_mb,
                "solo_growth_mb": alone.growth_mb,
                "ensemble_peak_mb": together.peak_mb,
                "ensemble_growth_mb": together.growth_mb,
                **gaps(alone.outcome, together.outcome),
                "widened_steps": together.outcome.widened_steps,
            }
            rows.append(row)
            print(
                f"{threads:>7} {k:>3} {row['solo_steps_per_s']:>12.1f} {row['ensemble_steps_per_s']:>12.1f} "
                f"{row['ratio']:>9.2f} {alone.peak_mb:>6.0f} (+{alone.growth_mb:>3.0f}) {together.peak_mb:>6.0f} "
                f"(+{together.growth_mb:>3.0f}) {row['loss_gap']:>11.1e} {row['weight_gap']:>9.1e} "
                f"{row['average_gap']:>10.1e} {row['widened_steps']:>7}",
                flush=True,
            )
    k = max(args.members)
    torch.set_num_threads(args.threads[0])
    exact = gaps(solo(list(range(k)), args.steps, torch.float64), ensemble(list(range(k)), args.steps, torch.float64))
    print(
        f"float64, K={k}, {args.threads[0]} thread(s), untimed: max |dloss| {exact['loss_gap']:.1e}, "
        f"|dweight| {exact['weight_gap']:.1e}, |daverage| {exact['average_gap']:.1e}"
    )
    failed = [f"{r['threads']} threads K={r['k']}" for r in rows if not within(r, LOSS_TOL, WEIGHT_TOL)]
    if not within(exact, EXACT_TOL, EXACT_TOL):
        failed.append(f"float64 K={k}")
    print(
        f"members equal to their solo runs (float32: losses within {LOSS_TOL:g}, weights within {WEIGHT_TOL:g}; "
        f"float64: within {EXACT_TOL:g}): " + ("yes" if not failed else "NO, at " + ", ".join(failed))
    )
    summary = {"steps": args.steps, "repeats": args.repeats, "rows": rows, "float64": {"k": k, **exact}}
    print(json.dumps({**summary, "failed": failed}))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
