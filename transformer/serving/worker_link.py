"""The server's end of a training worker (the worker's end is `worker.py`, their messages `protocol.py`):
`WorkerLink` starts a worker, hands it a run, and writes the worker's reports into the `Run` pages read. The worker
is a process of this server, a thread of it, or a Ray actor behind a proxy process (`ray_worker.py`); `cluster_cpus`
asks a Ray cluster, from a child process too, how many CPUs it has. The server itself is never a Ray driver."""

import logging
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from pathlib import Path

from ..i18n import N_, Message, message_of
from ..training import RunFailed
from .protocol import (
    Caps,
    Control,
    ControlName,
    Holding,
    NewRow,
    PipeMessage,
    Progress,
    Ready,
    RunEnded,
    StartRun,
    receive,
    send,
)
from .run import Run
from .worker import resident_mb, serve

PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # where `transformer` is imported from
READY_TIMEOUT_S = 60.0  # how long a new worker may take to import torch and pay its first step's costs
SILENCE_LIMIT_S = 30.0  # a worker that sends nothing for this long is closed and its run ends (see worker.py)
CLOSE_GRACE_S = 2.0  # how long a worker whose pipe closed may take to end by itself
ENDED = N_("the training process ended unexpectedly")  # a lost worker, as a student reads it
CLUSTER_TIMEOUT_S = 30.0  # how long asking a Ray cluster its CPUs may take
log = logging.getLogger("transformer.serving")


def child_env() -> dict[str, str]:
    """This process's environment, with the package importable from a child process run anywhere."""
    path = os.pathsep.join(filter(None, [str(PACKAGE_ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path}


def cluster_cpus(address: str) -> int | None:
    """The CPUs of the Ray cluster at `address`, or None when it cannot be reached in CLUSTER_TIMEOUT_S, has none,
    or ray is not installed (the reason goes to the log)."""
    command = [sys.executable, "-m", "transformer.serving.ray_worker", "--cpus", address]
    try:
        asked = subprocess.run(command, env=child_env(), capture_output=True, text=True, timeout=CLUSTER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        log.warning("the Ray cluster at %s did not answer in %g s", address, CLUSTER_TIMEOUT_S)
        return None
    if asked.returncode != 0 or not asked.stdout.strip().isdigit() or int(asked.stdout) == 0:
        reason = (asked.stderr.strip().splitlines() or ["it has no CPUs"])[-1]
        log.warning("the Ray cluster at %s cannot train: %s", address, reason)
        return None
    return int(asked.stdout)


class WorkerLost(RunFailed):
    """A worker ended, or stopped answering, in the middle of a run."""


class WorkerLink:
    """The server's end of one worker and its pipe: a process; with `in_server` a thread of this process; with
    `ray_address` a Ray actor on that cluster, behind a proxy process (`ray_worker.py`).

    Only one thread sends down the pipe at a time without a lock of its own: the slot's thread sends StartRun
    before the run is attached, and every Control after goes through the run's lock (`Run.attach`)."""

    def __init__(self, torch_threads: int, caps: Caps, in_server: bool = False, ray_address: str | None = None):
        self.caps, self.ray_address = caps, ray_address
        self.process: subprocess.Popen | None = None
        self.reported_mb: float | None = None  # what the worker said it held at its last run's end
        self.actor_name = None  # the Ray actor's name, unique in the cluster: which server started it
        if ray_address:
            self.actor_name = f"training-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        if in_server:
            self.conn, theirs = Pipe()
            threading.Thread(target=serve, args=(theirs, None), name="training-worker", daemon=True).start()
            return
        ours, theirs = socket.socketpair()
        ray_worker = ("transformer.serving.ray_worker", [ray_address, self.actor_name])
        module, more = ray_worker if ray_address else ("transformer.serving", [])
        self.process = subprocess.Popen(
            [sys.executable, "-m", module, str(theirs.fileno()), str(torch_threads), *more],
            pass_fds=[theirs.fileno()],
            env=child_env(),
            stdin=subprocess.DEVNULL,
        )
        theirs.close()
        self.conn = Connection(ours.detach())

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> bool:
        """Wait for the worker to say it is ready."""
        try:
            return self.conn.poll(timeout_s) and isinstance(receive(self.conn), Ready)
        except (EOFError, OSError):
            return False

    def resident_mb(self) -> float | None:
        """The memory the worker process holds now (its resident set, MB); for a Ray actor, what it held at its last
        run's end; None on a thread, or where /proc is not there to tell."""
        if self.ray_address:
            return self.reported_mb
        return None if self.process is None else resident_mb(self.process.pid)

    def close(self) -> None:
        """Close the pipe, which ends the worker (a Ray proxy kills its actor first); a process that has not ended
        in CLOSE_GRACE_S is terminated, and one that ignores that is killed."""
        self.conn.close()
        if self.process is None:
            return
        try:
            self.process.wait(CLOSE_GRACE_S)
            return
        except subprocess.TimeoutExpired:
            self.process.terminate()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()

    def relay(self, run: Run) -> None:
        """Have the worker train `run`: send it, then relay the run's controls to the worker and the worker's
        reports into the run until it ends; a run nobody watches any more is stopped. Raises WorkerLost when the
        worker ends or falls silent (the run then ends, see `Run.lose`)."""
        try:
            try:
                send(self.conn, StartRun(run.model_config, run.data_config, run.train_config, self.caps))
            except OSError:
                raise WorkerLost(Message(ENDED)) from None
            run.attach(self._send_control)
            self._read_reports(run)
        except WorkerLost as err:
            run.lose(message_of(err))
            raise
        finally:
            run.detach()

    def _read_reports(self, run: Run) -> None:
        began = heard = time.monotonic()
        stop_sent = False
        while True:
            if not stop_sent and not run.watchers():
                run.stop()
                stop_sent = True
            if time.monotonic() - began > self.caps.run_s + SILENCE_LIMIT_S:  # the worker's own cap did not end it
                past = N_("the training process ran past the {limit:g} s one run may take")
                raise WorkerLost(Message(past, limit=self.caps.run_s))
            message = self._next_message(heard)
            if message is None:
                continue
            heard = time.monotonic()
            if self._write(run, message):
                return

    def _next_message(self, heard: float) -> PipeMessage | None:
        """The worker's next message, or None after half a second without one; WorkerLost when the worker has
        ended, or said nothing for SILENCE_LIMIT_S since `heard`."""
        try:
            if self.conn.poll(0.5):
                return receive(self.conn)
        except (EOFError, OSError):
            raise WorkerLost(Message(ENDED)) from None
        if time.monotonic() - heard > SILENCE_LIMIT_S:
            raise WorkerLost(Message(N_("the training process stopped answering")))
        return None

    def _write(self, run: Run, message: PipeMessage) -> bool:
        """Write a report into `run`; returns whether it was the run's end."""
        match message:
            case Progress(step, losses, attention):
                run.add_progress(step, losses, attention)
            case NewRow(row, weights, dynamics):
                run.add_row(row, weights, dynamics)
            case Holding():
                run.set_holding(True)
            case RunEnded(result, error, weights, notice, held_mb):
                self.reported_mb = held_mb
                run.end(result, error, weights, notice)
                return True
        return False  # Alive: only that the worker is there

    def _send_control(self, name: ControlName) -> None:
        try:
            send(self.conn, Control(name))
        except OSError:  # the worker has gone: the reader finds out and ends the run
            pass
