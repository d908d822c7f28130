"""Workers: a worker trains one run at a time on its own main thread and reports over a pipe; the server's end of
the pipe writes the reports into the `Run` pages read.

The protocol, over one duplex `multiprocessing.connection` pipe:

    server -> worker   ("train", model_config, data_config, train_config, caps), then any of the CONTROLS
    worker -> server   ("ready",) once, when torch is imported and a first step's one-off costs are paid;
                       for each run: ("progress", step, new_losses, new_attention) every REPORT_EVERY_S,
                       ("row", metric_row, weights, dynamics) at each metric row, ("holding", step) every
                       HEARTBEAT_S while paused, ("alive",) every ALIVE_EVERY_S while it trains (a held-out
                       evaluation may outlast SILENCE_LIMIT_S on a busy server), and last ("end", result, error,
                       weights, notice).

A worker is a fresh Python process (`python -m transformer.serving FD THREADS`), so a server drawing many
pages never holds the interpreter lock its steps need. Not multiprocessing's spawn: under `streamlit run`,
`__main__` is the app's script, which spawn (and forkserver) would import again in every worker. In tests, and on
hosts that cannot start processes, the same loop runs on a thread of the server over `multiprocessing.Pipe()`.
"""

import ctypes
import gc
import os
import pickle
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from pathlib import Path

import torch

from ..model import ModelConfig
from ..tasks import DataConfig
from ..training import RunFailed, TrainConfig, Trainer, warm_up
from .run import Run

PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # where `transformer` is imported from
CONTROLS = ("pause", "resume", "step_row", "stop")
REPORT_EVERY_S = 0.05  # how often a training worker sends new losses
HEARTBEAT_S = 0.5  # how often a paused worker says it is still there
MAX_PAUSE_S = 120.0  # a pause longer than this ends the run (its model is kept): a paused run holds a slot
READY_TIMEOUT_S = 60.0  # how long a new worker may take to import torch and pay its first step's costs
SILENCE_LIMIT_S = 30.0  # a worker that sends nothing for this long is closed and its run ends
ALIVE_EVERY_S = 5.0  # how often a training worker says it is there, whatever its training thread is doing


class WorkerLost(RunFailed):
    """A worker ended, or stopped answering, in the middle of a run."""


@dataclass(frozen=True)
class Caps:
    """What one run may take of its training slot, whatever its controls do; past either, it ends with its model
    kept (ServerSettings.max_run_s, max_paused_s)."""

    run_s: float  # wall-clock seconds from its first step's set-up, pauses included
    paused_s: float  # seconds paused, over all its pauses


def send(conn: Connection, message: object) -> None:
    """Send with plain pickle: a tensor goes as its bytes (multiprocessing's pickler would share its memory, which
    only works between processes that multiprocessing itself started)."""
    conn.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))


def receive(conn: Connection) -> object:
    return pickle.loads(conn.recv_bytes())  # only ever from the other end of this server's own pipe


# ------------------------------------------------------------------------------------------ the worker's end


def serve(conn: Connection, torch_threads: int | None) -> None:
    """A worker's loop: train each run the server sends, one at a time, here. Ends when the pipe closes.

    A worker process is given its torch thread count and pays a first step's one-off costs before it says it is
    ready, and gives a run's memory back before it reports the run's end; a worker on a server thread
    (`torch_threads` None) leaves all three to the server, whose settings and memory they are. A worker process
    freezes the objects it holds once ready (`gc.freeze`), so that the full collection after each run walks only
    the run's own: 0.14 s a run otherwise, most of it torch's modules."""
    if torch_threads is not None:
        torch.set_num_threads(torch_threads)
        warm_up().join()
        gc.collect()
        gc.freeze()  # what importing torch made lives as long as the process: no collection walks it again
    try:
        send(conn, ("ready",))
        while True:
            message = receive(conn)
            if message[0] == "train":  # anything else is a control for a run that has ended: dropped
                end = train(conn, *message[1:])
                if torch_threads is not None:
                    release_memory()
                send(conn, end)
    except (EOFError, OSError, KeyboardInterrupt):
        return


