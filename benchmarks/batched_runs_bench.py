"""Whether N runs of one shape train faster together (`transformer.batched.train_together`) than one after another.

    python benchmarks/batched_runs_bench.py [--quick] [--runs 1 2 4 8 16 32] [--threads 1 2] [--steps 40] \
        [--task NAME] [--repeats 1] [--json FILE]

Every run is the Train page's default run (`default_configs`: reverse at lengths 6-8, d_model 32, 4 heads, one layer
each side, batch 64, Adam with the paper's schedule, clipping at 1.0, the weight average), or with --task a task's
default run (what choosing it on Train fills in), run s with seed s, for --steps steps with early stopping off and a
metric row at the end only: the figures are of training steps. A
model-step is one run's step: its batch drawn, forward, loss, backward, clipping, Adam and the weight average.
- sequential: the N runs one after another, each through `Trainer.run`, as a worker trains them;
- together: the N runs through `train_together`, their forward and backward passes batched under vmap, each run's
  update its own.
Both sides run in this process, --repeats times for each N, the side that goes first alternating, each timed with
`time.perf_counter` and `time.process_time`: on a shared machine only the ratio of two sides measured in the same run
compares. Prints model-steps per second and CPU ms per model-step of each side and their ratio (together /
sequential; with --repeats, the median of each), the load average before and after, and with --json writes the rows
to FILE. tests/test_batched.py proves the two sides train the same runs.
"""

import argparse
import dataclasses
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from transformer.batched import train_together  # noqa: E402 (the repository root goes on the path first)
from transformer.run_configs import default_configs, run_configs  # noqa: E402
from transformer.task import REGISTRY  # noqa: E402
from transformer.training import Trainer  # noqa: E402

QUICK = {"runs": [1, 8], "steps": 20}


def runs_of(n: int, steps: int, task: str | None = None) -> list[Trainer]:
    """N Train-page default runs (or `task`'s default runs), seeds 0..N-1, of `steps` steps with no early stop and one
    metric row."""
    trainers = []
    for seed in range(n):
        if task is None:
            model, data, train = default_configs(seed, device="cpu")
        else:
            model, data, train = run_configs({**REGISTRY[task].default_run, "seed": seed, "device": "cpu"})
        train = dataclasses.replace(train, steps=steps, eval_every=steps + 1, early_stop=False, time_budget_s=1e9)
        trainers.append(Trainer(model, data, train))
    return trainers


def sequential(runs: list[Trainer]) -> None:
    for run in runs:
        run.run()


def together(runs: list[Trainer]) -> None:
    for _ in train_together(runs, [None] * len(runs)):
        pass


def timed(side, runs: list[Trainer]) -> tuple[float, float]:  # noqa: ANN001 (sequential or together)
    """Wall and process CPU seconds of `side` training `runs`."""
    wall, cpu = time.perf_counter(), time.process_time()
    side(runs)
    return time.perf_counter() - wall, time.process_time() - cpu


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help=f"N in {QUICK['runs']}, {QUICK['steps']} steps")
    parser.add_argument("--runs", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32], help="numbers of runs N")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="torch thread counts, in turn")
    parser.add_argument("--steps", type=int, default=40, help="steps of each run")
    parser.add_argument("--task", choices=sorted(REGISTRY), help="train this task's default run")
    parser.add_argument("--repeats", type=int, default=1, help="times each N is measured; the medians are printed")
    parser.add_argument("--json", type=Path, help="write the rows as JSON to this file")
    args = parser.parse_args(argv)
    if args.quick:
        vars(args).update(QUICK)
    print(
        f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}, {platform.node()}, {os.cpu_count()} CPUs, "
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, torch {torch.__version__}; "
        f"{args.steps} steps a run, task {args.task or 'the Train default'}, {args.repeats} repeat(s)",
        flush=True,
    )
    together(runs_of(2, 2, args.task))  # the first vmap's one-off costs, out of the timings
    print(
        f"{'threads':>7} {'N':>3} {'seq. steps/s':>12} {'tog. steps/s':>12} {'tog./seq.':>9} "
        f"{'seq. CPU ms/step':>16} {'tog. CPU ms/step':>16}",
        flush=True,
    )
    rows = []
    for threads in args.threads:
        torch.set_num_threads(threads)
        for i, n in enumerate(args.runs):
            sides = {"sequential": sequential, "together": together}
            steps = n * args.steps
            measured = []
            for repeat in range(args.repeats):
                order = list(sides)[:: -1 if (i + repeat) % 2 else 1]
                times = {name: timed(sides[name], runs_of(n, args.steps, args.task)) for name in order}
                measured.append({f"{name}_steps_per_s": steps / wall for name, (wall, _) in times.items()})
                measured[-1].update({f"{name}_cpu_ms_per_step": 1000 * cpu / steps for name, (_, cpu) in times.items()})
                measured[-1]["ratio"] = measured[-1]["together_steps_per_s"] / measured[-1]["sequential_steps_per_s"]
            row = {"threads": threads, "runs": n, "model_steps": steps}
            row.update({key: statistics.median(m[key] for m in measured) for key in measured[0]})
            rows.append(row)
            print(
                f"{threads:>7} {n:>3} {row['sequential_steps_per_s']:>12.1f} {row['together_steps_per_s']:>12.1f} "
                f"{row['ratio']:>9.2f} {row['sequential_cpu_ms_per_step']:>16.1f} "
                f"{row['together_cpu_ms_per_step']:>16.1f}",
                flush=True,
            )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.json:
        args.json.write_text(json.dumps({"steps": args.steps, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
