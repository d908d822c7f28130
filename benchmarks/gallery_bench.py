"""Every gallery task solved by its default run: the settings it states (`transformer.gallery`, each task's
`defaults`), trained on the CPU until all its held-out sequences are right or its step budget runs out. Prints a line
per task (steps, training seconds, held-out exact match re-scored by greedy decoding) and, last, the rows as JSON.
Exits 1 if any task is left unsolved.

    python benchmarks/gallery_bench.py [--tasks add translate ...] [--seed 0] [--threads 2]
"""

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from transformer.evaluation import exact_match  # noqa: E402
from transformer.run_configs import run_configs  # noqa: E402 (the repository root goes on the path first)
from transformer.tasks import GALLERY  # noqa: E402
from transformer.training import Trainer  # noqa: E402


def solve(name: str, seed: int) -> dict:
    """Train task `name`'s default run with `seed`; its steps, seconds and held-out exact match."""
    settings = {**GALLERY[name].default_run, "seed": seed, "device": "cpu", "time_budget_s": 3600.0}
    trainer = Trainer(*run_configs(settings, shared=False))
    result = trainer.run()
    vocab, held_out = trainer.vocab, trainer.data.valid
    return {
        "task": name,
        "steps": result.steps,
        "budget": settings["steps"],
        "seconds": round(result.seconds, 1),
        "held_out": held_out.src.size(0),
        "exact_match": exact_match(trainer.model, held_out, vocab.bos_id, vocab.eos_id),
        "parameters": trainer.model.num_parameters(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", choices=list(GALLERY), default=list(GALLERY))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = []
    for name in args.tasks:
        row = solve(name, args.seed)
        rows.append(row)
        print(
            f"{name:<10} {row['steps']:>5} of {row['budget']} steps  {row['seconds']:>7.1f} s  "
            f"held-out {row['exact_match']:.1%} of {row['held_out']}",
            flush=True,
        )
    print(json.dumps(rows))
    return 0 if all(row["exact_match"] == 1.0 for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
