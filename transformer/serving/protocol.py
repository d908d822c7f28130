"""The worker protocol: the messages the server and a training worker send each other over one duplex pipe.

    server -> worker   StartRuns (one run, or several trained together), then any number of Control, each for
                       one of those runs
    worker -> server   Ready once, when torch is imported and a first step's one-off costs are paid; then for each
                       run: Progress every REPORT_EVERY_S, NewRow at each metric row, Holding every HEARTBEAT_S while
                       paused, and last RunEnded; and Alive every ALIVE_EVERY_S while any trains (a held-out
                       evaluation may outlast the server's SILENCE_LIMIT_S on a busy server).

A message about one run names it by `run`, its index in StartRuns; the worker takes the next StartRuns once every
run of the last one has ended.

`worker.py` is the worker's end (it trains), `worker_link.py` the server's end (it writes the reports into the
`Run` pages read). Each message is a frozen dataclass, sent with plain pickle (`send`, `receive`). The pipe goes to a
worker process on the server, or to the server's gateway, which relays its bytes to the same loop in a Ray task on a
cluster (`ray_worker.py`): one protocol, two transports.
"""

import io
import pickle
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Literal

import torch

from ..model import ModelConfig
from ..tasks import DataConfig
from ..training import MetricRow, TrainConfig, TrainResult

Weights = dict[str, torch.Tensor]
ControlName = Literal["pause", "resume", "step_row", "stop"]


@dataclass(frozen=True)
class Caps:
    """What one run may take of its training slot, whatever its controls do; past either, it ends with its model
    kept (ServerSettings.max_run_s, max_total_pause_s)."""

    run_s: float  # wall-clock seconds from its first step's set-up, pauses included
    total_pause_s: float  # seconds paused, over all its pauses


# ---- server -> worker


@dataclass(frozen=True)
class StartRuns:
    """Train these runs, each within `caps`: several together when they share a `batched.together_key`."""

    runs: tuple[tuple[ModelConfig, DataConfig, TrainConfig], ...]
    caps: Caps


@dataclass(frozen=True)
class Control:
    """A student's control for run `run` in training; one that comes after the run's end is dropped."""

    run: int
    name: ControlName


# ---- worker -> server


@dataclass(frozen=True)
class Ready:
    """The worker can take a run."""


@dataclass(frozen=True)
class Progress:
    """The run is at `step`; the step losses and attention snapshots since the last Progress."""

    run: int
    step: int
    losses: list[float]
    attention: list[dict]


@dataclass(frozen=True)
class NewRow:
    """A metric row, the kept model's weights at it, and its training-dynamics record."""

    run: int
    row: MetricRow
    weights: Weights
    dynamics: dict


@dataclass(frozen=True)
class Holding:
    """The run is paused at `step`, and the worker still there."""

    run: int
    step: int


@dataclass(frozen=True)
class Alive:
    """The worker is still there, whatever its training thread is doing."""


@dataclass(frozen=True)
class RunEnded:
    """The run's end: a result or an error a student can read, its final weights, and why a limit ended it. The error
    and the notice are Messages where they have one (`transformer.i18n`: pickled as template and parameters), so a
    page shows them in its own language."""

    run: int
    result: TrainResult | None
    error: str | None
    weights: Weights | None
    notice: str | None


PipeMessage = StartRuns | Control | Ready | Progress | NewRow | Holding | Alive | RunEnded


class _Pickler(pickle.Pickler):
    """Plain pickle, but a CPU tensor goes as a numpy array of its values, rebuilt by `torch.from_numpy`: torch's own
    reduction runs its serializer for each tensor: a metric row's weights (the default model's 33 tensors) took
    4-56 ms to write and 50 ms to read on a loaded 2-core VM, against 1 and 0.1 ms as arrays (docs/benchmarks.md)."""

    def reducer_override(self, obj: object) -> object:
        if type(obj) is torch.Tensor and obj.device.type == "cpu" and obj.dtype in _NUMPY_DTYPES:
            if not (obj.requires_grad or obj.is_conj() or obj.is_neg()) and obj.layout == torch.strided:
                return torch.from_numpy, (obj.numpy(),)
        return NotImplemented


_NUMPY_DTYPES = {torch.float64, torch.float32, torch.float16, torch.int64, torch.int32, torch.int16, torch.int8,
                 torch.uint8, torch.bool}  # fmt: skip


def send(conn: Connection, message: PipeMessage) -> None:
    """Send with plain pickle, a tensor as its values (multiprocessing's pickler would share its memory, which
    only works between processes that multiprocessing itself started)."""
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(message)
    conn.send_bytes(buffer.getbuffer())


def receive(conn: Connection) -> PipeMessage:
    return pickle.loads(conn.recv_bytes())  # only ever from the other end of this server's own pipe
