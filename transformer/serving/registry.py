"""Every run on one server: identical runs are one run, distinct runs wait in a first-come, first-served queue for
the server's training slots, and a chain of runs (Compare's variants) moves on by itself.

A run is fully determined by its settings and seed: the data, the starting weights and the dropout masks come from
the run's own generators (see `Trainer`). So a student who asks for the same settings as a run that is training,
or that recently finished on its own terms (solved, or its step budget spent), joins it: one run, many watchers.

Each training slot is a thread of the server with a worker of its own: the thread takes the next queued run,
has its worker train it (`WorkerLink.relay` writes the reports into the run), and takes the next; with
`LAB_TRAIN_TOGETHER` above 1 it takes queued runs of that run's shape with it, which its worker trains together
(`batched.train_together`). The workers are this server's, or with `LAB_RAY_ADDRESS` a Ray task for each run on a
cluster, reached through the server's one gateway process, one slot per CPU of the cluster (`training_slots`).
"""

import ipaddress
import json
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace

from .. import settings as spec
from ..batched import together_key
from ..device import pick_device
from ..i18n import N_, Message
from ..model import ModelConfig
from ..pairs import TaskPairs
from ..run_configs import run_configs
from ..tasks import DataConfig
from ..training import TrainConfig
from .protocol import Caps
from .run import Run, log, log_runs
from .settings import ServerSettings, usable_cores
from .waits import RunLengths, expected_wait_s
from .worker_link import READY_TIMEOUT_S, RayGateway, WorkerLink, WorkerLost

DEFAULT_RUN_S = 10.0  # the guess for a run's length before any has finished on this server
MIN_TOGETHER = 4  # the fewest runs a slot trains together: fewer are faster one by one (docs/benchmarks.md)
MAX_FINISHED_WEIGHTS = 10_000_000  # numbers that finished runs kept for joining may hold
Configs = tuple[ModelConfig, DataConfig, TrainConfig]


class ServerBusy(RuntimeError):
    """The server cannot take this run now."""


class QueueFull(ServerBusy):
    """The queue of runs waiting for a slot is full."""


class AlreadyTraining(ServerBusy):
    """This watcher (one browser) already has another run training or queued."""


class AddressBusy(ServerBusy):
    """This network address already has as many runs training or queued as one address may."""


def network_address(peer: str | None, forwarded_for: str | None) -> str | None:
    """The network address a student's page comes from: the connection's `peer` (None: loopback), or, where that
    is a proxy on a private network or this host, the address that proxy saw, the last in its `X-Forwarded-For`.
    None when unknown. A client that reaches the server directly from a private network can forge the header."""
    forwarded = (forwarded_for or "").split(",")[-1].strip()
    try:
        through_proxy = peer is None or ipaddress.ip_address(peer).is_private
        return str(ipaddress.ip_address(forwarded)) if through_proxy and forwarded else peer
    except ValueError:
        return peer


def training_slots(settings: ServerSettings) -> tuple[RayGateway | None, int]:
    """Where runs train and how many at once: through a gateway to the Ray cluster at `settings.ray_address`, one
    per CPU it has (bounded by LAB_TRAINING_SLOTS), or, with no cluster, a malformed address or a cluster that
    cannot be reached, on this server's workers."""
    if settings.ray_address:
        if problem := settings.ray_address_problem:
            log.warning("%s", problem)
        elif (gateway := RayGateway(settings.ray_address, settings.torch_threads, settings.most_cluster_slots)).cpus:
            return gateway, settings.cluster_slots(gateway.cpus)
        log.warning("training on this server's own workers, %d at once", settings.slots)
    return None, settings.slots


def run_key(model_config: ModelConfig, data_config: DataConfig, train_config: TrainConfig) -> str:
    """What makes a run: every setting, with the device resolved ("auto" on a GPU server is "cuda")."""
    train = {**asdict(train_config), "device": str(pick_device(train_config.device))}
    return json.dumps([asdict(model_config), asdict(data_config), train], sort_keys=True)


def run_kind(run: Run) -> str:
    """What a run's length depends on: every setting but the seed (a class's runs are one kind)."""
    return run_key(run.model_config, replace(run.data_config, seed=0), replace(run.train_config, seed=0))


