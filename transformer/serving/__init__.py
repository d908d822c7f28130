"""Serving training runs to many students at once, in six modules:

- `settings`: `ServerSettings`, the server's settings, read once from `LAB_*` environment variables;
- `run`: `Run`, the state of one run that pages read (status, losses, metric rows, snapshots, result, watchers);
- `protocol`: the typed messages a worker and the server send each other over the worker's pipe;
- `worker`: the worker's end: the loop that trains a run in a worker process (or thread) and reports;
- `worker_link`: the server's end, `WorkerLink`, which starts a worker, hands it a run, and writes the worker's
  reports into the `Run`;
- `registry`: `RunRegistry`, which joins identical runs, queues distinct ones for the training slots, and moves a
  `Chain` of runs (Compare's variants) on by itself.
"""

from .registry import (
    AddressBusy,
    AlreadyTraining,
    Chain,
    Place,
    QueueFull,
    RunRegistry,
    ServerBusy,
    network_address,
    run_key,
)
from .run import CONNECTED_GRACE, Run, RunStatus, unwatched
from .settings import ServerSettings, usable_cores

__all__ = [
    "CONNECTED_GRACE",
    "AddressBusy",
    "AlreadyTraining",
    "Chain",
    "Place",
    "QueueFull",
    "Run",
    "RunRegistry",
    "RunStatus",
    "ServerBusy",
    "ServerSettings",
    "network_address",
    "run_key",
    "unwatched",
    "usable_cores",
]
