"""Training in worker processes: a run's steps run in a process of its own, so that a server drawing many
students' pages never holds the interpreter lock (GIL) the training loop takes back after every tensor operation.

A `WorkerPool` keeps a few processes ready (torch imported, the first step's one-off costs paid). A
`WorkerTrainingJob` is a `TrainingJob` whose steps run in one of them: the job's thread in the server mirrors
what the worker reports (the step, every step's loss, metric rows, model snapshots, the end) and forwards Pause,
Resume, Step and Stop. Pages read it exactly as they read a job that trains on a thread.
"""

import copy
import os
import pickle
import socket
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import torch

from .model import ModelConfig
from .tasks import DataConfig
from .training import RunFailed, TrainConfig, Trainer, TrainingJob, warm_up

PACKAGE_ROOT = Path(__file__).resolve().parent.parent  # where `transformer` is imported from
REPORT_EVERY_S = 0.05  # how often a worker reports its run's progress to the server
READY_TIMEOUT_S = 60.0  # how long a new worker may take to import torch and pay its first step's costs
CONTROLS = ("pause", "resume", "step_row", "stop")  # what the server may ask of a worker's run
Update = dict[str, Any]


class WorkerLost(RunFailed):
    """A worker process ended in the middle of a run."""


def _send(conn: Connection, message: object) -> None:
    conn.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))


def _receive(conn: Connection) -> Any:
    return pickle.loads(conn.recv_bytes())  # only ever from the other end of this process's own pipe


def serve(conn: Connection, torch_threads: int = 1) -> None:
    """A worker process's loop: train each run the server sends, one at a time, reporting as it goes. Ends when
    the server closes its end of the pipe (or exits)."""
    torch.set_num_threads(torch_threads)
    warm_up().join()
    try:
        _send(conn, "ready")
        while True:
            message = _receive(conn)
            if isinstance(message, tuple) and message[0] == "train":  # a control for a run that has ended: dropped
                job = TrainingJob(*message[1:])
                _report(job.start(), conn)
    except (EOFError, OSError, KeyboardInterrupt):
        return


def _report(job: TrainingJob, conn: Connection) -> None:
    """Send the server what is new in `job` every REPORT_EVERY_S until it has ended, obeying its controls."""
    sent_losses = sent_rows = sent_maps = 0
    while True:
        ended = job.done  # read first: what follows is then complete
        while conn.poll():
            control = _receive(conn)
            if control in CONTROLS:
                getattr(job, control)()
        losses, rows, maps = job.step_losses(), job.rows(), job.attention_snapshots
        snapshot = job.model_snapshot() if len(rows) > sent_rows else None
        update = {
            "step": job.step,
            "status": job.status,
            "losses": losses[sent_losses:],
            "rows": rows[sent_rows:],
            "maps": maps[sent_maps:],
            "snapshot": None if snapshot is None else snapshot.state_dict(),
        }
        sent_losses, sent_rows, sent_maps = len(losses), len(rows), len(maps)
        if ended:
            update["result"], update["error"] = job.result, job.error
            trainer = job.trainer
            update["weights"] = None if trainer is None else (trainer.model.state_dict(), trainer.network.state_dict())
        _send(conn, update)
        if ended:
            return
        time.sleep(REPORT_EVERY_S)


class Worker:
    """One worker process and the server's end of its pipe.

    A fresh interpreter (`python -m transformer.workers`), not a fork of the server (whose threads may hold locks)
    nor multiprocessing's spawn (which would run the server's main script, a Streamlit page, again).
    """

    def __init__(self, torch_threads: int):
        ours, theirs = socket.socketpair()
        path = os.pathsep.join(filter(None, [str(PACKAGE_ROOT), os.environ.get("PYTHONPATH")]))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "transformer.workers", str(theirs.fileno()), str(torch_threads)],
            pass_fds=[theirs.fileno()],
            env={**os.environ, "PYTHONPATH": path},
            stdin=subprocess.DEVNULL,
        )
        theirs.close()
        self.conn = Connection(ours.detach())

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> bool:
        """Wait for the worker to say it is ready (torch imported, the first step's costs paid)."""
        try:
            return self.conn.poll(timeout_s) and _receive(self.conn) == "ready"
        except (EOFError, OSError):
            return False

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def close(self) -> None:
        self.conn.close()
        self.process.terminate()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()


