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
from functools import partial
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
    StartRuns,
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

    The slot's thread sends StartRuns before the runs are attached; every Control after comes from a page's thread
    or the slot's, through `lock`, one message down the pipe at a time."""

    def __init__(self, torch_threads: int, caps: Caps, in_server: bool = False, ray_address: str | None = None):
        self.caps, self.ray_address = caps, ray_address
        self.process: subprocess.Popen | None = None
        self.reported_mb: float | None = None  # what the worker said it held at its last runs' end
        self.lock = threading.Lock()  # one Control down the pipe at a time
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

    def relay(self, runs: list[Run]) -> None:
        """Have the worker train `runs` (one run, or several of one shape together): send them, then relay each
        run's controls to the worker and the worker's reports into the runs until every one has ended; a run nobody
        watches any more is stopped. Raises WorkerLost when the worker ends or falls silent (the runs still going
        then end, see `Run.lose`)."""
        try:
            try:
                configs = tuple((run.model_config, run.data_config, run.train_config) for run in runs)
                send(self.conn, StartRuns(configs, self.caps))
            except OSError:
                raise WorkerLost(Message(ENDED)) from None
            for i, run in enumerate(runs):
                run.attach(partial(self._send_control, i))
            self._read_reports(runs)
        except WorkerLost as err:
            for run in runs:
                if not run.done:
                    run.lose(message_of(err))
            raise
        finally:
            for run in runs:
                run.detach()

    def _read_reports(self, runs: list[Run]) -> None:
        began = heard = time.monotonic()
        stop_sent: set[int] = set()
        ended = 0
        while ended < len(runs):
            for i, run in enumerate(runs):
                if i not in stop_sent and not run.done and not run.watchers():
                    run.stop()
                    stop_sent.add(i)
            # Each run's slot time is capped by its worker; a group's runs share the wall time between them.
            if time.monotonic() - began > len(runs) * self.caps.run_s + SILENCE_LIMIT_S:
                past = N_("the training process ran past the {limit:g} s one run may take")
                raise WorkerLost(Message(past, limit=self.caps.run_s))
            message = self._next_message(heard)
            if message is None:
                continue
            heard = time.monotonic()
            ended += self._write(runs, message)

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

    def _write(self, runs: list[Run], message: PipeMessage) -> bool:
        """Write a report into its run; returns whether it was that run's end."""
        match message:
            case Progress(i, step, losses, attention):
                runs[i].add_progress(step, losses, attention)
            case NewRow(i, row, weights, dynamics):
                runs[i].add_row(row, weights, dynamics)
            case Holding(i):
                runs[i].set_holding(True)
            case RunEnded(i, result, error, weights, notice, held_mb):
                self.reported_mb = held_mb if held_mb is not None else self.reported_mb
                runs[i].end(result, error, weights, notice)
                return True
        return False  # Alive: only that the worker is there

    def _send_control(self, run: int, name: ControlName) -> None:
        try:
            with self.lock:  # the runs of a group are controlled from their own pages' threads
                send(self.conn, Control(run, name))
        except OSError:  # the worker has gone: the reader finds out and ends the run
            pass
