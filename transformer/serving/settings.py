"""The server's settings: one dataclass, read once from `LAB_*` environment variables (docs/classroom.md lists them;
docs/scale.md the Ray cluster's, `LAB_RAY_ADDRESS`)."""

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path

from ..config_checks import require_all
from ..limits import MAX_TIME_BUDGET_S

MAX_TRAINING_SLOTS = 64  # runs one server trains at once, on its own cores or on a Ray cluster's CPUs
RAY_ADDRESS = re.compile(r"auto|[A-Za-z0-9.-]{1,253}:\d{1,5}")  # the head's host:port (its GCS port), or "auto"


def data_dir(env: Mapping[str, str] = os.environ) -> Path:
    """Where the server keeps its files (the class database's SQLite file, the runs in flight): `LAB_DATA_DIR`,
    default `./data`."""
    return Path(env.get("LAB_DATA_DIR") or "data")


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


@dataclass(frozen=True)
class ServerSettings:
    """How one server trains its students' runs. Each field is read from the environment variable `ENV_NAMES`
    gives it, and checked against its bounds before anything is started."""

    training_slots: int = 0  # LAB_TRAINING_SLOTS: runs training at once; 0: one per usable core
    max_queue: int = 60  # LAB_MAX_QUEUE: distinct runs waiting for a slot (two classes' worth)
    idle_timeout_s: float = 30.0  # LAB_JOB_IDLE_TIMEOUT_S: a run nobody polls stops (see run.CONNECTED_GRACE)
    torch_threads: int = 1  # LAB_TORCH_THREADS: intra-op threads per computation
    switch_interval_s: float = 0.0005  # LAB_SWITCH_INTERVAL_S: longest a thread holds the GIL while another waits
    worker_processes: bool = True  # LAB_TRAINING_PROCESSES: 1 trains in worker processes, 0 on server threads
    max_run_s: float = 600.0  # LAB_MAX_RUN_S: wall-clock seconds a run may hold its slot, pauses included
    max_total_pause_s: float = 240.0  # LAB_MAX_PAUSED_S: seconds a run may be paused in all, over every pause
    worker_max_mb: float = 600.0  # LAB_WORKER_MAX_MB: a worker holding more memory than this after a run restarts
    runs_per_address: int = 40  # LAB_MAX_RUNS_PER_ADDRESS: runs queued or training from one network address
    ray_address: str = ""  # LAB_RAY_ADDRESS: train on this Ray cluster (docs/scale.md); empty: on this server
    train_together: int = 1  # LAB_TRAIN_TOGETHER: most queued runs of one shape a slot trains together; 1: none

    def __post_init__(self) -> None:
        require_all(
            (0 <= self.training_slots <= MAX_TRAINING_SLOTS, f"LAB_TRAINING_SLOTS must be in 0..{MAX_TRAINING_SLOTS}"),
            (0 <= self.max_queue <= 1000, "LAB_MAX_QUEUE must be in 0..1000"),
            (0.1 <= self.idle_timeout_s <= 3600, "LAB_JOB_IDLE_TIMEOUT_S must be in 0.1..3600"),
            (1 <= self.torch_threads <= 64, "LAB_TORCH_THREADS must be in 1..64"),
            (1e-5 <= self.switch_interval_s <= 0.1, "LAB_SWITCH_INTERVAL_S must be in 0.00001..0.1"),
            (1 <= self.max_run_s <= MAX_TIME_BUDGET_S, f"LAB_MAX_RUN_S must be in 1..{MAX_TIME_BUDGET_S}"),
            (0.1 <= self.max_total_pause_s <= 3600, "LAB_MAX_PAUSED_S must be in 0.1..3600"),
            (100 <= self.worker_max_mb <= 100_000, "LAB_WORKER_MAX_MB must be in 100..100000"),
            (1 <= self.runs_per_address <= 1000, "LAB_MAX_RUNS_PER_ADDRESS must be in 1..1000"),
            (1 <= self.train_together <= 64, "LAB_TRAIN_TOGETHER must be in 1..64"),
        )

    @property
    def ray_address_problem(self) -> str | None:
        """Why `ray_address` names no Ray head (one line, for the server log), or None when it does or is empty:
        the server then trains on its own workers (`registry.training_slots`), as when the head cannot be reached."""
        if self.ray_address == "" or RAY_ADDRESS.fullmatch(self.ray_address):
            return None
        return f"LAB_RAY_ADDRESS {ascii(self.ray_address[:100])} is not host:port (the Ray head's address) or auto"

    @property
    def slots(self) -> int:
        """Runs training at once on this server: the setting, or one per usable core (threads share the GIL;
        docs/classroom.md). On a Ray cluster, `cluster_slots`."""
        return self.training_slots or usable_cores()

    @property
    def most_cluster_slots(self) -> int:
        """The most runs training at once on a Ray cluster, whatever its CPUs: the setting, or MAX_TRAINING_SLOTS."""
        return self.training_slots or MAX_TRAINING_SLOTS

    def cluster_slots(self, cluster_cpus: int) -> int:
        """Runs training at once on a Ray cluster with `cluster_cpus` CPUs: one per CPU, bounded by the setting."""
        return max(1, min(cluster_cpus, self.most_cluster_slots))

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> "ServerSettings":
        """The settings `env` gives, defaults for the variables it lacks; ValueError naming a bad variable."""
        values = {}
        for field in fields(cls):
            name = ENV_NAMES[field.name]
            if name not in env:
                continue
            text = env[name].strip()
            try:
                values[field.name] = text not in ("0", "") if field.type is bool else field.type(text)
            except ValueError:
                raise ValueError(f"{name} must be a number, not {text[:20]!r}") from None
        return cls(**values)


ENV_NAMES = {  # field -> environment variable
    "training_slots": "LAB_TRAINING_SLOTS",
    "max_queue": "LAB_MAX_QUEUE",
    "idle_timeout_s": "LAB_JOB_IDLE_TIMEOUT_S",
    "torch_threads": "LAB_TORCH_THREADS",
    "switch_interval_s": "LAB_SWITCH_INTERVAL_S",
    "worker_processes": "LAB_TRAINING_PROCESSES",
    "max_run_s": "LAB_MAX_RUN_S",
    "max_total_pause_s": "LAB_MAX_PAUSED_S",
    "worker_max_mb": "LAB_WORKER_MAX_MB",
    "runs_per_address": "LAB_MAX_RUNS_PER_ADDRESS",
    "ray_address": "LAB_RAY_ADDRESS",
    "train_together": "LAB_TRAIN_TOGETHER",
}