def train(
    conn: Connection, model_config: ModelConfig, data_config: DataConfig, train_config: TrainConfig, caps: Caps
) -> tuple:
    """Train one run, reporting as it goes; returns its "end" message, a result or an error for the student."""
    gate = Gate(conn, caps)
    result = error = weights = None
    alive = threading.Event()
    beat = threading.Thread(target=say_alive, args=(gate, alive), name="alive", daemon=True)
    beat.start()
    try:
        trainer = gate.trainer = Trainer(model_config, data_config, train_config)
        for row in trainer.train(gate):
            gate.report()  # the losses up to the row first
            gate.send(("row", row, trainer.kept_weights(), trainer.dynamics.records[-1]))
        result, weights = trainer.result, trainer.kept_weights()
    except (EOFError, OSError):
        raise  # the server has gone
    except Exception as err:  # a message for the student, never a traceback
        error = str(err) if isinstance(err, (RunFailed, ValueError)) else f"training failed: {err!r}"
    finally:
        alive.set()
        beat.join()  # no "alive" after the "end"
    gate.report()
    return "end", result, error, weights, gate.notice


def say_alive(gate: "Gate", done: threading.Event) -> None:
    """Send ("alive",) every ALIVE_EVERY_S until `done`: the server's end tells a long evaluation from a hung
    worker by this, and bounds both by the run's wall-time cap."""
    while not done.wait(ALIVE_EVERY_S):
        try:
            gate.send(("alive",))
        except OSError:  # the server has gone: the training thread finds out at its next send
            return


