"""Load test (b) on both transports, in one run on one machine: N protocol clients with a seed each
(`protocol_load_test.py`'s `seeds` scenario) against a server training on its own worker processes, then against
a server training on a local Ray cluster of two nodes with one CPU each (LAB_RAY_ADDRESS), so both have two slots.

Prints the two side by side: runs finished / refused / lapsed / failed, Start to finished p50 / p95 / max, the first
chart point of any session after Start, peak memory and CPU of the server (its worker processes, or its Ray proxies)
and of the cluster (its nodes' processes and the actors on them). Then, on the same cluster, what identical runs
cost across two replicas: the Train page's default run started on two replicas' registries trains twice, where two
students on one replica share one run.

    python benchmarks/ray_load_test.py [--sessions 30] [--json FILE]

Exits 1 if either backend had a session error, a lapsed or a failed run; `pytest -m slow`
(`tests/serving/test_ray_load.py`) runs it with the issue's goals as assertions.
"""

import argparse
import json
import os
import sys
from contextlib import contextmanager
from pathlib import Path

import protocol_load_test
from load_test import Every, _cpu_s, _descendants, _rss, _triple
from protocol_load_test import ARTIFACTS
from ray.cluster_utils import Cluster

from transformer.run_configs import default_configs
from transformer.serving import RunRegistry, ServerSettings

BACKENDS = ("local", "ray")
READY_S = 120.0  # a registry's actors, importing torch


class ClusterSampler(Every):
    """On a thread: the peak resident memory of a local cluster's processes (its nodes' and the workers they
    started: the training actors), every 0.2 s, and their CPU seconds as last seen."""

    def __init__(self, cluster: Cluster, every_s: float = 0.2):
        super().__init__(every_s)
        self.cluster = cluster
        self.peak_bytes = 0
        self._cpu_s: dict[int, float] = {}

    def pids(self) -> list[int]:
        nodes = [
            info.process.pid
            for node in self.cluster.list_all_nodes()
            for infos in node.all_processes.values()
            for info in infos
        ]
        return [*nodes, *(child for pid in nodes for child in _descendants(pid))]

    def tick(self) -> None:
        pids = self.pids()
        self.peak_bytes = max(self.peak_bytes, sum(_rss(pid) for pid in pids))
        for pid in pids:
            self._cpu_s[pid] = max(self._cpu_s.get(pid, 0.0), _cpu_s(pid))

    def cpu_s(self) -> float:
        return sum(self._cpu_s.values())


@contextmanager
def ray_cluster(nodes: int = 2):
    """A local cluster of `nodes` nodes with one CPU each, and LAB_RAY_ADDRESS pointing the servers at it."""
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False}, connect=False)
    try:
        for _ in range(nodes - 1):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        os.environ["LAB_RAY_ADDRESS"] = cluster.address
        yield cluster
    finally:
        os.environ.pop("LAB_RAY_ADDRESS", None)
        cluster.shutdown()


def duplicate_cost(cluster: Cluster, sampler: ClusterSampler, seed: int = 0) -> dict:
    """The default run, seed `seed`, for two students: on two replicas (two registries of one slot each on the
    cluster), then on one (the second student joins). Each run's training seconds and the cluster's CPU seconds."""
    replicas = [RunRegistry(ServerSettings(ray_address=cluster.address, training_slots=1)) for _ in range(2)]
    try:
        assert all(registry.wait_ready(READY_S) for registry in replicas), "the replicas' actors did not start"
        cost = {}
        for case, seats in (("two replicas", replicas), ("one replica", replicas[:1] * 2)):
            sampler.tick()
            cpu_before = sampler.cpu_s()
            runs = {registry.submit(f"student-{i}", *default_configs(seed)) for i, registry in enumerate(seats)}
            assert all(run.wait_until_done(600) and run.result is not None for run in runs), "a run failed"
            sampler.tick()
            seconds = [round(run.result.seconds, 2) for run in runs]
            cost[case] = {
                "runs": len(runs),
                "training_s": seconds,
                "cluster_cpu_s": round(sampler.cpu_s() - cpu_before, 1),
            }
            seed += 1  # the next case's run is new to both replicas
        return cost
    finally:
        for registry in replicas:
            registry.close()


