"""The server's training runs: identical runs are one run, distinct runs share a few training slots, first come,
first served, and wait in a bounded queue when every slot is taken.

A run is fully determined by its settings and seed: the data, the starting weights and the dropout masks come from
the run's own generators (see `Trainer`). So a student who starts a run with the same settings as one that is
training, or that recently finished on its own terms (solved, or its step budget spent), joins it: one run, many
watchers. Everything else (another seed, another switch, another device) is a run of its own.
"""

import json
import math
import os
import statistics
import threading
from collections import deque
from dataclasses import asdict, dataclass
from pathlib import Path

from .device import pick_device
from .model import ModelConfig
from .tasks import DataConfig
from .training import ServerBusy, TrainConfig, TrainingJob, unwatched
from .workers import WorkerPool, WorkerTrainingJob

DEFAULT_RUN_S = 10.0  # the guess for a run's length before any has finished on this server
MAX_FINISHED_WEIGHTS = 10_000_000  # weights (and copies of them) that finished runs kept for joining may hold


def cgroup_cpu_quota(root: Path = Path("/sys/fs/cgroup")) -> float | None:
    """The CPU quota of this process's container in cores (cgroup v2 `cpu.max`, or v1 `cpu.cfs_quota_us` over
    `cpu.cfs_period_us`), or None when there is none or it cannot be read."""
    try:
        if (root / "cpu.max").exists():
            quota, period = (root / "cpu.max").read_text().split()[:2]
        else:
            quota = (root / "cpu" / "cpu.cfs_quota_us").read_text().strip()
            period = (root / "cpu" / "cpu.cfs_period_us").read_text().strip()
        if quota in ("max", "-1"):
            return None
        return int(quota) / int(period)
    except (OSError, ValueError, ZeroDivisionError):
        return None