def release_memory() -> None:
    """Give the memory of a run that has ended back to the system: glibc's allocator keeps freed memory for the
    process otherwise: after a run of the Train form's largest model, hundreds of MB more than before it."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: the registry restarts a worker that holds too much
        pass


class Gate:
    """What the trainer calls before each step: sends what is new, obeys the server's controls, and holds while
    the run is paused, within the run's `caps`. Returns True when the run must stop."""

    def __init__(self, conn: Connection, caps: Caps):
        self.conn, self.caps = conn, caps
        self.lock = threading.Lock()  # the training thread and say_alive both send
        self.trainer: Trainer | None = None
        self.paused = self.stopped = False
        self.pause_at: int | None = None  # pause again on reaching this step (after Step)
        self.sent_losses = self.sent_attention = 0
        self.reported = 0.0
        self.began, self.paused_s = time.monotonic(), 0.0  # paused_s: over the pauses that have ended
        self.notice: str | None = None  # why a limit stopped the run

    def __call__(self) -> bool:
        self.read_controls()
        if self.pause_at is not None and self.trainer.step >= self.pause_at:
            self.paused, self.pause_at = True, None
        self.check_limits()
        if self.paused and not self.stopped:
            self.hold()
        elif time.monotonic() - self.reported >= REPORT_EVERY_S:
            self.report()
        return self.stopped

    def read_controls(self, wait_s: float = 0.0) -> None:
        """Apply the controls the server has sent, waiting at most `wait_s` for the first."""
        while self.conn.poll(wait_s):
            control, wait_s = receive(self.conn), 0.0
            if control == "stop":
                self.stopped = True
            elif control == "pause":
                self.paused, self.pause_at = True, None
            elif control == "resume":
                self.paused, self.pause_at = False, None
            elif control == "step_row":
                every = self.trainer.train_config.eval_every
                self.paused, self.pause_at = False, (self.trainer.step // every + 1) * every

    def hold(self) -> None:
        """Hold between two steps until resumed, stepped or stopped, or a limit stops the run."""
        self.report()
        began = time.monotonic()
        while self.paused and not self.stopped:
            self.send(("holding", self.trainer.step))
            self.read_controls(HEARTBEAT_S)
            self.check_limits(time.monotonic() - began)
        self.paused_s += time.monotonic() - began

    def check_limits(self, pause_s: float = 0.0) -> None:
        """Stop the run, saying why in `notice`, once the pause under way has lasted `pause_s` past MAX_PAUSE_S, or
        the run is past its caps."""
        if self.stopped:
            return
        if pause_s > MAX_PAUSE_S:
            self.notice = f"a pause lasted over {MAX_PAUSE_S:g} s, the longest one pause may last"
        elif self.paused_s + pause_s > self.caps.paused_s:
            self.notice = f"it was paused for over {self.caps.paused_s:g} s in all, the most one run may be paused"
        elif time.monotonic() - self.began > self.caps.run_s:
            self.notice = f"it held a training slot for over {self.caps.run_s:g} s, the most one run may"
        self.stopped = self.notice is not None

    def report(self) -> None:
        """Send the step, and the losses and attention snapshots not sent yet."""
        trainer = self.trainer
        if trainer is None:
            return
        losses, attention = trainer.step_losses[self.sent_losses :], trainer.attention_snapshots[self.sent_attention :]
        self.sent_losses += len(losses)
        self.sent_attention += len(attention)
        self.send(("progress", trainer.step, losses, attention))
        self.reported = time.monotonic()

    def send(self, message: object) -> None:
        with self.lock:
            send(self.conn, message)


# ------------------------------------------------------------------------------------------ the server's end


class Worker:
    """The server's end of one worker: a process, or with `in_server` a thread of this process, and its pipe."""

    def __init__(self, torch_threads: int, caps: Caps, in_server: bool = False):
        self.caps = caps
        self.process: subprocess.Popen | None = None
        self._send_lock = threading.Lock()  # pages' controls and the reader both send
        if in_server:
            self.conn, theirs = Pipe()
            self._thread = threading.Thread(target=serve, args=(theirs, None), name="training-worker", daemon=True)
            self._thread.start()
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
            return self.conn.poll(timeout_s) and receive(self.conn) == ("ready",)
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

    @property
    def alive(self) -> bool:
        return self._thread.is_alive() if self.process is None else self.process.poll() is None

    def close(self) -> None:
        self.conn.close()
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()

    def train(self, run: Run) -> None:
        """Have the worker train `run`, writing its reports into it until it ends; a run nobody watches any more is
        stopped. Raises WorkerLost when the worker ends or falls silent (the run then ends, see `Run.lose`)."""
        try:
            self._send(("train", run.model_config, run.data_config, run.train_config, self.caps))
            for control in run.attach(self._control):
                self._send(control)
            self._read(run)
        except WorkerLost as err:
            run.lose(str(err))
            raise
        finally:
            run.detach()

    def _read(self, run: Run) -> None:
        began = heard = time.monotonic()
        stop_sent = False
        while True:
            if not stop_sent and not run.watchers():
                self._control("stop")
                stop_sent = True
            if time.monotonic() - began > self.caps.run_s + SILENCE_LIMIT_S:  # the worker's own cap did not end it
                raise WorkerLost(f"the training process ran past the {self.caps.run_s:g} s one run may take")
            try:
                if not self.conn.poll(0.5):
                    if time.monotonic() - heard > SILENCE_LIMIT_S:
                        raise WorkerLost("the training process stopped answering")
                    continue
                kind, *body = receive(self.conn)
            except (EOFError, OSError):
                raise WorkerLost("the training process ended unexpectedly") from None
            heard = time.monotonic()
            if kind == "progress":
                run.add_progress(*body)
            elif kind == "row":
                run.add_row(*body)
            elif kind == "holding":
                run.set_holding(True)
            elif kind == "end":
                run.end(*body)
                return

    def _send(self, message: object) -> None:
        try:
            with self._send_lock:
                send(self.conn, message)
        except OSError:
            raise WorkerLost("the training process ended unexpectedly") from None

    def _control(self, name: str) -> None:
        try:
            with self._send_lock:
                send(self.conn, name)
        except OSError:  # the worker has gone: the reader finds out and ends the run
            pass