class WorkerPool:
    """`size` worker processes, one per training slot, started and ready when the pool is made (a few seconds),
    so that a run starts at once."""

    def __init__(self, size: int, torch_threads: int = 1):
        self.size, self.torch_threads = size, torch_threads
        self._lock = threading.Lock()
        self._ready: list[Worker] = []
        for worker in [Worker(torch_threads) for _ in range(size)]:  # all started before any is waited for
            if worker.wait_ready():
                self._ready.append(worker)
            else:
                worker.close()

    def take(self) -> Worker:
        """A ready worker, or a new one (its start takes a few seconds) when none is. Raises WorkerLost when a new
        one does not become ready."""
        with self._lock:
            while self._ready:
                worker = self._ready.pop()
                if worker.alive:
                    return worker
                worker.close()
        worker = Worker(self.torch_threads)
        if not worker.wait_ready():
            worker.close()
            raise WorkerLost("the training process could not start")
        return worker

    def give_back(self, worker: Worker, clean: bool) -> None:
        """Keep a worker whose run ended `clean`ly for the next run; close any other."""
        with self._lock:
            if clean and worker.alive and len(self._ready) < self.size:
                self._ready.append(worker)
                return
        worker.close()

    def close(self) -> None:
        with self._lock:
            workers, self._ready = self._ready, []
        for worker in workers:
            worker.close()


class WorkerTrainingJob(TrainingJob):
    """A `TrainingJob` whose steps run in a process from `workers`; this job's thread mirrors the run. A worker that
    sends nothing for `silence_limit_s` (it reports every REPORT_EVERY_S, paused or not) is closed and the run
    ends with a message, so a hung worker never holds a slot."""

    silence_limit_s = 30.0

    def __init__(
        self,
        model_config: ModelConfig,
        data_config: DataConfig,
        train_config: TrainConfig,
        workers: WorkerPool,
        **kwargs: Any,
    ):
        super().__init__(model_config, data_config, train_config, **kwargs)
        self._workers = workers
        self.worker: Worker | None = None  # the process that trains this run, once it has started
        self._conn: Connection | None = None  # the worker's pipe while it trains this run
        self._send_lock = threading.Lock()

    def stop(self, wait_s: float = 0.0) -> None:
        self._stop.set()  # before the control: a worker not attached yet is told on attaching
        self._control("stop")
        super().stop(wait_s)

    def pause(self) -> None:
        super().pause()
        self._control("pause")

    def resume(self) -> None:
        super().resume()
        self._control("resume")

    def step_row(self) -> None:
        super().step_row()
        self._control("step_row")

    def _control(self, name: str) -> None:
        with self._send_lock:
            if self._conn is not None:
                try:
                    _send(self._conn, name)
                except OSError:  # the worker has gone: the job's thread reports it
                    pass

    def _train(self) -> None:
        worker, clean = self._workers.take(), False
        self.worker = worker
        try:
            with self._send_lock:
                self._conn = worker.conn
                _send(worker.conn, ("train", self.model_config, self.data_config, self.train_config))
                if self._paused:
                    _send(worker.conn, "pause")
                if self._stop.is_set():
                    _send(worker.conn, "stop")
            # Meanwhile, the run's data and a model of its shape, here: pages decode examples with them and load
            # the weights the worker sends. Both are what the worker builds from the same settings and seed.
            trainer = Trainer(self.model_config, self.data_config, self.train_config)
            trainer.optimizer = None
            with self._lock:
                self.trainer = trainer
            heard = time.monotonic()
            while True:
                if self.idle:
                    self._control("stop")
                try:
                    if not worker.conn.poll(0.5):
                        if time.monotonic() - heard > self.silence_limit_s:
                            raise WorkerLost("the training process stopped answering")
                        continue
                    update, heard = _receive(worker.conn), time.monotonic()
                except (EOFError, OSError):
                    raise WorkerLost("the training process ended unexpectedly") from None
                self._apply(trainer, update)
                if update["status"] == "done":
                    clean = True
                    return
        finally:
            with self._send_lock:
                self._conn = None
            self._workers.give_back(worker, clean)

    def _apply(self, trainer: Trainer, update: Update) -> None:
        """Mirror a worker's update in the local trainer and this job."""
        snapshot = None
        if update["snapshot"] is not None:
            snapshot = copy.deepcopy(trainer.model)
            snapshot.load_state_dict(update["snapshot"])
            snapshot.eval()
        if update["status"] == "done" and update["weights"] is not None:
            model, network = update["weights"]
            trainer.network.load_state_dict(network)
            trainer.model.load_state_dict(model)  # after: they are one module when the run keeps no average
            trainer.network.eval()
            trainer.model.eval()
        with self._lock:
            trainer.step = update["step"]
            trainer.step_losses.extend(update["losses"])
            trainer.history.extend(update["rows"])
            trainer.attention_snapshots.extend(update["maps"])
            self._rows.extend(update["rows"])
            if snapshot is not None:
                self._snapshot = snapshot
            self._holding = update["status"] == "paused"
        if trainer.step > 0:
            self._moving.set()
        if update["status"] == "done":
            trainer.result = self.result = update["result"]
            self.error = update["error"]


if __name__ == "__main__":  # a worker process: python -m transformer.workers FD TORCH_THREADS
    serve(Connection(int(sys.argv[1])), int(sys.argv[2]))
