"""The server's end of a training worker (the worker's end is `worker.py`, their messages `protocol.py`):
`WorkerLink` starts a worker, hands it a run, and writes the worker's reports into the `Run` pages read."""

import os
import socket
import subprocess
import sys
import threading
import time
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from pathlib import Path

from ..training import RunFailed
from .protocol import (
    Caps,
    Control,
    ControlName,
    Holding,
    Message,
    NewRow,
    Progress,
    Ready,
    RunEnded,
    StartRun,
    receive,
    send,
)
from .run import Run
from .worker import serve

PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # where `transformer` is imported from
READY_TIMEOUT_S = 60.0  # how long a new worker may take to import torch and pay its first step's costs
SILENCE_LIMIT_S = 30.0  # a worker that sends nothing for this long is closed and its run ends (see worker.py)


class WorkerLost(RunFailed):
    """A worker ended, or stopped answering, in the middle of a run."""


class WorkerLink:
    """The server's end of one worker: a process, or with `in_server` a thread of this process, and its pipe.

    Only one thread sends down the pipe at a time without a lock of its own: the slot's thread sends StartRun
    before the run is attached, and every Control after goes through the run's lock (`Run.attach`)."""

    def __init__(self, torch_threads: int, caps: Caps, in_server: bool = False):
        self.caps = caps
        self.process: subprocess.Popen | None = None
        if in_server:
            self.conn, theirs = Pipe()
            threading.Thread(target=serve, args=(theirs, None), name="training-worker", daemon=True).start()
            return
        ours, theirs = socket.socketpair()
        path = os.pathsep.join(filter(None, [str(PACKAGE_ROOT), os.environ.get("PYTHONPATH")]))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "transformer.serving", str(theirs.fileno()), str(torch_threads)],
            pass_fds=[theirs.fileno()],
            env={**os.environ, "PYTHONPATH": path},
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
        """The memory the worker process holds now (its resident set, MB); None on a thread, or where /proc is not
        there to tell."""
        if self.process is None:
            return None
        try:
            pages = int(Path(f"/proc/{self.process.pid}/statm").read_text().split()[1])
        except (OSError, ValueError, IndexError):
            return None
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20

    def close(self) -> None:
        self.conn.close()
        if self.process is None:
            return
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
                raise WorkerLost("the training process ended unexpectedly") from None
            run.attach(self._send_control)
            self._read_reports(run)
        except WorkerLost as err:
            run.lose(str(err))
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
                raise WorkerLost(f"the training process ran past the {self.caps.run_s:g} s one run may take")
            message = self._next_message(heard)
            if message is None:
                continue
            heard = time.monotonic()
            if self._write(run, message):
                return

    def _next_message(self, heard: float) -> Message | None:
        """The worker's next message, or None after half a second without one; WorkerLost when the worker has
        ended, or said nothing for SILENCE_LIMIT_S since `heard`."""
        try:
            if self.conn.poll(0.5):
                return receive(self.conn)
        except (EOFError, OSError):
            raise WorkerLost("the training process ended unexpectedly") from None
        if time.monotonic() - heard > SILENCE_LIMIT_S:
            raise WorkerLost("the training process stopped answering")
        return None

    @staticmethod
    def _write(run: Run, message: Message) -> bool:
        """Write a report into `run`; returns whether it was the run's end."""
        match message:
            case Progress(step, losses, attention):
                run.add_progress(step, losses, attention)
            case NewRow(row, weights, dynamics):
                run.add_row(row, weights, dynamics)
            case Holding():
                run.set_holding(True)
            case RunEnded(result, error, weights, notice):
                run.end(result, error, weights, notice)
                return True
        return False  # Alive: only that the worker is there

    def _send_control(self, name: ControlName) -> None:
        try:
            send(self.conn, Control(name))
        except OSError:  # the worker has gone: the reader finds out and ends the run
            pass
