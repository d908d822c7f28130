"""What recording the training dynamics (embeddings and per-layer gradient norms at each metric row) costs.

Trains the Train page's default run (reverse at lengths 6-8, its metric-row cadence) for a fixed number of steps,
with and without the recording, as pairs of runs with the same seed in alternating order, one torch thread. Prints
each pair's training seconds, the median ratio (with / without), and the median share of the recording runs'
training time spent recording (timed inside them, so it is steadier on a busy machine than the ratio) as JSON.

    python benchmarks/dynamics_bench.py [--seeds 5] [--steps 200]
"""

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import transformer.training  # noqa: E402 (the repository root goes on the path first)
from transformer.dynamics import Dynamics  # noqa: E402
from transformer.run_configs import run_configs  # noqa: E402
from transformer.training import Trainer  # noqa: E402

DATA = dict(task="reverse", min_len=6, max_len=8, n_symbols=10)


class NoDynamics(Dynamics):
    """Records nothing."""

    def read_gradients(self, step: int) -> None:
        pass

    def record(self, step: int) -> dict:
        return {}


class TimedDynamics(Dynamics):
    """Records, adding up the seconds it takes in `spent`."""

    spent = 0.0

    def read_gradients(self, step: int) -> None:
        began = time.perf_counter()
        super().read_gradients(step)
        TimedDynamics.spent += time.perf_counter() - began

    def record(self, step: int) -> dict:
        began = time.perf_counter()
        try:
            return super().record(step)
        finally:
            TimedDynamics.spent += time.perf_counter() - began


def train_seconds(seed: int, steps: int, recording: bool) -> float:
    """Training seconds (pauses and the final evaluation left out) of one run of `steps` steps; a recording run
    leaves the seconds spent recording in `TimedDynamics.spent`."""
    TimedDynamics.spent = 0.0
    transformer.training.Dynamics = TimedDynamics if recording else NoDynamics
    try:
        return (
            Trainer(*run_configs({**DATA, "seed": seed, "steps": steps, "early_stop": False, "device": "cpu"}))
            .run()
            .seconds
        )
    finally:
        transformer.training.Dynamics = Dynamics


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    train_seconds(0, 5, True)  # one-off costs (fused Adam's first use) paid outside the pairs
    pairs = []
    for seed in range(args.seeds):
        order = (True, False) if seed % 2 == 0 else (False, True)
        seconds, recording_s = {}, 0.0
        for recording in order:
            seconds[recording] = train_seconds(seed, args.steps, recording)
            recording_s = TimedDynamics.spent if recording else recording_s
        pairs.append({"seed": seed, "with_s": seconds[True], "without_s": seconds[False], "recording_s": recording_s})
        with_s, without_s = seconds[True], seconds[False]
        print(f"seed {seed}: {with_s:.2f} s with ({recording_s:.4f} s recording), {without_s:.2f} s without")
    ratio = statistics.median(p["with_s"] / p["without_s"] for p in pairs)
    share = statistics.median(p["recording_s"] / p["with_s"] for p in pairs)
    summary = {"steps": args.steps, "median_ratio": round(ratio, 4), "median_recording_share": round(share, 5)}
    print(json.dumps({**summary, "pairs": pairs}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
