"""A training worker's memory around the largest run the Train form allows, and what starting a worker costs.

    PYTHONPATH=. python benchmarks/worker_memory_bench.py [STEPS]

Starts a worker process as the server does, trains the run there (STEPS steps, default 10), and prints the time
from start to ready, the worker's resident set when ready, its peak during the run (polled every 50 ms) and what it
holds once it has reported the run's end, which is what `LAB_WORKER_MAX_MB` is checked against.
"""

import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo root: the package

from transformer.run_configs import run_configs  # noqa: E402
from transformer.serving import worker_link as worker_link_module  # noqa: E402
from transformer.serving.protocol import Caps  # noqa: E402
from transformer.serving.run import Run  # noqa: E402
from transformer.serving.worker_link import WorkerLink  # noqa: E402

# The Train form's largest run (TRAIN_FORM_LIMITS): longest inputs, widest model, the biggest batch MAX_RUN_TRAIN_BYTES
# lets it take, no causal mask.
DATA = {"task": "reverse", "min_len": 24, "max_len": 24, "n_symbols": 30, "seed": 0}
MODEL = {"d_model": 128, "n_heads": 8, "n_layers": 3, "d_ff": 512, "dropout": 0.0, "causal_mask": False}
TRAIN = {"early_stop": False, "batch_size": 33, "lr": 0.005, "warmup": 100, "time_budget_s": 120, "seed": 0}


def peak_while(run: Run, worker: WorkerLink) -> list[float]:
    """Poll the worker's resident set until `run` ends; the list holds the peak so far."""
    peak = [0.0]

    def poll() -> None:
        while not run.done:
            peak[0] = max(peak[0], worker.resident_mb() or 0.0)
            time.sleep(0.05)

    threading.Thread(target=poll, daemon=True).start()
    return peak


def main(steps: int) -> None:
    worker_link_module.SILENCE_LIMIT_S = 600.0  # the run's last evaluation sends nothing, and is slow on a busy machine
    began = time.perf_counter()
    worker = WorkerLink(1, Caps(3600.0, 3600.0))
    if not worker.wait_ready():
        sys.exit("the worker did not start")
    print(f"start to ready: {time.perf_counter() - began:.1f} s; resident when ready: {worker.resident_mb():.0f} MB")
    run = Run(*run_configs({**DATA, **MODEL, **TRAIN, "steps": steps}), idle_timeout_s=3600.0)
    run.touch("bench")
    peak = peak_while(run, worker)
    worker.relay([run])
    print(f"{run.result.steps} steps ({run.result.reason}): peak {peak[0]:.0f} MB, after {worker.resident_mb():.0f} MB")
    worker.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
