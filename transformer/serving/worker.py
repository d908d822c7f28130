"""A training worker: trains one run at a time, on its own main thread, and reports over its pipe (the worker's
end of the protocol in `protocol.py`; `worker_link.py` is the server's end).

A worker is a fresh Python process (`python -m transformer.serving FD THREADS`), so a server drawing many
pages never holds the interpreter lock its steps need. Not multiprocessing's spawn: under `streamlit run`,
`__main__` is the app's script, which spawn (and forkserver) would import again in every worker. In tests, and on
hosts that cannot start processes, the same loop runs on a thread of the server over `multiprocessing.Pipe()`. On
a Ray cluster it runs on a thread of a Ray actor (`ray_worker.py`), as in a worker process.
"""

import ctypes
import gc
import os
import pickle
import threading
import time
from dataclasses import replace
from multiprocessing.connection import Connection
from pathlib import Path

import torch

from ..i18n import N_, Message, message_of
from ..training import RunFailed, Trainer, warm_up
from .protocol import (
    Alive,
    Caps,
    Control,
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

REPORT_EVERY_S = 0.05  # how often a training worker sends new losses
HEARTBEAT_S = 0.5  # how often a paused worker says it is still there
MAX_ONE_PAUSE_S = 120.0  # one pause longer than this ends the run (its model is kept): a paused run holds a slot
ALIVE_EVERY_S = 5.0  # how often a training worker says it is there, whatever its training thread is doing


def serve(conn: Connection, torch_threads: int | None) -> None:
    """A worker's loop: train each run the server sends, one at a time, here. Ends when the pipe closes.

    A worker process is given its torch thread count and pays a first step's one-off costs before it says it is
    ready, and gives a run's memory back before it reports the run's end, with what it still holds; a worker on a
    server thread (`torch_threads` None) leaves all four to the server, whose settings and memory they are. A worker
    process freezes the objects it holds once ready (`gc.freeze`), so that the full collection after each run walks only
    the run's own: 0.14 s a run otherwise, most of it torch's modules."""
    if torch_threads is not None:
        torch.set_num_threads(torch_threads)
        warm_up().join()
        gc.collect()
        gc.freeze()  # what importing torch made lives as long as the process: no collection walks it again
    try:
        send(conn, Ready())
        while True:
            message = receive(conn)
            if isinstance(message, StartRun):  # anything else is a control for a run that has ended: dropped
                ended = train_and_report(conn, message)
                if torch_threads is not None:
                    release_memory()
                    ended = replace(ended, resident_mb=resident_mb())
                send(conn, ended)
    except (EOFError, OSError, KeyboardInterrupt):
        return


def train_and_report(conn: Connection, start: StartRun) -> RunEnded:
    """Train one run, reporting as it goes; returns its end, a result or an error for the student."""
    gate = Gate(conn, start.caps)
    result = error = weights = None
    done = threading.Event()
    beat = threading.Thread(target=say_alive, args=(gate, done), name="alive", daemon=True)
    beat.start()
    try:
        trainer = gate.trainer = Trainer(start.model_config, start.data_config, start.train_config)
        for row in trainer.train(gate):
            gate.report()  # the losses up to the row first
            gate.send(NewRow(row, trainer.kept_weights(), trainer.dynamics.records[-1]))
        result, weights = trainer.result, trainer.kept_weights()
    except (EOFError, OSError):
        raise  # the server has gone
    except Exception as err:  # a message for the student, never a traceback
        foreseen = isinstance(err, (RunFailed, ValueError))
        error = message_of(err) if foreseen else Message(N_("training failed: {error}"), error=repr(err))
    finally:
        done.set()
        beat.join()  # no Alive after the RunEnded
    gate.report()
    return RunEnded(result, portable(error), weights, gate.notice)


def portable(error: str | None) -> str | None:
    """`error` as it can cross the pipe: a Message goes as its template and parameters (translated where a page
    shows it), or as its English text when a parameter does not make the round trip through pickle."""
    try:
        pickle.loads(pickle.dumps(error, protocol=pickle.HIGHEST_PROTOCOL))
    except Exception:  # pickling an arbitrary object may raise anything: the English text always crosses
        return str(error)
    return error


def say_alive(gate: "Gate", done: threading.Event) -> None:
    """Send Alive every ALIVE_EVERY_S until `done`: the server's end tells a long evaluation from a hung worker by
    this, and bounds both by the run's wall-time cap."""
    while not done.wait(ALIVE_EVERY_S):
        try:
            gate.send(Alive())
        except OSError:  # the server has gone: the training thread finds out at its next send
            return


def resident_mb(pid: int | str = "self") -> float | None:
    """The memory process `pid` (this one by default) holds now, its resident set in MB; None where /proc is not
    there to tell."""
    try:
        pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


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
    the run is paused, within the run's `caps`. Returns True when the run must stop.

    Its lock guards the pipe's sending end: the training thread and `say_alive` both send."""

    def __init__(self, conn: Connection, caps: Caps):
        self.conn, self.caps = conn, caps
        self.lock = threading.Lock()
        self.trainer: Trainer | None = None
        self.paused = self.stopped = False
        self.pause_at: int | None = None  # pause again on reaching this step (after Step)
        self.sent_losses = self.sent_attention = 0
        self.reported = 0.0
        self.began = time.monotonic()
        self.ended_pauses_s = 0.0  # seconds paused, over the pauses that have ended
        self.notice: Message | None = None  # why a limit stopped the run

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
            wait_s = 0.0
            match receive(self.conn):
                case Control("stop"):
                    self.stopped = True
                case Control("pause"):
                    self.paused, self.pause_at = True, None
                case Control("resume"):
                    self.paused, self.pause_at = False, None
                case Control("step_row"):
                    every = self.trainer.train_config.eval_every
                    self.paused, self.pause_at = False, (self.trainer.step // every + 1) * every

    def hold(self) -> None:
        """Hold between two steps until resumed, stepped or stopped, or a limit stops the run."""
        self.report()
        began = time.monotonic()
        while self.paused and not self.stopped:
            self.send(Holding(self.trainer.step))
            self.read_controls(HEARTBEAT_S)
            self.check_limits(time.monotonic() - began)
        self.ended_pauses_s += time.monotonic() - began

    def check_limits(self, this_pause_s: float = 0.0) -> None:
        """Stop the run, saying why in `notice`, once the pause under way has lasted `this_pause_s` past
        MAX_ONE_PAUSE_S, its pauses together past its cap, or the run is past its wall-time cap."""
        if self.stopped:
            return
        if this_pause_s > MAX_ONE_PAUSE_S:
            longest = N_("a pause lasted over {limit:g} s, the longest one pause may last")
            self.notice = Message(longest, limit=MAX_ONE_PAUSE_S)
        elif self.ended_pauses_s + this_pause_s > self.caps.total_pause_s:
            in_all = N_("it was paused for over {limit:g} s in all, the most one run may be paused")
            self.notice = Message(in_all, limit=self.caps.total_pause_s)
        elif time.monotonic() - self.began > self.caps.run_s:
            held = N_("it held a training slot for over {limit:g} s, the most one run may")
            self.notice = Message(held, limit=self.caps.run_s)
        self.stopped = self.notice is not None

    def report(self) -> None:
        """Send the step, and the losses and attention snapshots not sent yet."""
        trainer = self.trainer
        if trainer is None:
            return
        losses, attention = trainer.step_losses[self.sent_losses :], trainer.attention_snapshots[self.sent_attention :]
        self.sent_losses += len(losses)
        self.sent_attention += len(attention)
        self.send(Progress(trainer.step, losses, attention))
        self.reported = time.monotonic()

    def send(self, message: PipeMessage) -> None:
        with self.lock:
            send(self.conn, message)
