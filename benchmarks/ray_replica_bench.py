"""What one app replica of 8 training slots holds to talk to a Ray cluster, and how soon a run's first chart point
comes: a local cluster of one node offering 8 CPUs, a `RunRegistry` of 8 slots on it, and 8 distinct short runs
submitted at once, twice (the second round finds the cluster's processes started).

Prints, as JSON: the peak resident memory of this process's children that talk to Ray (the replica's gateway, or
whatever the replica starts for Ray) and how many there were, sampled every 0.1 s from the registry's start to its
close; for each round, Start to the first loss of the earliest and of the latest run, and Start to the last run's end.

    python benchmarks/ray_replica_bench.py [--slots 8] [--steps 60]
"""

import argparse
import json
import os
import time
from pathlib import Path

from load_test import Every, _descendants, _rss
from ray.cluster_utils import Cluster

from transformer.run_configs import default_configs
from transformer.serving import RunRegistry, ServerSettings

READY_S = 300.0  # 8 processes importing torch at once on a 2-core machine


class RayClients(Every):
    """On a thread: the peak summed resident memory, and the most, of this process's descendants that run
    `transformer.serving.ray_worker`."""

    def __init__(self, every_s: float = 0.1):
        super().__init__(every_s)
        self.peak_bytes, self.most = 0, 0

    def tick(self) -> None:
        pids = []
        for pid in _descendants(os.getpid()):
            try:
                if b"transformer.serving.ray_worker" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    pids.append(pid)
            except OSError:
                continue
        self.peak_bytes = max(self.peak_bytes, sum(_rss(pid) for pid in pids))
        self.most = max(self.most, len(pids))


def one_round(registry: RunRegistry, slots: int, steps: int, seed: int) -> dict:
    """`slots` distinct runs submitted at once; seconds from then to first losses and to the last end."""
    began = time.perf_counter()
    runs = [
        registry.submit(f"student-{i}", *default_configs(seed + i, steps=steps, early_stop=False)) for i in range(slots)
    ]
    first: dict[int, float] = {}
    while not all(run.done for run in runs):
        for i, run in enumerate(runs):
            if i not in first and run.losses:
                first[i] = time.perf_counter() - began
            run.touch(f"student-{i}")
        time.sleep(0.01)
    ended = time.perf_counter() - began
    assert all(run.error is None and run.result.steps == steps for run in runs), "a run failed"
    return {
        "first_loss_s": [round(min(first.values()), 2), round(max(first.values()), 2)],
        "last_end_s": round(ended, 2),
    }


def measure(slots: int, steps: int) -> dict:
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": slots, "include_dashboard": False})
    try:
        with RayClients() as clients:
            registry = RunRegistry(ServerSettings(ray_address=cluster.address, training_slots=slots))
            try:
                assert registry.ray_address == cluster.address, "the replica could not join the cluster"
                assert registry.wait_ready(READY_S), "the replica's slots did not start"
                rounds = [one_round(registry, slots, steps, seed) for seed in (0, 100)]
            finally:
                registry.close()
        return {
            "slots": slots,
            "ray_processes": clients.most,
            "their_peak_rss_mb": round(clients.peak_bytes / 2**20, 1),
            "cold": rounds[0],
            "warm": rounds[1],
        }
    finally:
        cluster.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slots", type=int, default=8)
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()
    print(json.dumps(measure(args.slots, args.steps), indent=2))


if __name__ == "__main__":
    main()
