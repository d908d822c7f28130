"""The Train runs a server's restart lost, for the browsers that started them: a small file under `LAB_DATA_DIR` lists
the runs in flight by browser, with the Train form's values each was started with, written again every
WRITE_EVERY_S while any is followed. The next server reads what the last one left there, so that a student's pages
can say their run was lost and give the form its settings back, until the browser starts another. A class run is
kept in the class database instead (`classroom.recorder`). A JSON file of a few entries, not a database: it is one
server's, read once as it starts.
"""

import json
import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .run import Run

WRITE_EVERY_S = 2.0  # how often the runs in flight are written down, when they have changed
MAX_FILE_BYTES = 1_000_000  # a larger file is not read: it is no file this module wrote
FORM_VALUE = (int, float, str, bool, type(None))  # what a Train form's widget holds
log = logging.getLogger("transformer.serving")


@dataclass(frozen=True)
class LostRun:
    """A run the last server had in flight for a browser: its task, seed and the step it had reached, and the Train
    form's values it was started with (by widget key)."""

    task: str
    seed: int
    step: int
    form: Mapping[str, Any]


def lost_run(entry: object) -> LostRun | None:
    """An entry of the file as a LostRun; None for anything else."""
    if not isinstance(entry, dict):
        return None
    task, seed, step, form = entry.get("task"), entry.get("seed"), entry.get("step"), entry.get("form")
    if not (isinstance(task, str) and type(seed) is int and type(step) is int and isinstance(form, dict)):
        return None
    if not all(isinstance(key, str) and isinstance(value, FORM_VALUE) for key, value in form.items()):
        return None
    return LostRun(task, seed, step, form)


class LostRuns:
    """What the server that ran before this one left in flight (`lost`), and this server's runs in flight, written to
    `path` (`follow`) for the next."""

    def __init__(self, path: Path, every_s: float = WRITE_EVERY_S):
        self.path, self.every_s = path, every_s
        self._lock = threading.Lock()
        self._lost = self._read()
        self._followed: dict[str, tuple[Run, LostRun]] = {}
        self._written: dict | None = None
        self._write()  # the last server's runs are in flight here no more
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="lost-runs", daemon=True)
        self._thread.start()

    def follow(self, browser: str, run: Run, form: Mapping[str, Any]) -> None:
        """Write down `run`, started by `browser` with the Train form's values `form`, until it ends (in place of any
        run the browser started before, and of the run the last server lost for it)."""
        entry = LostRun(run.data_config.task, run.train_config.seed, 0, dict(form))
        with self._lock:
            self._followed[browser] = run, entry
            self._lost.pop(browser, None)
        self._write()

    def lost(self, browser: str) -> LostRun | None:
        """The run `browser` had in flight when the last server stopped, until it starts another; None if none."""
        with self._lock:
            return self._lost.get(browser)

    def close(self) -> None:
        """Stop writing: what was last written stays for the next server."""
        self._closed.set()
        self._thread.join(5)

    def _read(self) -> dict[str, LostRun]:
        try:
            if self.path.stat().st_size > MAX_FILE_BYTES:
                return {}
            entries = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # none yet, or not this module's
            return {}
        if not isinstance(entries, dict):
            return {}
        return {browser: lost for browser, entry in entries.items() if (lost := lost_run(entry)) is not None}

    def _write(self) -> None:
        with self._lock:
            self._followed = {b: (run, e) for b, (run, e) in self._followed.items() if not run.done}
            entries = {b: {**asdict(e), "step": run.step} for b, (run, e) in self._followed.items()}
            if entries == self._written:
                return
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                temporary = self.path.with_suffix(".tmp")
                temporary.write_text(json.dumps(entries), encoding="utf-8")
                os.replace(temporary, self.path)  # whole or not at all: a server killed mid-write leaves the last
            except OSError as err:  # a read-only disk: the runs train on, a restart loses them unsaid
                log.warning("could not write the runs in flight to %s: %s", self.path, err)
                return
            self._written = entries

    def _loop(self) -> None:
        while not self._closed.wait(self.every_s):
            self._write()