def measure(n_sessions: int = 30) -> dict[str, dict]:
    """The seeds scenario on each backend, one after the other; the summaries by backend."""
    os.environ.pop("LAB_RAY_ADDRESS", None)
    os.environ.pop("LAB_TRAINING_SLOTS", None)  # two slots on both: the machine's cores, the cluster's CPUs
    summaries = {"local": protocol_load_test.run(n_sessions, "seeds", "server-ray-load-test-local.log")}
    summaries["local"]["load_avg_1m_after"] = os.getloadavg()[0]  # other work on the machine, if any
    with ray_cluster() as cluster, ClusterSampler(cluster) as sampler:
        summaries["ray"] = protocol_load_test.run(n_sessions, "seeds", "server-ray-load-test-ray.log")
        summaries["ray"]["load_avg_1m_after"] = os.getloadavg()[0]
        summaries["ray"]["cluster"] = {"peak_rss_mb": round(sampler.peak_bytes / 2**20, 1), "cpu_s": None}
        sampler.tick()
        summaries["ray"]["cluster"]["cpu_s"] = round(sampler.cpu_s(), 1)
        summaries["identical_runs"] = duplicate_cost(cluster, sampler)
    return summaries


def side_by_side(summaries: dict[str, dict]) -> str:
    """One row per figure, one column per backend."""

    def rows(s: dict) -> list[tuple[str, str]]:
        t, r = s["training"], s["runs_on_server"]
        cluster = s.get("cluster")
        return [
            ("sessions served without error", f"{s['served']} / {s['sessions']}"),
            (
                "runs finished / refused / lapsed / failed",
                f"{t['completed']} / {t['refused']} / {t['lapsed']} / {t['failed']}",
            ),
            ("Start to finished p50 / p95 / max", _triple(t["start_to_finished_s"])),
            ("Start to training p50 / p95 / max", _triple(t["start_to_training_s"])),
            ("first chart point after Start", f"{t['start_to_first_chart_point_s']} s"),
            ("Start to run started on the server", _triple(r["start_to_started_s"])),
            ("peak server RSS, workers or proxies", f"{s['peak_rss_mb']:.0f} MB"),
            ("server CPU, workers or proxies", f"{s['server_cpu_s']} s of {s['total_s']} s"),
            ("peak cluster RSS, actors included", f"{cluster['peak_rss_mb']:.0f} MB" if cluster else "-"),
            ("cluster CPU, actors included", f"{cluster['cpu_s']} s" if cluster else "-"),
            ("the machine's load average after it (1 min)", f"{s['load_avg_1m_after']:.1f}"),
        ]

    columns = {backend: rows(summaries[backend]) for backend in BACKENDS}
    names = [name for name, _ in columns["local"]]
    width = max(map(len, names))
    cells = {backend: [value for _, value in column] for backend, column in columns.items()}
    cell = max(len(value) for column in cells.values() for value in column)
    lines = [f"{'':<{width}}  " + "  ".join(f"{backend:<{cell}}" for backend in cells)]
    for i, name in enumerate(names):
        lines.append(f"{name:<{width}}  " + "  ".join(f"{cells[backend][i]:<{cell}}" for backend in cells))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=30, help="students pressing Start at once, a seed each")
    parser.add_argument("--json", type=Path, default=ARTIFACTS / "ray_load_test.json", help="the two summaries")
    args = parser.parse_args(argv)
    if not 1 <= args.sessions <= 200:
        parser.error("--sessions must be between 1 and 200")
    summaries = measure(args.sessions)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(summaries, indent=2))
    print(json.dumps(summaries, indent=2))
    print(side_by_side(summaries))
    for case, cost in summaries["identical_runs"].items():
        print(
            f"default run for two students on {case}: {cost['runs']} run(s) trained {cost['training_s']} s, "
            f"{cost['cluster_cpu_s']} s of the cluster's CPU"
        )
    ok = [
        s["errors"] == 0 and s["training"]["lapsed"] == s["training"]["failed"] == 0
        for s in map(summaries.get, BACKENDS)
    ]
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main())
