"""Serving training runs to many students at once:

- `settings`: `ServerSettings`, the server's settings, read once from `LAB_*` environment variables;
- `run`: `Run`, the state of one run that pages read (status, losses, metric rows, snapshots, result, watchers);
- `protocol`: the typed messages a worker and the server send each other over the worker's pipe;
- `worker`: the worker's end: the loop that trains a run, or runs of one shape together, in a worker process (or
  thread) and reports;
- `worker_link`: the server's end, `WorkerLink`, which starts a worker, hands it a run, and writes the worker's
  reports into the `Run`;
- `ray_worker`: the same worker on a Ray cluster (`LAB_RAY_ADDRESS`): a task per run that runs the worker's loop,
  and the server's one gateway process that relays the protocol between the server and each task
  (`worker_link.RayGateway` is the server's end of it);
- `waits`: how long a queued run waits for a slot, from the steps recent runs of each kind took and the pace and
  budgets of the runs training;
- `lost_runs`: `LostRuns`, the Train runs in flight written down for the next server, which tells their students
  a restart lost them;
- `registry`: `RunRegistry`, which joins identical runs, queues distinct ones for the training slots, and moves a
  `Chain` of runs (Compare's variants) on by itself; `finished_run`, a run trained to its end in this process.

The public names load on first use (PEP 562), as in `transformer`: a Ray gateway process imports
`transformer.serving.ray_worker` without torch.
"""

from ..lazy import lazy_exports

_WHERE = {  # public name -> the module that defines it
    "AddressBusy": "registry",
    "AlreadyTraining": "registry",
    "Chain": "registry",
    "Place": "registry",
    "QueueFull": "registry",
    "RunRegistry": "registry",
    "ServerBusy": "registry",
    "finished_run": "registry",
    "network_address": "registry",
    "run_key": "registry",
    "CONNECTED_GRACE": "run",
    "Run": "run",
    "RunStatus": "run",
    "unwatched": "run",
    "ServerSettings": "settings",
    "data_dir": "settings",
    "LostRun": "lost_runs",
    "LostRuns": "lost_runs",
    "usable_cores": "settings",
}
__all__ = sorted(_WHERE)

__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
