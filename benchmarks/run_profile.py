"""Where the Train page's default run (or a gallery task's) spends its time: cProfile of a few seeds in one process,
one torch thread, after a warm-up run, as each part's share of the run (cProfile slows Python calls, so shares, not
times).

    python benchmarks/run_profile.py [--task dedup] --seeds 0 1 2
    python benchmarks/run_profile.py --ops 20    # also the PyTorch ops of one optimiser step, per step
"""

import argparse
import cProfile
import pstats
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from transformer.run_configs import Configs, default_configs, run_configs  # noqa: E402 (the root goes on the path first)
from transformer.tasks import GALLERY  # noqa: E402
from transformer.training import Trainer  # noqa: E402

# Part of the run -> (file, function) whose cumulative time it is, less those of the second list.
PARTS = {
    "optimiser step (forward, loss, backward, clipping, Adam, average)": ([("training.py", "_optimizer_step")], []),
    "  backward": ([("graph.py", "_engine_run_backward")], []),
    "  Adam step": ([("optimizer.py", "step")], []),
    "  gradient clipping": ([("clip_grad.py", "clip_grad_norm_")], []),
    "  weight average": ([("training.py", "update")], []),
    "training batch": ([("tasks.py", "train_batch")], []),
    "early-stop check, the average on the batch": ([("training.py", "_eval_logits")], []),
    "early-stop check, the whole held-out set": ([("training.py", "_solved")], []),
    "metric rows": ([("training.py", "_row")], []),
    "attention snapshots": ([("training.py", "_snapshot_attention")], []),
    "the run's end: its final scores": ([("training.py", "end")], []),
}


def cumulative(stats: dict, functions: list[tuple[str, str]]) -> float:
    """Seconds spent in the named functions (file name ending, function name), callees included."""
    return sum(
        v[3] for (file, _, name), v in stats.items() if any(file.endswith(f) and name == n for f, n in functions)
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=["reverse", *GALLERY], default="reverse", help="reverse: the Train page's")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--ops", type=int, default=0, help="also profile this many optimiser steps' PyTorch ops")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)

    def configs(seed: int) -> Configs:
        if args.task in GALLERY:
            return run_configs({**GALLERY[args.task].default_run, "seed": seed, "device": "cpu"})
        return default_configs(seed, device="cpu")

    Trainer(*configs(99)).run()  # this process's one-off costs, outside the profile
    profiler, steps = cProfile.Profile(), 0
    for seed in args.seeds:
        steps += profiler.runcall(Trainer(*configs(seed)).run).steps
    stats = pstats.Stats(profiler).stats
    whole = cumulative(stats, [("training.py", "run")])
    print(f"{args.task}, seeds {args.seeds}: {steps} steps, {whole:.2f} s profiled")
    for part, (plus, minus) in PARTS.items():
        share = (cumulative(stats, plus) - cumulative(stats, minus)) / whole
        print(f"{part:68s} {100 * share:5.1f}%")
    if args.ops:
        step_ops(Trainer(*configs(args.seeds[0])), args.ops)
    return 0


def step_ops(trainer: Trainer, steps: int, top: int = 12) -> None:
    """The PyTorch ops of `steps` optimiser steps of `trainer`'s run (after as many unprofiled), per step: how many
    ops in all, and the `top` by CPU time of their own, with their calls and microseconds per step."""
    trainer.begin()
    batches = [trainer.next_batch() for _ in range(2 * steps)]
    for batch, lr in batches[:steps]:
        trainer._optimizer_step(batch, lr)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        for batch, lr in batches[steps:]:
            trainer._optimizer_step(batch, lr)
    ops = [op for op in profile.key_averages() if op.key.startswith("aten::")]
    whole = sum(op.self_cpu_time_total for op in ops)
    calls = sum(op.count for op in ops) / steps
    print(f"\n{calls:.0f} aten ops a step, {whole / steps / 1000:.2f} ms of their own CPU")
    for op in sorted(ops, key=lambda op: -op.self_cpu_time_total)[:top]:
        own, share = op.self_cpu_time_total / steps, op.self_cpu_time_total / whole
        print(f"{op.key:40s} {op.count / steps:6.1f} calls {own:8.1f} us {100 * share:5.1f}%")


if __name__ == "__main__":
    sys.exit(main())
