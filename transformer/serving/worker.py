"""A training worker: trains the runs the server hands it, one run or several of one shape together
(`batched.train_together`), on its own main thread, and reports over its pipe (the worker's end of the protocol in
`protocol.py`; `worker_link.py` is the server's end).

A worker is a fresh Python process (`python -m transformer.serving FD THREADS`), so a server drawing many
pages never holds the interpreter lock its steps need. Not multiprocessing's spawn: under `streamlit run`,
`__main__` is the app's script, which spawn (and forkserver) would import again in every worker. In tests, and on
hosts that cannot start processes, the same loop runs on a thread of the server over `multiprocessing.Pipe()`. On
a Ray cluster it runs on a thread of a Ray task (`ray_worker.py`), as in a worker process.
"""

import ctypes
import functools
import gc
import os
import pickle
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path

import torch

from ..batched import train_together
from ..i18n import N_, Message, message_of
from ..training import MetricRow, RunFailed, Trainer, warm_up
from .protocol import (
    Alive,
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

REPORT_EVERY_S = 0.05  # how often a training worker sends new losses
HEARTBEAT_S = 0.5  # how often a paused worker says it is still there
MAX_ONE_PAUSE_S = 120.0  # one pause longer than this ends the run (its model is kept): a paused run holds a slot
ALIVE_EVERY_S = 5.0  # how often a training worker says it is there, whatever its training thread is doing
# glibc's allocator in a worker process (`keep_freed_memory`): the sizes from which an allocation gets pages of its own
# (returned to the system when freed), and how much free memory the heap's top keeps for the next allocation.
MMAP_THRESHOLD_BYTES = 32 * 2**20
TRIM_THRESHOLD_BYTES = 64 * 2**20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt's parameters (malloc.h)


def serve(conn: Connection, torch_threads: int, own_process: bool = True) -> None:
    """A worker's loop: train the runs of each StartRuns the server sends, one StartRuns at a time, here, on
    `torch_threads` intra-op threads. Ends when the pipe closes.

    A worker process (or a Ray task's) is prepared (`prepare_process`) before it says it is ready, and gives its
    runs' memory back after each StartRuns; a worker on a server thread (`own_process` False) leaves the memory to
    the server, whose it is, and sets only its own thread's count: torch keeps one per thread, a new thread starting
    from the last count any thread set, so without it a run's arithmetic would depend on what the server did last."""
    if own_process:
        prepare_process(torch_threads)
    else:
        torch.set_num_threads(torch_threads)
    try:
        send(conn, Ready())
        while True:
            message = receive(conn)
            if isinstance(message, StartRuns):  # anything else is a control for a run that has ended: dropped
                last = train_and_report(conn, message)
                if own_process:
                    release_memory()
                send(conn, last)
    except (EOFError, OSError, KeyboardInterrupt):
        return


@functools.cache
def prepare_process(torch_threads: int) -> None:
    """Once per process: set torch's thread count, pay a first step's one-off costs, and freeze the objects the
    process holds (`gc.freeze`), so that the full collection after each StartRuns walks only the runs' own: 0.14 s a
    run otherwise, most of it torch's modules. A Ray task's process, which Ray keeps for the next task, pays once."""
    torch.set_num_threads(torch_threads)
    keep_freed_memory()
    warm_up().join()
    gc.collect()
    gc.freeze()  # what importing torch made lives as long as the process: no collection walks it again


def train_and_report(conn: Connection, start: StartRuns) -> RunEnded:
    """Train the runs of `start`, alone or together, reporting as they go. Each run's end is sent as it comes, but
    the last one's, which is returned: a result or an error a student can read."""
    link = Link(conn)
    gates = link.gates = [Gate(link, start.caps, i) for i in range(len(start.runs))]
    done = threading.Event()
    beat = threading.Thread(target=say_alive, args=(link, done), name="alive", daemon=True)
    beat.start()
    try:
        ready = [gate for gate, configs in zip(gates, start.runs) if gate.build(*configs)]
        for gate in gates:
            if gate.trainer is None:  # its settings made no trainer: its student reads why now, not after the others
                gate.finish()
        if len(ready) == 1:
            for row in ready[0].trainer.train(ready[0].wait_for_step):
                ready[0].report_row(row)
        elif ready:
            for i, row in train_together([gate.trainer for gate in ready], [gate.may_step for gate in ready]):
                if row is None:
                    ready[i].finish()
                else:
                    ready[i].report_row(row)
    except (EOFError, OSError):
        raise  # the server has gone
    except Exception as err:  # a message for every student whose run was still training, never a traceback
        for gate in gates:
            if not gate.ended and gate.error is None:
                gate.error = for_student(err)
    finally:
        done.set()
        beat.join()  # no Alive after the last RunEnded
    for gate in gates:
        if not gate.ended:
            gate.finish()
    return link.last_end


def for_student(err: Exception) -> str:
    """Why a run failed, as a student reads it: a foreseen failure's own message, or what the error was."""
    if isinstance(err, (RunFailed, ValueError)):
        return message_of(err)
    return Message(N_("training failed: {error}"), error=repr(err))


def portable(error: str | None) -> str | None:
    """`error` as it can cross the pipe: a Message goes as its template and parameters (translated where a page
    shows it), or as its English text when a parameter does not make the round trip through pickle."""
    try:
        pickle.loads(pickle.dumps(error, protocol=pickle.HIGHEST_PROTOCOL))
    except Exception:  # pickling an arbitrary object may raise anything: the English text always crosses
        return str(error)
    return error


def say_alive(link: "Link", done: threading.Event) -> None:
    """Send Alive every ALIVE_EVERY_S until `done`: the server's end tells a long evaluation from a hung worker by
    this, and bounds both by the runs' wall-time cap."""
    while not done.wait(ALIVE_EVERY_S):
        try:
            link.send(Alive())
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


def glibc() -> ctypes.CDLL | None:
    """The C library when it is glibc, whose allocator the worker tunes; None elsewhere (the registry restarts a
    worker that holds too much)."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


def keep_freed_memory() -> None:
    """Let the allocator keep what a run frees for its next allocations, up to TRIM_THRESHOLD_BYTES, and give
    pages of their own only to allocations over MMAP_THRESHOLD_BYTES. By default glibc maps each tensor over 128 KB
    afresh and gives its pages back when it is freed, so each metric row's scoring and held-out check takes the same
    pages from the system again, a page fault for each 4 KB: 50-70 a step of the default run, 410-440 of count's,
    3-5% of their training time (`python benchmarks/allocator_bench.py`, docs/benchmarks.md). `release_memory` gives
    the memory back after each StartRuns."""
    libc = glibc()
    if libc is not None:
        libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
        libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)


def release_memory() -> None:
    """Give the memory of a run that has ended back to the system: glibc's allocator keeps freed memory for the
    process otherwise: after a run of the Train form's largest model, hundreds of MB more than before it."""
    gc.collect()
    libc = glibc()
    if libc is not None:
        libc.malloc_trim(0)


class Link:
    """The worker's end of the pipe while it trains one StartRuns: sends one message at a time (the training thread
    and `say_alive` both send), and hands each Control to its run's `Gate`."""

    def __init__(self, conn: Connection):
        self.conn = conn
        self.lock = threading.Lock()
        self.gates: list[Gate] = []
        self.last_end: RunEnded | None = None  # the end of the last run to end, which `serve` sends

    def send(self, message: PipeMessage) -> None:
        with self.lock:
            send(self.conn, message)

    def read_controls(self, wait_s: float = 0.0) -> None:
        """Hand the controls the server has sent to their runs, waiting at most `wait_s` for the first."""
        while self.conn.poll(wait_s):
            wait_s = 0.0
            message = receive(self.conn)
            if isinstance(message, Control) and 0 <= message.run < len(self.gates):
                self.gates[message.run].control(message.name)


class Gate:
    """One run in its worker: builds its trainer, decides before each step whether it steps, holds (paused) or
    stops, within the run's `caps`, and sends its reports and its end."""

    def __init__(self, link: Link, caps: Caps, run: int):
        self.link, self.caps, self.run = link, caps, run
        self.trainer: Trainer | None = None
        self.error: str | None = None  # why the run failed, for the student
        self.paused = self.stopped = self.ended = False
        self.pause_at: int | None = None  # pause again on reaching this step (after Step)
        self.sent_losses = self.sent_attention = 0
        self.reported = self.holding_sent = 0.0
        self.began = time.monotonic()
        self.paused_since: float | None = None  # when the pause under way began
        self.ended_pauses_s = 0.0  # seconds paused, over the pauses that have ended
        self.notice: Message | None = None  # why a limit stopped the run

    def build(self, *configs: object) -> bool:
        """Build the run's trainer; False, with the run's error, when its settings cannot make one."""
        try:
            self.trainer = Trainer(*configs)
        except Exception as err:  # a message for the student, never a traceback
            self.error = for_student(err)
        return self.trainer is not None

    def control(self, name: ControlName) -> None:
        if self.ended:  # a control that crossed the run's end: dropped
            return
        match name:
            case "stop":
                self.stopped = True
            case "pause":
                self.paused, self.pause_at = True, None
            case "resume":
                self.paused, self.pause_at = False, None
            case "step_row":
                every = self.trainer.train_config.eval_every
                self.paused, self.pause_at = False, (self.trainer.step // every + 1) * every

    def wait_for_step(self) -> bool:
        """Before a step of a run trained alone: holds while the run is paused; True when it must stop."""
        self.link.read_controls()
        while (answer := self.decide()) is None:
            self.link.read_controls(HEARTBEAT_S)
        return answer

    def may_step(self) -> bool | None:
        """Before a step of a run trained together with others: True when it must stop, None to hold it this round
        (paused), False to step. Never waits: the other runs would."""
        self.link.read_controls()
        return self.decide()

    def decide(self) -> bool | None:
        """Stop, hold or step, by the controls read so far and the run's limits; sends what is new."""
        if self.pause_at is not None and self.trainer.step >= self.pause_at:
            self.paused, self.pause_at = True, None
        now = time.monotonic()
        self.check_limits(now)
        if self.paused and not self.stopped:
            if self.paused_since is None:
                self.report()
                self.paused_since, self.holding_sent = now, -HEARTBEAT_S
            if now - self.holding_sent >= HEARTBEAT_S:
                self.link.send(Holding(self.run, self.trainer.step))
                self.holding_sent = now
            return None
        if self.paused_since is not None:
            self.ended_pauses_s += now - self.paused_since
            self.paused_since = None
        if now - self.reported >= REPORT_EVERY_S:
            self.report()
        return self.stopped

    def check_limits(self, now: float) -> None:
        """Stop the run, saying why in `notice`, once the pause under way has lasted past MAX_ONE_PAUSE_S, its
        pauses together past its cap, or its time on the slot (the wall time since it began, less the other runs'
        shares of the passes it took with them) past its cap."""
        if self.stopped:
            return
        this_pause_s = 0.0 if self.paused_since is None else now - self.paused_since
        if this_pause_s > MAX_ONE_PAUSE_S:
            longest = N_("a pause lasted over {limit:g} s, the longest one pause may last")
            self.notice = Message(longest, limit=MAX_ONE_PAUSE_S)
        elif self.ended_pauses_s + this_pause_s > self.caps.total_pause_s:
            in_all = N_("it was paused for over {limit:g} s in all, the most one run may be paused")
            self.notice = Message(in_all, limit=self.caps.total_pause_s)
        elif now - self.began - self.trainer.shared_s > self.caps.run_s:
            held = N_("it held a training slot for over {limit:g} s by the clock, the most one run may")
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
        self.link.send(Progress(self.run, trainer.step, losses, attention))
        self.reported = time.monotonic()

    def report_row(self, row: MetricRow) -> None:
        """Send a metric row, the losses up to it first."""
        self.report()
        self.link.send(NewRow(self.run, row, self.trainer.kept_weights(), self.trainer.dynamics.records[-1]))

    def finish(self) -> None:
        """The run has ended: send its last losses, then its end, or, when it is the last of its StartRuns to end,
        leave the end for `serve` to send once the runs' memory is given back."""
        self.ended = True
        self.report()
        trainer = self.trainer
        if self.error is None and trainer is not None and trainer.error is not None:
            self.error = for_student(trainer.error)
        if self.error is None:
            end = RunEnded(self.run, trainer.result, None, trainer.kept_weights(), self.notice)
        else:
            end = RunEnded(self.run, None, portable(self.error), None, self.notice)
        if all(gate.ended for gate in self.link.gates):
            self.link.last_end = end
        else:
            self.link.send(end)
