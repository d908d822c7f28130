"""The server's end of a training worker (the worker's end is `worker.py`, their messages `protocol.py`):
`WorkerLink` starts a worker, hands it a run, and writes the worker's reports into the `Run` pages read. The worker
is a process of this server, a thread of it, or a Ray task reached through the server's `RayGateway`, one process
(`ray_worker.py`) that is this server's only Ray driver. The server itself is never a Ray driver."""

import io
import logging
import math
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
GATEWAY_TIMEOUT_S = 30.0  # how long the gateway may take to join a Ray cluster and count its CPUs
GATEWAY_RETRY_S = 60.0  # a gateway that has ended starts again at most this often
log = logging.getLogger("transformer.serving")


def child_env() -> dict[str, str]:
    """This process's environment, with the package importable from a child process run anywhere."""
    path = os.pathsep.join(filter(None, [str(PACKAGE_ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path}


def start_child(module: str, sock: socket.socket, *args: str) -> subprocess.Popen:
    """`python -m module FD *args`, FD its end of the socket `sock` (closed here once the child has it)."""
    process = subprocess.Popen(
        [sys.executable, "-m", module, str(sock.fileno()), *args],
        pass_fds=[sock.fileno()],
        env=child_env(),
        stdin=subprocess.DEVNULL,
    )
    sock.close()
    return process


def end_process(process: subprocess.Popen) -> None:
    """Wait CLOSE_GRACE_S for a child whose socket closed to end by itself, then terminate it, then kill it."""
    try:
        process.wait(CLOSE_GRACE_S)
        return
    except subprocess.TimeoutExpired:
        process.terminate()
    try:
        process.wait(5)
    except subprocess.TimeoutExpired:
        process.kill()


class RayGateway:
    """This server's gateway to the Ray cluster at `address`: a process (`ray_worker.py`) that joins the cluster
    as a Ray driver and, for each `link`, starts a Ray task that trains and relays the worker protocol to it.

    The gateway warms up to `slots` of the cluster's processes for the runs to come (`warm` is set once they are, or
    once the gateway has ended). `cpus` is the cluster's CPUs when the gateway started, None when it could not join
    (the reason goes to the log).
    A gateway that has ended (its cluster went away) starts again at a link asked for GATEWAY_RETRY_S after its last
    start; until then `link` raises ConnectionError, and the registry trains on this server's own workers."""

    def __init__(self, address: str, torch_threads: int, slots: int):
        self.address, self.torch_threads, self.slots = address, torch_threads, slots
        self.lock = threading.Lock()  # one link passed at a time, and one start
        self.process: subprocess.Popen | None = None
        self.control: socket.socket | None = None
        self.started_at = -math.inf
        self.warm = threading.Event()
        self.cpus = self._start()

    def _start(self) -> int | None:
        self.started_at = time.monotonic()
        ours, theirs = socket.socketpair()
        args = str(self.torch_threads), self.address, str(self.slots)
        self.process = start_child("transformer.serving.ray_worker", theirs, *args)
        ours.settimeout(GATEWAY_TIMEOUT_S)
        lines = ours.makefile("rb")
        try:
            said = lines.readline(200).decode(errors="replace").strip()
        except OSError:  # TimeoutError included
            said = f"it did not answer in {GATEWAY_TIMEOUT_S:g} s"
        if not said.isdigit() or int(said) == 0:
            log.warning("the Ray cluster at %s cannot train: %s", self.address, said or "its gateway ended")
            ours.close()
            end_process(self.process)
            self.warm.set()
            return None
        ours.settimeout(None)
        self.control = ours
        threading.Thread(target=self._hear_warm, args=(lines,), name="gateway-warm", daemon=True).start()
        return int(said)

    def _hear_warm(self, lines: io.BufferedReader) -> None:
        """Set `warm` when the gateway says its processes are (or its control socket closes)."""
        try:
            lines.readline(200)
        except OSError:
            pass
        self.warm.set()

    def link(self) -> tuple[Connection, str]:
        """A new link to a Ray task of its own, which trains what is sent on it, and the task's name, unique in the
        cluster: which server started it. ConnectionError when the gateway has ended and cannot start again now."""
        with self.lock:
            if self.process.poll() is not None or self.control is None:
                if self.control is not None:
                    self.control.close()
                    self.control = None
                if time.monotonic() - self.started_at < GATEWAY_RETRY_S or self._start() is None:
                    raise ConnectionError(f"the gateway to the Ray cluster at {self.address} has ended")
            name = f"training-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
            ours, theirs = socket.socketpair()
            try:
                socket.send_fds(self.control, [name.encode()], [theirs.fileno()])
            except OSError:
                ours.close()
                raise ConnectionError(f"the gateway to the Ray cluster at {self.address} has ended") from None
            finally:
                theirs.close()
            return Connection(ours.detach()), name

    def close(self) -> None:
        """End the gateway, and with it every task it started."""
        with self.lock:
            if self.control is not None:
                self.control.close()
            if self.process is not None:
                end_process(self.process)


class WorkerLost(RunFailed):
    """A worker ended, or stopped answering, in the middle of a run."""


class WorkerLink:
    """The server's end of one worker and its pipe: a process; with `in_server` a thread of this process; with
    `gateway` a Ray task on that gateway's cluster, for one StartRuns (`ConnectionError` when the gateway cannot
    start one).

    The slot's thread sends StartRuns before the runs are attached; every Control after comes from a page's thread
    or the slot's, through `lock`, one message down the pipe at a time."""

    def __init__(self, torch_threads: int, caps: Caps, in_server: bool = False, gateway: RayGateway | None = None):
        self.caps = caps
        self.process: subprocess.Popen | None = None
        self.lock = threading.Lock()  # one Control down the pipe at a time
        self.task_name: str | None = None  # the Ray task's name, unique in the cluster
        if gateway is not None:
            self.conn, self.task_name = gateway.link()
        elif in_server:
            self.conn, theirs = Pipe()
            threading.Thread(
                target=serve, args=(theirs, torch_threads, False), name="training-worker", daemon=True
            ).start()
        else:
            ours, theirs = socket.socketpair()
            self.process = start_child("transformer.serving", theirs, str(torch_threads))
            self.conn = Connection(ours.detach())

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> bool:
        """Wait for the worker to say it is ready."""
        try:
            return self.conn.poll(timeout_s) and isinstance(receive(self.conn), Ready)
        except (EOFError, OSError):
            return False

    def resident_mb(self) -> float | None:
        """The memory the worker process holds now (its resident set, MB); None on a thread, for a Ray task, or
        where /proc is not there to tell."""
        return None if self.process is None else resident_mb(self.process.pid)

    def close(self) -> None:
        """Close the pipe, which ends the worker (a Ray task's through the gateway); a process that has not ended
        in CLOSE_GRACE_S is terminated, and one that ignores that is killed."""
        self.conn.close()
        if self.process is not None:
            end_process(self.process)

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
                    run.unwatched = run.unwatched_why()
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
            case RunEnded(i, result, error, weights, notice):
                runs[i].end(result, error, weights, notice)
                return True
        return False  # Alive: only that the worker is there

    def _send_control(self, run: int, name: ControlName) -> None:
        try:
            with self.lock:  # the runs of a group are controlled from their own pages' threads
                send(self.conn, Control(run, name))
        except OSError:  # the worker has gone: the reader finds out and ends the run
            pass
