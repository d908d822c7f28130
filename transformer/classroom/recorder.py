"""Keeping a class's runs in its database while they train: one thread per server writes the state of every run a
class student started, when it has changed, every few seconds and once at its end (with the run's lab report), and
reports every HEARD_EVERY_S that it still holds the others. Pages never write run states, so a closed tab still has
its run recorded, and thirty polling pages cost the database nothing.

Each student's write stands alone: one that fails (a class deleted meanwhile, a database briefly away) never stops
the others, and is made again next round unless the class has ended. The same thread purges expired classes every
PURGE_EVERY_S, and once as it starts.
"""

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import asdict

from sqlalchemy.exc import SQLAlchemyError

from ..limits import HEARD_EVERY_S, PURGE_EVERY_S
from ..serving import Place, Run
from .records import RunState, Student
from .reports import record_run_report
from .store import NOT_SEATED, ClassStore, UnknownClass

RECORD_EVERY_S = 2.0  # how often a followed run's state is written, when it has changed
log = logging.getLogger("transformer.classroom")


def run_state(run: Run, place: Place | None) -> RunState:
    """What a class keeps of a run as it stands: its status for the board, step, queue place, rows and result."""
    if run.status == "queued":
        return RunState("queued", 0, None if place is None else place.position)
    rows = tuple(run.rows[:])
    if not run.done:
        return RunState("paused" if run.status == "paused" else "training", run.step, None, rows)
    if run.error is not None:
        return RunState("failed", run.step, None, rows, error=run.error)
    if run.result is None:  # left the queue
        return RunState("stopped", run.step, None, rows)
    if run.result.reason != "stopped":
        return RunState("finished", run.step, None, rows, asdict(run.result))
    stopped = {**asdict(run.result), "reason": run.stop_reason()}
    return RunState("stopped", run.step, None, rows, stopped)  # not measured


class ClassRecorder:
    """Follows runs of class students and writes their states into `store` (see the module docstring), as the
    server `store` names. `place` tells a queued run's place (the registry's `place`); `withdraw` ends a run whose
    student is no longer in their class (removed by their teacher, or the class deleted), with a reason (the
    registry's `withdraw`; None leaves such a run to train on unrecorded)."""

    def __init__(
        self,
        store: ClassStore,
        place: Callable[[Run], Place | None],
        every_s: float = RECORD_EVERY_S,
        withdraw: Callable[[Run, str], None] | None = None,
    ):
        self.store, self.place, self.every_s, self.withdraw = store, place, every_s, withdraw
        self._lock = threading.Lock()
        self._followed: dict[int, tuple[Student, Run, RunState | None]] = {}  # student id -> student, run, last kept
        self._heard = self._purged = time.monotonic()
        store.purge_expired()
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="class-recorder", daemon=True)
        self._thread.start()

    def follow(self, student: Student, run: Run) -> None:
        """Record `run` as `student`'s run from now on (in place of any run they started before); its state is
        written at once, or next round if the database is briefly away."""
        with self._lock:
            self._followed[student.id] = student, run, None
        self._write(student, run, None)

    def record(self, student: Student) -> None:
        """Write the state of `student`'s followed run now, if it has changed (a page about to read it back)."""
        with self._lock:
            followed = self._followed.get(student.id)
        if followed is not None:
            self._write(*followed)

    def record_once(self) -> None:
        """Write every followed run whose state changed; stop following the runs that have ended; report on the
        others every HEARD_EVERY_S, and end those whose students are no longer in their class."""
        with self._lock:
            followed = list(self._followed.values())
        for student, run, kept in followed:
            self._write(student, run, kept)
        if time.monotonic() - self._heard >= HEARD_EVERY_S:
            with self._lock:
                held = {student.id: (student, run) for student, run, _ in self._followed.values()}
            for student in self.store.heard(student for student, _ in held.values()):
                self._unseated(student, held[student.id][1])
            self._heard = time.monotonic()

    def _write(self, student: Student, run: Run, kept: RunState | None) -> None:
        """Write `run`'s state if it is not `kept`, the last one written; forget the run once it has ended and is
        written, or once its class has ended."""
        ended = run.done  # read first: the state read after it is then the final one
        state = run_state(run, self.place(run) if run.status == "queued" else None)
        try:
            if state != kept:
                if ended:  # its report first: a board that shows the run ended finds the report of that run
                    record_run_report(self.store, student, run)
                self.store.record_run(student, state)
        except UnknownClass:  # the student was removed, or their class deleted: nothing more is recorded
            self._unseated(student, run)
            return
        except (SQLAlchemyError, ValueError) as err:  # the next round writes it again
            log.warning("class recorder: the run of student %d not written: %s", student.id, err)
            return
        with self._lock:
            if self._followed.get(student.id, (None, None))[1] is run:
                if ended:
                    del self._followed[student.id]
                else:
                    self._followed[student.id] = student, run, state

    def _unseated(self, student: Student, run: Run) -> None:
        """Stop following `run`, whose student is no longer in their class, and end it (`withdraw`): it holds no
        slot, and no student who takes their place (and so their seed) takes it as theirs."""
        with self._lock:
            if self._followed.get(student.id, (None, None))[1] is run:
                del self._followed[student.id]
        if self.withdraw is not None and not run.done:
            self.withdraw(run, NOT_SEATED)

    def close(self) -> None:
        """Write what is new, then stop; once."""
        if self._closed.is_set():
            return
        self._closed.set()
        self._thread.join(10)
        self.record_once()

    def _loop(self) -> None:
        while not self._closed.wait(self.every_s):
            try:
                self.record_once()
                if time.monotonic() - self._purged >= PURGE_EVERY_S:
                    self.store.purge_expired()
                    self._purged = time.monotonic()
            except SQLAlchemyError as err:  # a database that is briefly away: the next round tries again
                log.warning("class recorder: %s", err)
