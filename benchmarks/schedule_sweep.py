"""Steps and time the Train page's default run takes to solve its held-out set, over a grid of training settings.

Each setting (a cartesian product of the values given) trains the Train page's default run (reverse, lengths 6-8,
the default model, one torch thread, as the app sets) for every seed, and reports per setting: steps to 100%
exact match on the 1,000 held-out sequences (greedy decoding, checked at the end), the median training time, and
how many seeds solved it.

    python benchmarks/schedule_sweep.py --seeds 0 1 2 3 4 --grid lr=0.005,0.01 warmup=30,100 batch_size=64,128
"""

import argparse
import itertools
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.default_run_sweep import parse_grid  # noqa: E402 (the repository root goes on the path first)
from transformer.run_configs import default_configs  # noqa: E402
from transformer.training import Trainer  # noqa: E402


def default_run(seed: int, **changes: float) -> dict:
    """The Train page's default run with `changes` (model or training fields): its steps, training time, and
    held-out exact match."""
    result = Trainer(*default_configs(seed, device="cpu", **changes)).run()
    return {"steps": result.steps, "seconds": result.seconds, "exact_match": result.exact_match}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--grid", nargs="*", default=[], help="name=v1,v2 ... (ModelConfig or TrainConfig fields)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    grid = parse_grid(args.grid)
    default_run(99, steps=5)  # this process's one-off costs, outside every timing
    for values in itertools.product(*grid.values()):
        settings = dict(zip(grid, values))
        runs = [default_run(seed, **settings) for seed in args.seeds]
        summary = {
            **settings,
            "steps": [r["steps"] for r in runs],
            "median_steps": statistics.median(r["steps"] for r in runs),
            "median_s": round(statistics.median(r["seconds"] for r in runs), 2),
            "solved": sum(r["exact_match"] == 1.0 for r in runs),
        }
        print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
