"""How long a queued run waits for a training slot: each slot frees when the runs it trains end, and each queued run
ahead of it then holds the first slot to free for a typical run's length."""

import heapq
import statistics
from collections import deque

from .run import Run


def remaining_s(run: Run, typical_s: float, cap_s: float, now: float) -> float:
    """How much longer a training run will likely hold its slot, at `now` (`time.perf_counter()`): a typical run's
    length less the time it has held the slot, never more than its step and time budgets and the slot's cap `cap_s`
    leave it; once it has held the slot longer than a typical run, what those leave it."""
    held = now - run.started_at
    bounds = [cap_s - held, run.train_config.time_budget_s - held]
    if run.step > 0:  # the steps left at the pace so far
        bounds.append((run.train_config.steps - run.step) * held / run.step)
    most = max(0.0, min(bounds))
    return min(most, typical_s - held) if held < typical_s else most


def expected_wait_s(position: int, slots_free_in: list[float], typical_s: float) -> float:
    """When the run at `position` (1-based) in the queue starts, in seconds from now: the slots free in
    `slots_free_in` seconds (0 for a free one), and each run ahead of it takes the first slot to free for
    `typical_s`."""
    free = list(slots_free_in)
    heapq.heapify(free)
    for _ in range(position - 1):
        heapq.heappush(free, heapq.heappop(free) + typical_s)
    return free[0]


class RunLengths:
    """How long recently finished runs took, by kind (a run's every setting but its seed): a class that trains one task
    for minutes is not told it waits seconds because quick runs finished before it. Bounded: `per_kind` runs of each
    of the last `kinds` kinds."""

    def __init__(self, per_kind: int = 20, kinds: int = 16):
        self.per_kind, self.kinds = per_kind, kinds
        self._by_kind: dict[str, deque[float]] = {}  # the kind that finished a run last, last
        self._all: deque[float] = deque(maxlen=per_kind)

    def add(self, kind: str, seconds: float) -> None:
        runs = self._by_kind.pop(kind, None) or deque(maxlen=self.per_kind)
        runs.append(seconds)
        self._by_kind[kind] = runs
        while len(self._by_kind) > self.kinds:
            del self._by_kind[next(iter(self._by_kind))]
        self._all.append(seconds)

    def knows(self, kind: str) -> bool:
        """Whether a recent run of `kind` has finished."""
        return kind in self._by_kind

    def typical(self, kind: str, default: float, at_least: float = 0.0) -> float:
        """The median length of the recent runs of `kind`; before one of them has finished, that of any recent runs
        (else `default`) but at least `at_least`, how long a run of the kind training now has gone on."""
        if runs := self._by_kind.get(kind):
            return statistics.median(runs)
        return max(statistics.median(self._all) if self._all else default, at_least)
