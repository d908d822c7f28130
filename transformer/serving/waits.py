"""How long a queued run waits for a training slot: each slot frees when the runs it trains end, and each queued run
ahead of it then holds the first slot to free for as long as a run of its kind takes. A run's length is counted in
steps and timed at the pace runs train now: a busy server slows every step, but the steps a run takes are its
settings' and seed's."""

import heapq
import statistics
from collections import deque
from collections.abc import Sequence

from .run import Run

RECENT_PACE = 3  # the last finished runs of a kind whose median pace times its typical run: the server's load of
# late, not one paused run's

Kinded = tuple[str, Run]  # a run's kind, and the run


class RunLengths:
    """How recently finished runs went, by kind (a run's every setting but its seed): the step each ended at and the
    seconds it held its slot. A class that trains one task for minutes is not told it waits seconds because quick
    runs finished before it. Bounded: `per_kind` runs of each of the last `kinds` kinds."""

    def __init__(self, per_kind: int = 20, kinds: int = 16):
        self.per_kind, self.kinds = per_kind, kinds
        self._by_kind: dict[str, deque[tuple[int, float]]] = {}  # (steps, seconds); the last kind to end a run, last
        self._all: deque[float] = deque(maxlen=per_kind)

    def add(self, kind: str, steps: int, seconds: float) -> None:
        """A run of `kind` ended at `steps` (at least 1), after holding its slot for `seconds`."""
        runs = self._by_kind.pop(kind, None) or deque(maxlen=self.per_kind)
        runs.append((steps, seconds))
        self._by_kind[kind] = runs
        while len(self._by_kind) > self.kinds:
            del self._by_kind[next(iter(self._by_kind))]
        self._all.append(seconds)

    def knows(self, kind: str) -> bool:
        """Whether a recent run of `kind` has finished."""
        return kind in self._by_kind

    def ends(self, kind: str) -> list[int]:
        """The steps at which the recent runs of `kind` ended; none before one has."""
        return [steps for steps, _ in self._by_kind.get(kind, ())]

    def typical(self, kind: str, default: float) -> float:
        """The seconds a run of `kind` likely holds its slot: the median of its recent runs' steps, at the median pace
        of the last RECENT_PACE of them; before one has finished, the median length of any recent runs, else
        `default`."""
        if runs := self._by_kind.get(kind):
            paces = [seconds / steps for steps, seconds in list(runs)[-RECENT_PACE:]]
            return statistics.median(self.ends(kind)) * statistics.median(paces)
        return statistics.median(self._all) if self._all else default


def remaining_s(run: Run, ends: Sequence[int], typical_s: float, cap_s: float, now: float) -> float:
    """How much longer a training run will likely hold its slot, at `now` (`time.perf_counter()`): at its pace so far
    (the seconds it has held the slot over its steps), until the step at which the recent runs of its kind that went
    past its step ended (`ends`: their median; its step budget once none did); before its first step, `typical_s`
    less the time it has held the slot. Never more than its time budget and the slot's cap `cap_s` leave it (a
    budget read by the wall clock: a run on a busy CPU, whose budget counts its own CPU time, may hold the slot
    longer, up to `cap_s`)."""
    held = now - run.started_at
    if run.step == 0:
        estimate = typical_s - held
    else:
        end = statistics.median([step for step in ends if step > run.step] or [run.train_config.steps])
        estimate = (end - run.step) * held / run.step
    return max(0.0, min(estimate, cap_s - held, run.train_config.time_budget_s - held))


def length_s(kind: str, training: Sequence[Kinded], lengths: RunLengths, default_s: float, now: float) -> float:
    """How long a run of `kind` will likely hold a slot: as long as its kind's recent runs (`RunLengths.typical`), but
    at least as long as each run of the kind in `training` has held its slot and, once runs of the kind have ended,
    as their median steps take at that run's pace."""
    seconds, ends = lengths.typical(kind, default_s), lengths.ends(kind)
    for other, run in training:
        if other == kind:
            held = now - run.started_at
            at_its_pace = statistics.median(ends) * held / run.step if ends and run.step else 0.0
            seconds = max(seconds, held, at_its_pace)
    return seconds


def first_free_s(free_in: Sequence[float], ahead_s: Sequence[float]) -> float:
    """When a slot frees for a queued run, in seconds from now: the slots free in `free_in` seconds (0 for a free
    one), and each run ahead of it, in order, takes the first slot to free for its length in `ahead_s`."""
    free = list(free_in)
    heapq.heapify(free)
    for seconds in ahead_s:
        heapq.heappush(free, heapq.heappop(free) + seconds)
    return free[0]


def expected_wait_s(
    ahead: Sequence[str],
    slots: Sequence[Sequence[Kinded]],
    lengths: RunLengths,
    default_s: float,
    cap_s: float,
    now: float,
) -> float:
    """When a queued run starts, in seconds from now: behind queued runs of the kinds `ahead`, for `slots` that each
    free when the last of their runs ends (`remaining_s`); each run ahead holds a slot for its kind's `length_s`."""
    training = [one for slot in slots for one in slot]
    kinds = {*ahead, *(kind for kind, _ in training)}
    length = {kind: length_s(kind, training, lengths, default_s, now) for kind in kinds}
    free_in = [
        max((remaining_s(run, lengths.ends(kind), length[kind], cap_s, now) for kind, run in slot), default=0.0)
        for slot in slots
    ]
    return first_free_s(free_in, [length[kind] for kind in ahead])
