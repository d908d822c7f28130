"""A training run as pages read it: its settings, status, every step's loss, metric rows, attention snapshots, the
latest weights, the result, and who watches it.

A run holds no trainer. Its worker (`worker.py`) trains it and reports; the server's end of that worker
(`WorkerLink.relay`, on the run's training slot's thread) writes the reports in here (`add_progress`, `add_row`,
`set_holding`, `end`). Pages read the plain fields, and build the model and the data only when they need them
(`model()`, `data()`).
"""

import logging
import threading
import time
from collections.abc import Callable
from functools import cached_property
from typing import Literal

from ..i18n import N_, Message
from ..model import ModelConfig, Transformer
from ..recurrent import build_model
from ..tasks import DataConfig, TaskData
from ..training import MetricRow, TrainConfig, TrainResult
from .protocol import ControlName, Weights

log = logging.getLogger("transformer.serving")  # a line per run queued, started and ended (see `log_runs`)
_STDERR = logging.StreamHandler()
RunStatus = Literal["queued", "preparing", "training", "paused", "done"]
CONNECTED_GRACE = 4  # a watcher whose page is still connected keeps watching for this many idle timeouts unpolled
OPEN_PAGE_POLL_S = 5.0  # a page that polled this recently counts as open where its connection reads closed or unknown


def log_runs() -> None:
    """Write the serving log to stderr at INFO, in Streamlit's own format (time to the millisecond, message): what
    a server's operator reads, and how the load test learns when each run ended on the server."""
    if _STDERR not in log.handlers:
        _STDERR.setFormatter(logging.Formatter("%(asctime)s.%(msecs)03d %(message)s", "%Y-%m-%d %H:%M:%S"))
        log.addHandler(_STDERR)
    log.setLevel(logging.INFO)
    log.propagate = False


def unwatched(idle_timeout_s: float) -> Message:
    """When a run counts as unwatched, in words for students."""
    words = N_("no page checked on it for {idle_s:.0f} s after its connection dropped, or for {grace_s:.0f} s in all")
    return Message(words, idle_s=idle_timeout_s, grace_s=CONNECTED_GRACE * idle_timeout_s)


DROPPED = N_(
    "no page checked on it for {idle_s:.0f} s after its connection dropped, as when a tab closes or a laptop sleeps"
)
QUIET = N_("no page checked on it for {grace_s:.0f} s, though a page of it stayed open")


