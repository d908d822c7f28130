"""How many Train-page runs a server finishes per minute, by how it runs them side by side.

Trains the same batch of distinct runs (the Train page's defaults, one seed each, one torch thread per run, as the
app sets) with K runs at a time:
- as threads in one process, the way the app's server runs them (K = 1, 2, 3, 4);
- in a pool of K worker processes (started and warmed before the clock starts; their start-up is shown apart).
Prints one line per setting (runs per minute, training steps per second, peak memory) and a JSON summary.

    python benchmarks/throughput_bench.py [--runs 8]
"""

import argparse
import json
import multiprocessing
import os
import resource
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from transformer.run_configs import default_configs  # noqa: E402 (the repository root goes on the path first)
from transformer.training import Trainer  # noqa: E402


def train_one(seed: int) -> int:
    """One Train-page run with this seed and the page's other defaults; returns its steps."""
    torch.set_num_threads(1)
    return Trainer(*default_configs(seed, device="cpu")).run().steps


def with_threads(seeds: list[int], k: int) -> tuple[float, int]:
    """Seconds to train every seed, K at a time on threads of this process, and the steps trained."""
    pending, steps, lock = list(seeds), [], threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                if not pending:
                    return
                seed = pending.pop(0)
            steps.append(train_one(seed))

    start = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(k)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - start, sum(steps)


def with_processes(seeds: list[int], k: int) -> tuple[float, int, float]:
    """Seconds to train every seed in a pool of K processes, the steps trained, and the pool's start-up seconds."""
    started = time.perf_counter()
    with ProcessPoolExecutor(k, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(train_one, [10_000 + i for i in range(k)]))  # each worker imports torch and warms up
        ready = time.perf_counter()
        steps = sum(pool.map(train_one, seeds))
        done = time.perf_counter()
    return done - ready, steps, ready - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=8, help="distinct runs (seeds) in the batch")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    seeds = list(range(args.runs))
    train_one(99)  # this process's one-off costs, outside every timing
    print(f"{args.runs} Train-page runs, {os.cpu_count()} CPUs, torch {torch.__version__}", flush=True)
    results = []
    for k in (1, 2, 3, 4):
        seconds, steps = with_threads(seeds, k)
        results.append({"how": "threads", "k": k, "seconds": round(seconds, 2), "steps": steps})
    for k in (2,):
        seconds, steps, startup = with_processes(seeds, k)
        results.append(
            {
                "how": "processes",
                "k": k,
                "seconds": round(seconds, 2),
                "steps": steps,
                "pool_start_s": round(startup, 2),
            }
        )
    peak_child_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    peak_self_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    for r in results:
        r["runs_per_min"] = round(60 * args.runs / r["seconds"], 1)
        r["steps_per_s"] = round(r["steps"] / r["seconds"], 1)
        extra = f", pool start {r['pool_start_s']} s" if "pool_start_s" in r else ""
        print(f"{r['how']:>9} x{r['k']}: {r['runs_per_min']:5.1f} runs/min, {r['steps_per_s']:6.1f} steps/s{extra}")
    print(f"peak memory: this process {peak_self_mb:.0f} MB, largest worker process {peak_child_mb:.0f} MB")
    print(
        json.dumps(
            {
                "runs": args.runs,
                "results": results,
                "peak_self_mb": round(peak_self_mb),
                "peak_worker_mb": round(peak_child_mb),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