@dataclass
class Place:
    """Where a queued run stands: 1-based `position` in the queue and the estimated wait in seconds; `known`: whether
    a run of its kind has finished on this server, which the estimate needs to be more than a guess."""

    position: int
    wait_s: float
    known: bool = True


class Chain:
    """Runs one watcher asked for one after another (a Compare experiment's variants). The registry submits the
    next when the one before ends on its own terms; a run that is stopped or fails ends the chain."""

    def __init__(self, watcher: str, configs: Sequence[Configs], address: str | None = None):
        self.watcher, self.configs, self.address = watcher, list(configs), address
        self.runs: list[Run] = []
        self.error: str | None = None
        self.stopped = False

    @property
    def done(self) -> bool:
        """Stopped, failed, a run that did not end on its own terms, or every run trained."""
        if self.stopped or self.error or any(run.done and not run.ended_on_its_own_terms() for run in self.runs):
            return True
        return len(self.runs) == len(self.configs) and self.runs[-1].done

    @property
    def current(self) -> Run | None:
        return self.runs[-1] if self.runs else None

    def touch(self, connected: Callable[[], bool] | None = None) -> None:
        """The watcher's page still watches the chain's current run."""
        if self.current is not None:
            self.current.touch(self.watcher, connected)


class RunRegistry:
    """Every run on one server, by `run_key` (see the module docstring).

    `settings.slots` runs train at once (on a Ray cluster, see `training_slots`), each in a worker of its own (a
    process, a server thread when `settings.worker_processes` is off, or a Ray task), or, with
    `settings.train_together` above 1, groups of runs of one shape, a group in one worker; more distinct runs wait in a
    queue of at most `settings.max_queue`, at most `settings.runs_per_address` of them queued or training from one
    network address. A free slot takes the first queued run from an address with no run training, else the first
    queued run, and the queued runs to train together with it (`_alike`). A queued run nobody watches any more
    leaves the queue, and a training one is stopped (see `Run`). A worker holding more than
    `settings.worker_max_mb` after its runs is restarted. On a Ray cluster each slot asks the gateway for a task per
    run, which holds a CPU of the cluster only while it trains; a slot whose task cannot start takes a worker of this
    server instead, while this server's usable cores and `settings.slots` allow. The last `keep_finished` runs that
    ended on their own terms stay joinable.

    Its one lock (with the condition `_changed` on it) guards the queue, the slots, the joinable runs, the chains,
    the recent durations and whether it is closed: pages' threads and the slots' threads all change them.
    """

    def __init__(self, settings: ServerSettings, keep_finished: int = 16):
        self.settings, self.keep_finished = settings, keep_finished
        log_runs()
        self.gateway, slots = training_slots(settings)
        self._local_slots = min(settings.slots, usable_cores())  # slots that may fall back to this server's workers
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)  # a run was queued, a slot freed, or the registry closed
        self._runs: dict[tuple[str, Hashable], Run] = {}  # joinable runs by settings and owner: queued, training,
        # or finished on their own terms
        self._queue: deque[Run] = deque()
        self._slots: list[list[Run]] = [[] for _ in range(slots)]  # the runs each slot trains; [] while free
        self.workers: list[WorkerLink | None] = [None] * slots  # each slot's worker, once it is ready (a Ray task's
        # link while it trains)
        self._chains: list[Chain] = []
        self._lengths = RunLengths()  # how recently finished runs went, for wait estimates
        self._closed = False
        self._starting = slots  # slots whose first worker is still starting
        self._threads = [
            threading.Thread(target=self._serve_slot, args=(i,), name=f"training-slot-{i}", daemon=True)
            for i in range(slots)
        ]
        for thread in self._threads:
            thread.start()

    @property
    def slots(self) -> int:
        """How many runs train at once: this server's slots, or the Ray cluster's."""
        return len(self._slots)

    @property
    def ray_address(self) -> str | None:
        """The Ray cluster this server trains on, or None when it trains on its own workers."""
        return None if self.gateway is None else self.gateway.address

    def submit(
        self,
        watcher: str,
        model_config: ModelConfig,
        data_config: DataConfig,
        train_config: TrainConfig,
        connected: Callable[[], bool] | None = None,
        address: str | None = None,
        owner: Hashable | None = None,
    ) -> Run:
        """The run these settings make, for `watcher` at network `address` (None: unknown): joined when one is
        queued, training or recently finished, else a new one, which a free slot takes at once or which waits in
        the queue. A run with an `owner` (a class student's seat) joins only runs of that owner: who takes a removed
        student's place, and so their seed, trains a run of their own. Raises AlreadyTraining when the watcher has
        another run training or queued, AddressBusy when its address has as many as it may, QueueFull when the
        queue is full."""
        with self._lock:
            self._drop_unwatched()
            key = run_key(model_config, data_config, train_config), owner
            run = self._runs.get(key)
            if run is not None and self._joinable(run):
                run.touch(watcher, connected)
                return run
            if any(watcher in other.watchers() for other in self._active()):
                raise AlreadyTraining(
                    Message(N_("your run in another tab is still training or queued: stop it there first"))
                )
            if address is not None and self._from(address) >= self.settings.runs_per_address:
                busy = N_(
                    "{runs} runs from your network address are already training or queued, the most this server "
                    "takes from one address"
                )
                raise AddressBusy(Message(busy, runs=self.settings.runs_per_address))
            if len(self._queue) >= self.settings.max_queue + self._slots.count([]):
                full = N_("{runs} runs are already waiting for a training slot, the most this server queues")
                raise QueueFull(Message(full, runs=len(self._queue)))
            run = Run(model_config, data_config, train_config, self.settings.idle_timeout_s)
            return self._queue_run(key, run, watcher, connected, address)

    def submit_chain(
        self,
        watcher: str,
        configs: Sequence[Configs],
        connected: Callable[[], bool] | None = None,
        address: str | None = None,
    ) -> Chain:
        """Runs of `configs` one after another for `watcher`; the first is submitted now (see `submit`)."""
        chain = Chain(watcher, configs, address)
        chain.runs.append(self.submit(watcher, *chain.configs[0], connected, address))
        with self._lock:
            self._chains.append(chain)
            self._advance_chains()
        return chain

    def leave(self, watcher: str, run: Run) -> None:
        """`watcher` stops watching `run`: it stops (or leaves the queue) once nobody watches it."""
        with self._lock:
            run.forget(watcher)
            if run.watchers():
                return
            if run in self._queue:
                self._withdraw(run, N_("everyone watching it left the queue"))
            elif not run.done:
                run.left = True
                run.stop()

    def withdraw(self, run: Run, reason: str) -> None:
        """End `run` whoever watches it: it leaves the queue with `reason`, or stops after its current step (the
        class student it was recorded for is no longer in their class)."""
        with self._lock:
            if run in self._queue:
                self._withdraw(run, reason)
            elif not run.done:
                run.stop()

    def stop_chain(self, chain: Chain) -> None:
        """The chain's watcher stops it: its current run is left (it goes on for others), and no other starts."""
        chain.stopped = True
        if chain.current is not None:
            self.leave(chain.watcher, chain.current)

    def place(self, run: Run) -> Place | None:
        """A queued run's place in the queue, or None when it is not queued."""
        with self._lock:
            self._drop_unwatched()
            if run not in self._queue:
                return None
            position, kind = self._queue.index(run) + 1, run_kind(run)
            ahead = [kind] * (position - 1)  # mostly of its kind, a class's (each one's own: 0.1 ms a run, locked)
            slots = [[(run_kind(one), one) for one in runs if one.started_at is not None] for runs in self._slots]
            now, cap = time.perf_counter(), self.settings.max_run_s
            wait_s = expected_wait_s(ahead, slots, self._lengths, DEFAULT_RUN_S, cap, now)
            return Place(position, wait_s, self._lengths.knows(kind))

    def watching(self) -> int:
        """Watchers of runs that have not ended, over the whole server: how many pages are polling a run."""
        with self._lock:
            return sum(len(run.watchers()) for run in self._active())

    def wait_ready(self, timeout_s: float) -> bool:
        """Wait at most `timeout_s` for every slot's first worker to be ready (or to have failed to start); on a Ray
        cluster, for the gateway's warm processes."""
        if self.gateway is not None:
            return self.gateway.warm.wait(timeout_s)
        with self._lock:
            return self._changed.wait_for(lambda: self._starting == 0, timeout_s)

    def close(self) -> None:
        """Stop every run and every worker (a server shutting down, or a test ending)."""
        with self._lock:
            self._closed = True
            for run in [*self._queue]:
                self._withdraw(run, N_("the server is shutting down"))
            for run in self._training():
                run.stop()
            self._changed.notify_all()
        for thread in self._threads:
            thread.join(10)
        if self.gateway is not None:
            self.gateway.close()

    # ---- the slots
    def _serve_slot(self, slot: int) -> None:
        """A training slot: have a worker train the runs given to this slot until the registry closes. A worker of
        this server starts at once, so the first Start finds it ready, and is replaced when lost; on a Ray cluster a
        task starts for each run, and gives its CPU back after."""
        worker = self.workers[slot] = None if self.gateway else self._new_worker(slot)
        with self._lock:
            self._starting -= 1
            self._changed.notify_all()
        while True:
            with self._lock:
                while not self._slots[slot] and not self._closed:
                    self._changed.wait(0.5)
                    self._drop_unwatched()  # also while every page is quiet
                runs = list(self._slots[slot])
            if not runs:  # closed
                break
            if worker is None:
                worker = self.workers[slot] = self._new_worker(slot)
            if worker is None:
                for run in runs:
                    run.end(None, N_("the training process could not start"))
            else:
                try:
                    worker.relay(runs)
                    keep = worker.task_name is None and (worker.resident_mb() or 0.0) <= self.settings.worker_max_mb
                except WorkerLost:
                    keep = False
                if not keep:  # lost, holding the memory of a large run, or a Ray task: the next run gets a fresh one
                    worker.close()
                    worker = self.workers[slot] = None
            self._ended(slot, runs)
            if worker is None and not self._closed and self.gateway is None:
                worker = self.workers[slot] = self._new_worker(slot)
        if worker is not None:
            worker.close()

    def _new_worker(self, slot: int) -> WorkerLink | None:
        """A ready worker for `slot`: a Ray task when the registry trains on a cluster (it may wait in Ray's queue
        for a CPU as long as a run may train, and at least as long as a worker may take to start), else (or when the
        cluster starts none, and the slot is one this server can also hold) one of this server's; None when none
        starts."""
        caps = Caps(self.settings.max_run_s, self.settings.max_total_pause_s)
        if self.gateway is not None:
            try:
                worker = WorkerLink(self.settings.torch_threads, caps, gateway=self.gateway)
                if worker.wait_ready(max(READY_TIMEOUT_S, self.settings.max_run_s)):
                    return worker
                worker.close()
            except ConnectionError:
                pass
            log.warning("training slot %d: the Ray cluster at %s started no worker", slot, self.ray_address)
            if slot >= self._local_slots:
                return None
        worker = WorkerLink(self.settings.torch_threads, caps, in_server=not self.settings.worker_processes)
        if worker.wait_ready():
            return worker
        worker.close()
        return None

    def _ended(self, slot: int, runs: list[Run]) -> None:
        with self._lock:
            self._slots[slot] = []
            now = time.perf_counter()
            for run in runs:
                if run.result is not None and run.result.reason != "stopped" and run.result.steps > 0:
                    # its settings ended it, not a student: how a queued run of its kind may go, in the slot's time
                    self._lengths.add(run_kind(run), run.result.steps, now - run.started_at)
                if not run.ended_on_its_own_terms():
                    self._forget(run)
            self._bound_finished()
            self._advance_chains()
            self._assign()

    # ---- the queue (every method below runs under the lock)
    def _queue_run(
        self,
        key: tuple[str, Hashable],
        run: Run,
        watcher: str,
        connected: Callable[[], bool] | None,
        address: str | None,
    ) -> Run:
        run.touch(watcher, connected)
        run.address = address
        self._runs[key] = run
        self._queue.append(run)
        self._assign()
        return run

    def _assign(self) -> None:
        """Give queued runs that someone still watches to free slots (see `_next_queued`)."""
        self._drop_unwatched()
        while self._queue and [] in self._slots and not self._closed:
            first = self._next_queued()
            runs = [first, *self._alike(first)]
            for run in runs:
                self._queue.remove(run)
                run.take()
            self._slots[self._slots.index([])] = runs
        self._changed.notify_all()

    def _next_queued(self) -> Run:
        """The first queued run from an address with no run training, else the first queued run: one address
        cannot hold every slot while another address waits."""
        training = {run.address for run in self._training()}
        return next((run for run in self._queue if run.address not in training), self._queue[0])

    def _alike(self, first: Run) -> list[Run]:
        """The queued runs a slot taking `first` trains together with it: the first ones of its shape
        (`together_key`), so many that the slots share those the queue holds, at most `settings.train_together` in
        all; none when fewer than MIN_TOGETHER would go together (fewer train faster one after another)."""
        shape = together_key(first.model_config, first.train_config)
        if shape is None:
            return []
        alike = [
            run for run in self._queue if run is not first and together_key(run.model_config, run.train_config) == shape
        ]
        size = min(self.settings.train_together, math.ceil((len(alike) + 1) / len(self._slots)))
        return alike[: size - 1] if size >= MIN_TOGETHER else []

    def _training(self) -> list[Run]:
        return [run for runs in self._slots for run in runs]

    def _from(self, address: str) -> int:
        """Runs from `address` training or queued."""
        return sum(run.address == address for run in [*self._training(), *self._queue])

    def _advance_chains(self) -> None:
        """Submit the next run of every chain whose current run ended on its own terms."""
        for chain in list(self._chains):
            while not chain.done and chain.current.done and len(chain.runs) < len(chain.configs):
                configs = chain.configs[len(chain.runs)]
                key = run_key(*configs), None  # a chain's runs are nobody's own
                run = self._runs.get(key)
                if run is None or not self._joinable(run):  # a chain's next run skips the queue's bound
                    run = Run(*configs, self.settings.idle_timeout_s)
                    run = self._queue_run(key, run, chain.watcher, None, chain.address)
                run.touch(chain.watcher)
                chain.runs.append(run)
            if chain.done:
                self._chains.remove(chain)

    def _joinable(self, run: Run) -> bool:
        if run.done:
            return run.ended_on_its_own_terms()
        return run.status != "paused" and bool(run.watchers())  # a paused run is its one watcher's to step through

    def _active(self) -> list[Run]:
        return [run for run in self._runs.values() if not run.done]

    def _drop_unwatched(self) -> None:
        """Queued runs nobody watches any more leave the queue."""
        for run in [run for run in self._queue if not run.watchers()]:
            self._withdraw(run, run.unwatched_why())

    def _withdraw(self, run: Run, reason: str) -> None:
        self._queue.remove(run)
        self._forget(run)
        run.withdraw(reason)

    def _bound_finished(self) -> None:
        """Forget the oldest finished runs past `keep_finished`, or past MAX_FINISHED_WEIGHTS between them."""
        finished = [key for key, run in self._runs.items() if run.done]  # oldest first
        held = sum(self._runs[key].weights_held() for key in finished)
        while finished and (len(finished) > self.keep_finished or held > MAX_FINISHED_WEIGHTS):
            held -= self._runs[finished[0]].weights_held()
            del self._runs[finished.pop(0)]

    def _forget(self, run: Run) -> None:
        for key, other in list(self._runs.items()):
            if other is run:
                del self._runs[key]


@contextmanager
def finished_run(pairs: TaskPairs | None = None, timeout_s: float = 120.0, **settings: spec.Value) -> Iterator[Run]:
    """A run of the Train form's `settings` (as a class or the form makes it, recording attention), learning the task
    `pairs` when given, trained to its end on a registry of its own, in this process, as pages and reports read it;
    the registry closes after. TimeoutError when it has not ended after `timeout_s` seconds."""
    registry = RunRegistry(ServerSettings(training_slots=1, worker_processes=False))
    try:
        run = registry.submit("this process", *run_configs(settings, pairs=pairs))
        deadline = time.monotonic() + timeout_s
        while not run.wait_until_done(0.5):  # watched all along: the registry stops a run nobody watches
            if time.monotonic() > deadline:
                raise TimeoutError(f"the run did not end in {timeout_s:g} s")
            run.touch("this process")
        yield run
    finally:
        registry.close()
