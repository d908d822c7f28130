"""`python -m transformer.experiments [key ...]` reruns the ready-made experiments and writes the result sets the
Compare page ships with to checkpoints/experiments/<key>.json.
"""

import sys
import time
from collections.abc import Sequence

import torch

from .definitions import READY
from .files import write_shipped
from .runs import run_experiment


def main(keys: Sequence[str] = ()) -> None:
    """Rerun the ready-made experiments named in `keys` (all by default) and write their result sets.

    The time budget is lifted so that every variant trains all its steps, however busy the machine is.
    """
    torch.set_num_threads(1)  # the models are tiny: one thread is fastest on a shared CPU
    for key in keys or READY:
        if key not in READY:
            raise SystemExit(f"unknown experiment {key!r}; choose from: {', '.join(READY)}")
        start, experiment = time.perf_counter(), READY[key]
        experiment = experiment.changed("train", time_budget_s=3600.0)
        run = run_experiment(experiment, lambda v: print(f"  {v.label}: {v.result}", flush=True))
        path = write_shipped(run)
        print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KB) in {time.perf_counter() - start:.0f} s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
