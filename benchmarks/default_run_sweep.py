"""The cheapest run that solves a task: steps and CPU time to 100% of the held-out set over a grid of settings.

Each setting of the grid (a cartesian product, on top of the Train form's settings once the task is chosen:
`settings.default_run`) trains as the Train form builds it (`run_configs`), on one torch thread, until the whole
held-out set is right or the run has spent --cap-s seconds of CPU (the training thread's, `time.thread_time`). The
steps to solve are the seed's whatever the load; a busy machine makes every step dearer, so a run's cost is also
given in reference steps: its CPU time (set-up, checks and steps, each step at the 10th percentile of its steps'
cost) over that of one step of the Train form's default run (reverse, the default model, batch 64) timed just
after it. Round one trains every setting on the first seed; the --keep cheapest that solved then train on every
other seed. One JSON line per setting and round (per seed: steps, held-out exact match, CPU and wall seconds,
reference steps; seeds solved), and last the settings that solved on every seed, cheapest (slowest seed) first.

    python benchmarks/default_run_sweep.py --task caesar --seeds 0 1 2 --grid d_model=32,64 lr=0.003,0.01
"""

import argparse
import itertools
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from transformer.run_configs import run_configs  # noqa: E402 (the repository root goes on the path first)
from transformer.serving.worker import keep_freed_memory  # noqa: E402
from transformer.settings import default_run  # noqa: E402
from transformer.tasks import task_names  # noqa: E402
from transformer.training import Trainer  # noqa: E402

REFERENCE_STEPS = 30


def base_run(task: str) -> dict:
    """The run a task starts from: the Train form's settings once the task is chosen (`settings.default_run`)."""
    return {**default_run(task), "device": "cpu"}


class TimedTrainer(Trainer):
    """A Trainer that notes the CPU seconds of each optimizer step."""

    def _optimizer_step(self, batch, lr):  # noqa: ANN001, ANN202 (Trainer's own)
        began = time.thread_time()
        try:
            return super()._optimizer_step(batch, lr)
        finally:
            self.step_cpu_s.append(time.thread_time() - began)


def solve(settings: dict, seed: int, cap_s: float) -> dict:
    """Train `settings` with `seed` until solved, its step budget, or `cap_s` CPU seconds: its steps, whether it
    solved its held-out set, its CPU and wall seconds (set-up included), and the CPU cost of a step (the 10th
    percentile of its steps': a busy machine slows some steps, not all)."""
    cpu, wall = time.thread_time(), time.perf_counter()
    model, data, train = run_configs({**settings, "seed": seed})
    trainer = TimedTrainer(model, data, replace(train, time_budget_s=float("inf")))  # only --cap-s ends it
    trainer.step_cpu_s = []
    result = trainer.run(stop=lambda: time.thread_time() - cpu > cap_s)
    cpu_s, wall_s = time.thread_time() - cpu, time.perf_counter() - wall
    steps = sorted(trainer.step_cpu_s)
    step_s = steps[len(steps) // 10]
    estimate_s = cpu_s - sum(steps) + result.steps * step_s
    return {
        "steps": result.steps,
        "solved": result.exact_match == 1.0,
        "exact_match": result.exact_match,
        "cpu_s": cpu_s,
        "wall_s": wall_s,
        "step_s": step_s,
        "estimate_s": estimate_s,
        "reference_steps": estimate_s / reference_step_s(),
    }


def reference_step_s() -> float:
    """The CPU seconds of one step of the Train form's default run (reverse, the default model, batch 64), the 10th
    percentile of REFERENCE_STEPS timed now: the unit that compares runs measured under different loads."""
    trainer = TimedTrainer(*run_configs({**base_run("reverse"), "steps": REFERENCE_STEPS, "early_stop": False}))
    trainer.step_cpu_s = []
    trainer.run()
    return sorted(trainer.step_cpu_s)[REFERENCE_STEPS // 10]


def parse_grid(items: list[str]) -> dict[str, list]:
    """name=v1,v2 items as {name: [values]}, each value an int, a float, True or False, or a word."""

    def value(text: str) -> int | float | bool | str:
        if text in ("True", "False"):
            return text == "True"
        for kind in (int, float):
            try:
                return kind(text)
            except ValueError:
                pass
        return text

    return {name: [value(v) for v in values.split(",")] for name, values in (item.split("=") for item in items)}


def summary(changes: dict, runs: list[dict]) -> dict:
    """One setting's line: its changes, and per seed its steps, CPU seconds, and the estimate of CPU seconds on a
    quiet machine (each step at its 10th percentile cost); the CPU milliseconds of a step; seeds solved."""
    return {
        **changes,
        "steps": [r["steps"] for r in runs],
        "cpu_s": [round(r["cpu_s"], 2) for r in runs],
        "estimate_s": [round(r["estimate_s"], 2) for r in runs],
        "step_ms": round(1000 * min(r["step_s"] for r in runs), 2),
        "reference_steps": [round(r["reference_steps"]) for r in runs],
        "wall_s": [round(r["wall_s"], 2) for r in runs],
        "exact_match": [round(r["exact_match"], 3) for r in runs],
        "solved": sum(r["solved"] for r in runs),
        "seeds": len(runs),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=task_names(), required=True)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--grid", nargs="*", default=[], help="setting=v1,v2 ... (settings of the Train form)")
    parser.add_argument("--cap-s", type=float, default=10.0, help="CPU seconds after which a run counts unsolved")
    parser.add_argument("--keep", type=int, default=3, help="settings that go on to every seed")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    keep_freed_memory()  # the allocator as a training worker sets it
    base, grid = base_run(args.task), parse_grid(args.grid)
    solve({**base, "steps": 2}, 99, args.cap_s)  # this process's one-off costs, outside every timing
    first, rest = args.seeds[0], args.seeds[1:]
    rounds = []
    for values in itertools.product(*grid.values()):
        changes = dict(zip(grid, values))
        try:
            run = solve({**base, **changes}, first, args.cap_s)
        except ValueError as error:  # settings that do not fit together, or not within the form's bounds
            print(json.dumps({**changes, "refused": str(error)}), flush=True)
            continue
        rounds.append((changes, [run]))
        print(json.dumps(summary(changes, [run])), flush=True)
    solved = sorted((r for r in rounds if r[1][0]["solved"]), key=lambda r: r[1][0]["reference_steps"])[: args.keep]
    finalists = []
    for changes, runs in solved:
        runs += [solve({**base, **changes}, seed, args.cap_s) for seed in rest]
        finalists.append(summary(changes, runs))
        print(json.dumps({"round": "all seeds", **finalists[-1]}), flush=True)
    best = sorted((f for f in finalists if f["solved"] == f["seeds"]), key=lambda f: max(f["reference_steps"]))
    print(json.dumps({"task": args.task, "solved_on_every_seed": best}))
    return 0 if best else 1


if __name__ == "__main__":
    sys.exit(main())
