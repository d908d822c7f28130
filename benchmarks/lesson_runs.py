"""The figures the first lesson (docs/lesson.md, `LESSON` on Home) states, measured.

Step 2: how long Train-page runs last, with the defaults and with the changes the lesson names for a run a student
can pause and step (one torch thread, as the app trains). Step 6: what Train-page models (reverse, lengths 6-8) do
on shorter inputs, and what the shipped reverse model does past its training lengths: exact match and mean output
length per input length, 100 unseen inputs each (`transformer.lengths.score_lengths`, as the Length test page).

    python benchmarks/lesson_runs.py [--seeds 0 1 2]
"""

import argparse
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from transformer import load_checkpoint  # noqa: E402 (the repository root goes on the path first)
from transformer.lengths import score_lengths  # noqa: E402
from transformer.run_configs import default_configs  # noqa: E402
from transformer.training import Trainer  # noqa: E402

RUNS = {  # step 2's runs: the defaults, which end before a Pause lands, and the run of one's own the lesson names
    "defaults": {},
    "task sort, longest input 12": {"task": "sort", "max_len": 12},
}


def length_line(scores) -> str:
    """`length: exact match, mean output length` for each row of a Length test table."""
    return "; ".join(
        f"{r.length}: {r.exact_match:.0%}, {r.output_len:.1f} symbols" for r in scores.itertuples(index=False)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    torch.set_num_threads(1)
    Trainer(*default_configs(99, device="cpu", steps=5)).run()  # the process's one-off costs, outside every timing
    print("Step 2: Train-page runs, one torch thread (seconds of training, steps, why they ended)")
    trained = {}
    for label, changes in RUNS.items():
        for seed in args.seeds:
            trainer = Trainer(*default_configs(seed, device="cpu", **changes))
            result = trainer.run()
            print(f"  {label}, seed {seed}: {result.seconds:.1f} s, {result.steps} steps, {result.reason}")
            if label == "defaults":
                trained[seed] = trainer
    print("Step 6: Train-page models (reverse, lengths 6-8) at shorter inputs: exact match, mean output length")
    for seed, trainer in trained.items():
        report = score_lengths(trainer.model.eval(), trainer.vocab, trainer.data.config, range(1, 9))
        print(f"  seed {seed}: {length_line(report.scores)}")
    shipped = load_checkpoint(ROOT / "checkpoints" / "reverse.pt")
    report = score_lengths(shipped.model.eval(), shipped.vocab, shipped.task, range(1, 15))
    trained = f"{shipped.task.min_len}-{shipped.task.max_len}"
    print(f"Step 6: shipped reverse (trained on lengths {trained}): {length_line(report.scores)}")


if __name__ == "__main__":
    main()
