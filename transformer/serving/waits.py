"""How long a queued run waits for a training slot: each slot frees when the runs it trains end, and each queued run
ahead of it then holds the first slot to free for a typical run's length."""

import heapq

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
