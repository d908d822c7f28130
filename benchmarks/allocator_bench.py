"""What a training worker's allocator settings (`serving.worker.keep_freed_memory`) save: the same runs trained in
fresh processes with glibc's default allocator and with the worker's settings, the two alternating, each process
as a worker prepares itself (one torch thread, a warm-up step). Prints each process's training CPU seconds, page
faults a step, peak memory and the memory left after `release_memory`, then the median ratio of the CPU seconds.

    python benchmarks/allocator_bench.py [--task reverse] [--seeds 0 1 2] [--rounds 3]
"""

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def child(task: str, seeds: list[int], tuned: bool) -> dict:
    """Train `task`'s default run for each of `seeds` in this process; its figures."""
    sys.path.insert(0, str(ROOT))
    import torch

    from transformer.run_configs import default_configs, run_configs
    from transformer.serving.worker import keep_freed_memory, release_memory, resident_mb
    from transformer.tasks import GALLERY
    from transformer.training import Trainer, warm_up

    torch.set_num_threads(1)
    if tuned:
        keep_freed_memory()
    warm_up().join()
    cpu_s, steps, faults = 0.0, 0, resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for seed in seeds:
        configs = (
            run_configs({**GALLERY[task].default_run, "seed": seed, "device": "cpu"})
            if task in GALLERY
            else default_configs(seed, device="cpu", task=task)
        )
        trainer = Trainer(*configs)
        began = time.process_time()
        trainer.run()
        cpu_s += time.process_time() - began
        steps += trainer.result.steps
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    release_memory()
    return {
        "tuned": tuned,
        "cpu_s": round(cpu_s, 3),
        "steps": steps,
        "faults_per_step": round(faults / steps, 1),
        "peak_mb": round(peak_mb),
        "after_release_mb": round(resident_mb() or 0),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="reverse")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", choices=["default", "tuned"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.task, args.seeds, args.child == "tuned")))
        return
    ratios = []
    for round_ in range(args.rounds):
        figures = {}
        for arm in ("default", "tuned") if round_ % 2 == 0 else ("tuned", "default"):
            command = [sys.executable, __file__, "--task", args.task, "--seeds", *map(str, args.seeds), "--child", arm]
            figures[arm] = json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout)
            print(json.dumps({"round": round_, **figures[arm]}), flush=True)
        ratios.append(figures["tuned"]["cpu_s"] / figures["default"]["cpu_s"])
    print(f"training CPU, the worker's settings / glibc's defaults: median {statistics.median(ratios):.3f}", end=" ")
    print(f"({', '.join(f'{r:.3f}' for r in ratios)}), {args.task}, seeds {args.seeds}")


if __name__ == "__main__":
    main()