class Run:
    """One run, fully determined by its three configs: queued, then trained by a worker, then done.

    Watchers (students' browsers) `touch` it as their pages poll. A watcher counts for `idle_timeout_s` after its
    last touch, or CONNECTED_GRACE times as long while its page is still connected (a browser short of CPU polls
    late); a run nobody watches is stopped by its worker's link, or leaves the queue.

    Its `error`, `withdrawn` and `notice` are sentences for students: English, a Message (`transformer.i18n`) where
    they have one, translated by the page that shows them.

    `pause`, `resume`, `step_row` and `stop` are sent to the worker through the `send` that `attach` gives while a
    worker trains the run; what is asked before then is sent when it starts.

    Its one lock guards what pages' threads and the slot's thread share beyond plain fields: the watchers, the
    weights and the model built from them, and the way to the worker (`send`, the controls asked before it, and
    each send itself, so that controls go down the pipe one at a time).
    """

    def __init__(
        self, model_config: ModelConfig, data_config: DataConfig, train_config: TrainConfig, idle_timeout_s: float
    ):
        self.model_config, self.data_config, self.train_config = model_config, data_config, train_config
        self.idle_timeout_s = idle_timeout_s
        self.step = 0
        self.losses: list[float] = []  # the training loss of every step
        self.rows: list[MetricRow] = []  # a metric row every eval_every steps, and one at the end
        self.attention: list[dict] = []  # {"step": int, "maps": AttentionMaps} per row, when record_attention
        self.dynamics: list[dict] = []  # a `transformer.dynamics.Dynamics` record per row
        self.result: TrainResult | None = None
        self.error: str | None = None
        self.withdrawn: str | None = None  # why it left the queue without starting
        self.notice: str | None = None  # why the server ended it early, its model kept (a limit, a lost worker)
        self.left = False  # its last watcher pressed Stop: it stops for that, not for want of watchers
        self.unwatched: Message | None = None  # why no page watched it when its worker's link stopped it for that
        self.address: str | None = None  # the network address of the student who queued it, when known
        self.queued_at = time.perf_counter()
        self.started_at: float | None = None  # perf_counter time a worker took it
        self._weights: tuple[int, Weights] | None = None  # (rows so far, the kept model's weights)
        self._model: tuple[int, Transformer] | None = None  # built from _weights, for every page that asks
        self._lock = threading.Lock()
        self._watchers: dict[str, tuple[float, Callable[[], bool] | None]] = {}  # id -> last touch, connected check
        self._wakes: dict[str, Callable[[], None]] = {}  # id -> a call that redraws its page at once (see `touch`)
        self._asked: list[ControlName] = []  # controls asked before a worker took the run
        self._send: Callable[[ControlName], None] | None = None
        self._trained = self._holding = False
        self._moving = threading.Event()  # set at the first step, or at the end
        self._ended = threading.Event()
        log.info("run queued: %s", self.label)

    # ---- status
    @property
    def status(self) -> RunStatus:
        if self._ended.is_set():
            return "done"
        if self.started_at is None:
            return "queued"
        if not self._trained:
            return "preparing"
        return "paused" if self._holding else "training"

    @property
    def done(self) -> bool:
        return self._ended.is_set()

    def ended_on_its_own_terms(self) -> bool:
        """Solved, or its step budget spent: what its settings alone make (not stopped, failed or timed out)."""
        return self.error is None and self.result is not None and self.result.reason in ("solved", "step budget")

    def wait_until_moving(self, timeout_s: float) -> bool:
        """Wait at most `timeout_s` for the first training step (or the run's end); returns whether it came. A
        page that waits this long after Start draws the curve's first point in the same redraw."""
        return self.started_at is not None and self._moving.wait(timeout_s)

    def wait_until_done(self, timeout_s: float) -> bool:
        return self._ended.wait(timeout_s)

    # ---- watchers
    def touch(
        self, watcher: str, connected: Callable[[], bool] | None = None, wake: Callable[[], None] | None = None
    ) -> None:
        """Note that `watcher` still watches. `connected`, when given, tells whether its page is still connected;
        the reader's thread may call it. `wake`, when given, redraws its page at once: the run calls it when it
        ends, so that its end reaches the page without waiting for the page's next poll."""
        with self._lock:
            self._watchers[watcher] = time.monotonic(), connected
            if wake is not None:
                self._wakes[watcher] = wake

    def forget(self, watcher: str) -> None:
        with self._lock:
            self._watchers.pop(watcher, None)
            self._wakes.pop(watcher, None)

    def watchers(self) -> list[str]:
        """The watchers still watching (see the class docstring)."""
        with self._lock:
            return [w for w, (touched, connected) in self._watchers.items() if self._watching(touched, connected)]

    def open_pages(self) -> int:
        """How many watchers watch from a page open now: connected, or polled within OPEN_PAGE_POLL_S. A closed
        page still keeps the run going for a while (`watchers`), so that a reload gets it back, but no one sees it
        there."""
        now = time.monotonic()
        with self._lock:
            return sum(
                now - touched <= OPEN_PAGE_POLL_S or (connected is not None and connected())
                for touched, connected in self._watchers.values()
                if self._watching(touched, connected)
            )

    def stop_reason(self) -> str:
        """Why a run that stopped before its settings ended it did, as a class records it and a lab report says it:
        "ended by the server" (a limit of the server's, or its worker lost: its `notice` says which), "page closed"
        (no page watched it any more) or "stopped" (its last watcher's Stop)."""
        if self.notice is not None:
            return "ended by the server"
        return "page closed" if self.unwatched is not None and not self.left else "stopped"

    def unwatched_why(self) -> Message:
        """Why no page watches the run (`watchers` is empty), in words for students: the one of the two ways a
        watcher lapses that applies."""
        with self._lock:
            open_page = any(connected is not None and connected() for _, connected in self._watchers.values())
        if open_page:
            return Message(QUIET, grace_s=CONNECTED_GRACE * self.idle_timeout_s)
        return Message(DROPPED, idle_s=self.idle_timeout_s)

    def _watching(self, touched: float, connected: Callable[[], bool] | None) -> bool:
        quiet = time.monotonic() - touched
        if quiet <= self.idle_timeout_s:
            return True
        return connected is not None and quiet <= CONNECTED_GRACE * self.idle_timeout_s and connected()

    # ---- controls, sent to the worker
    def pause(self) -> None:
        """Hold the run before its next step (it reads paused once the worker holds)."""
        self._control("pause")

    def resume(self) -> None:
        """Go on from where the run was paused."""
        self._holding = False
        self._control("resume")

    def step_row(self) -> None:
        """Train up to the next metric row, then pause."""
        self._holding = False
        self._control("step_row")

    def stop(self, wait_s: float = 0.0) -> None:
        """Stop after the current step (the model trained so far is kept); wait at most `wait_s` for the end."""
        self._control("stop")
        if wait_s:
            self._ended.wait(wait_s)

    def _control(self, name: ControlName) -> None:
        with self._lock:
            if self._send is None:
                self._asked.append(name)
            else:
                self._send(name)

    # ---- written by the registry and the worker's link
    def take(self) -> None:
        """A training slot takes the run: it is no longer queued."""
        self.started_at = time.perf_counter()
        log.info("run started: %s, %.2f s after it was queued", self.label, self.started_at - self.queued_at)

    def attach(self, send: Callable[[ControlName], None]) -> None:
        """A worker trains the run: the controls asked before go to `send` now, and every control from now on."""
        with self._lock:
            self._send = send
            for name in self._asked:
                send(name)
            self._asked = []

    def detach(self) -> None:
        with self._lock:
            self._send = None

    def add_progress(self, step: int, losses: list[float], attention: list[dict]) -> None:
        self.losses.extend(losses)
        self.attention.extend(attention)
        self.step, self._trained, self._holding = step, True, False
        if step > 0:
            self._moving.set()

    def set_holding(self, holding: bool) -> None:
        self._trained, self._holding = True, holding

    def add_row(self, row: MetricRow, weights: Weights, dynamics: dict) -> None:
        """A new metric row; a row of the last row's step is that row scored again (`Trainer.end`): it replaces it."""
        with self._lock:
            self._weights = len(self.rows) + 1, weights
        if self.rows and self.rows[-1]["step"] == row["step"]:
            self.dynamics[-1], self.rows[-1] = dynamics, row
        else:
            self.dynamics.append(dynamics)
            self.rows.append(row)

    def end(
        self, result: TrainResult | None, error: str | None, weights: Weights | None = None, notice: str | None = None
    ) -> None:
        """The run has ended: with a result, or an error a student can read; `notice` says why the server ended it
        before its settings did."""
        with self._lock:
            if weights is not None:
                self._weights = len(self.rows) + 1, weights
        self.result, self.error, self.notice, self._holding = result, error, notice, False
        log.info(
            "run ended: %s, %.2f s after it was queued: %s",
            self.label,
            time.perf_counter() - self.queued_at,
            self._outcome(),
        )
        self._moving.set()
        self._ended.set()
        with self._lock:
            wakes = [wake for watcher, wake in self._wakes.items() if self._watching(*self._watchers[watcher])]
        for wake in wakes:
            wake()

    def lose(self, reason: str) -> None:
        """Its worker ended or fell silent mid-run: the run ends stopped, its model the snapshot of its last metric
        row, or with `reason` as its error when it had none yet."""
        if not self.rows:
            self.end(None, reason)
            return
        row = self.rows[-1]
        step = int(row["step"])
        result = TrainResult(step, row["elapsed_s"], row["exact_match"], row["token_acc"], "stopped")
        kept = N_("{reason} at step {step}; the model kept is its snapshot of step {kept_step}")
        self.end(result, None, notice=Message(kept, reason=reason, step=self.step, kept_step=step))

    def _outcome(self) -> str:
        """How the run ended, in a few words, for the log."""
        if self.withdrawn:
            return f"left the queue ({self.withdrawn})"
        if self.result is None:
            return f"failed ({self.error})"
        return f"{self.result.reason} at step {self.result.steps} after {self.result.seconds:.2f} s of training"

    def withdraw(self, reason: str) -> None:
        """End a run that never started: it leaves the queue, and `withdrawn` says why."""
        self.withdrawn = reason
        self.end(None, None)

    # ---- what pages build from it
    def model(self) -> Transformer | None:
        """The kept model as of the latest metric row (the final model once done), in eval mode; None before the
        first row. Built once per row for every page that asks; read-only."""
        with self._lock:
            if self._weights is None:
                return None
            version, weights = self._weights
            if self._model is None or self._model[0] != version:
                model = build_model(self.model_config)
                model.load_state_dict(weights)
                self._model = version, model.eval().requires_grad_(False)
            return self._model[1]

    def data(self) -> TaskData:
        """The run's task data (its held-out set is what its rows score), built on first use."""
        return self._task_data

    @cached_property
    def _task_data(self) -> TaskData:
        return TaskData(self.data_config)

    def weights_held(self) -> int:
        """Numbers this run keeps in memory: its weights and the model built from them."""
        return 0 if self._weights is None else 2 * sum(t.numel() for t in self._weights[1].values())

    @property
    def label(self) -> str:
        """The run in a few words, for the log: task, lengths, seed."""
        data = self.data_config
        return f"{data.task} {data.min_len}-{data.max_len} seed {self.train_config.seed}"

    def __repr__(self) -> str:
        return f"Run({self.data_config.task}, seed {self.train_config.seed}, {self.status}, step {self.step})"
