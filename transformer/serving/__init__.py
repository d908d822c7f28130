"""Serving training runs to many students at once, in four modules:

- `settings`: `ServerSettings`, the server's settings, read once from `LAB_*` environment variables;
- `run`: `Run`, the state of one run that pages read (status, losses, metric rows, snapshots, result, watchers);
- `worker`: the loop that trains a run in a worker process (or thread) and reports over a pipe, and the server's
  end of that pipe, which writes the reports into the `Run`;
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