def usable_cores(root: Path = Path("/sys/fs/cgroup")) -> int:
    """CPU cores this process may use: the ones it may run on, capped by its container's CPU quota (a hosted
    container often reports the host's cores to `os.cpu_count()`)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    quota = cgroup_cpu_quota(root)
    return max(1, min(cores, int(quota))) if quota is not None else max(1, cores)


class QueueFull(ServerBusy):
    """The queue of runs waiting for a slot is full."""


class AlreadyTraining(ServerBusy):
    """This watcher (one browser) already has another run training or queued."""


def run_key(model_config: ModelConfig, data_config: DataConfig, train_config: TrainConfig) -> str:
    """What makes a run: every setting, with the device resolved ("auto" on a GPU server is "cuda")."""
    train = {**asdict(train_config), "device": str(pick_device(train_config.device))}
    return json.dumps([asdict(model_config), asdict(data_config), train], sort_keys=True)


@dataclass
class Place:
    """Where a queued run stands: 1-based `position` in the queue and the estimated wait in seconds."""

    position: int
    wait_s: float


class RunRegistry:
    """Every run on one server, by `run_key`.

    `slots` runs train at once; more distinct runs wait in a first-come, first-served queue of at most `max_queue`
    and start on their own when a slot frees. A queued run whose watchers have all gone (see
    `TrainingJob.watchers`: none polled it for `idle_timeout_s`, or longer from a page still connected; or all
    left) leaves the queue; a training one stops. The last `keep_finished` runs that ended
    on their own terms stay joinable. Jobs that are not the registry's own (the Compare page's) take slots through
    `acquire`/`release`, after the queue. With `workers`, the registry's runs train in those worker processes
    (`WorkerTrainingJob`), else on threads of this process.
    """

    def __init__(
        self,
        slots: int,
        max_queue: int,
        idle_timeout_s: float,
        keep_finished: int = 16,
        workers: WorkerPool | None = None,
    ):
        if slots < 1 or max_queue < 0 or keep_finished < 0:
            raise ValueError("slots must be at least 1, max_queue and keep_finished at least 0")
        self.slots, self.max_queue, self.keep_finished = slots, max_queue, keep_finished
        self.idle_timeout_s, self.workers = idle_timeout_s, workers
        self._lock = threading.RLock()
        self._runs: dict[str, TrainingJob] = {}  # joinable runs: queued, training, or finished on their own terms
        self._queue: deque[TrainingJob] = deque()
        self._held = 0  # slots taken, by the registry's jobs and by outside holders
        self._durations: deque[float] = deque(maxlen=20)  # seconds of recently finished runs, for wait estimates

    # The slot protocol of `training.Slots`, for jobs that are not the registry's own.
    def acquire(self, blocking: bool = False) -> bool:
        """Take a slot for an outside job: only when one is free and no run waits in the queue."""
        with self._lock:
            self._drop_gone()
            if self._held < self.slots and not self._queue:
                self._held += 1
                return True
            return False

    def release(self) -> None:
        """Give a slot back; the next queued run takes it."""
        with self._lock:
            self._held -= 1
            self._promote()

    def start(
        self, watcher: str, model_config: ModelConfig, data_config: DataConfig, train_config: TrainConfig
    ) -> TrainingJob:
        """The run these settings make, for `watcher`: joined when one is training, queued or recently finished,
        else a new one, started at once when a slot is free, else queued. Raises AlreadyTraining when the watcher
        has another run training or queued, QueueFull when the queue is full, ValueError for bad settings."""
        key = run_key(model_config, data_config, train_config)
        with self._lock:
            self._drop_gone()
            job = self._runs.get(key)
            if job is not None and self._joinable(job):
                job.touch(watcher)
                return job
            if any(watcher in other.watchers() for other in self._active()):
                raise AlreadyTraining("your run in another tab is still training or queued: stop it there first")
            if self._held >= self.slots and len(self._queue) >= self.max_queue:
                raise QueueFull(
                    f"{len(self._queue)} runs are already waiting for a training slot, the most this server queues"
                )
            configs = (model_config, data_config, train_config)
            ending = {"slots": self, "idle_timeout_s": self.idle_timeout_s, "on_end": self._ended}
            if self.workers is None:
                job = TrainingJob(*configs, **ending)
            else:
                job = WorkerTrainingJob(*configs, self.workers, **ending)
            job.touch(watcher)
            self._runs[key] = job
            self._queue.append(job)
            self._promote()
            return job

    def leave(self, watcher: str, job: TrainingJob) -> None:
        """`watcher` stops watching `job`: the run stops (or leaves the queue) once nobody watches it."""
        with self._lock:
            if job.leave(watcher) and job in self._queue:
                self._withdraw(job, "everyone watching it left the queue")

    def place(self, job: TrainingJob) -> Place | None:
        """A queued job's place in the queue, or None when it is not queued."""
        with self._lock:
            self._drop_gone()
            if job not in self._queue:
                return None
            position = self._queue.index(job) + 1
            typical = statistics.median(self._durations) if self._durations else DEFAULT_RUN_S
            return Place(position, math.ceil(position / self.slots) * typical)

    def watching(self) -> int:
        """Watchers of runs that have not ended, over the whole server: how many pages are polling a run."""
        with self._lock:
            return sum(len(job.watchers()) for job in self._active())

    def counts(self) -> dict[str, int]:
        """Runs training (slots taken), queued, and kept finished."""
        with self._lock:
            finished = sum(1 for job in self._runs.values() if job.done)
            return {"training": self._held, "queued": len(self._queue), "finished": finished}

    def _joinable(self, job: TrainingJob) -> bool:
        if job.status == "done":
            return _ended_on_its_own_terms(job)
        return job.status != "paused" and bool(job.watchers())  # a paused run is its one watcher's to step through

    def _active(self) -> list[TrainingJob]:
        return [job for job in self._runs.values() if job.status != "done"]

    def _promote(self) -> None:
        """Start queued runs while slots are free."""
        self._drop_gone()
        while self._queue and self._held < self.slots:
            job = self._queue.popleft()
            self._held += 1
            try:
                job.start(holding_slot=True)  # releases the slot itself if its thread cannot start
            except RuntimeError as err:
                job.error = f"training could not start: {err}"
                self._forget(job)

    def _drop_gone(self) -> None:
        """Queued runs nobody polls any more leave the queue."""
        for job in [job for job in self._queue if not job.watchers()]:
            self._withdraw(job, f"{unwatched(self.idle_timeout_s)}, as when a tab closes or a laptop sleeps")

    def _withdraw(self, job: TrainingJob, reason: str) -> None:
        self._queue.remove(job)
        self._forget(job)
        job.withdraw(reason)

    def _ended(self, job: TrainingJob) -> None:
        """Called on the job's thread once it has ended (its slot already released)."""
        with self._lock:
            if job.result is not None:
                self._durations.append(job.result.seconds)
            if not _ended_on_its_own_terms(job):
                self._forget(job)
            finished = [key for key, other in self._runs.items() if other.done or other is job]  # oldest first
            weights = sum(_weights(self._runs[key]) for key in finished)
            while finished and (len(finished) > self.keep_finished or weights > MAX_FINISHED_WEIGHTS):
                weights -= _weights(self._runs[finished[0]])
                del self._runs[finished.pop(0)]

    def _forget(self, job: TrainingJob) -> None:
        for key, other in list(self._runs.items()):
            if other is job:
                del self._runs[key]


def _ended_on_its_own_terms(job: TrainingJob) -> bool:
    """Whether an ended run is what its settings alone make: solved, or its step budget spent (not stopped by a
    watcher or a time budget, which depend on when)."""
    return job.error is None and job.result is not None and job.result.reason in ("solved", "step budget")


def _weights(job: TrainingJob) -> int:
    """Weights a finished job holds: its model, the snapshot pages read, and the raw network when averaged."""
    trainer = job.trainer
    return 0 if trainer is None else 3 * sum(p.numel() for p in trainer.model.parameters())
