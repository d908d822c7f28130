"""Load test (b) on both transports, in one run on one machine: N protocol clients with a seed each
(`protocol_load_test.py`'s `seeds` scenario) against a server training on its own worker processes, and against
a server training on a local Ray cluster of two nodes with one CPU each (LAB_RAY_ADDRESS), so both have two slots;
the cluster is up for both.

Prints the two side by side: runs finished / refused / lapsed / failed, Start to finished p50 / p95 / max, the first
chart point of any session after Start, the runs' training times, peak memory and CPU of the server (its worker
processes, or its Ray gateway) and of the cluster (its nodes' processes and the tasks' processes on them), and the
machine's load average (other work on it shows there). Then, on the same cluster, what identical runs
cost across two replicas: the Train page's default run started on two replicas' registries trains twice, where two
students on one replica share one run.

    python benchmarks/ray_load_test.py [--sessions 30] [--order local ray] [--json FILE]

Exits 1 if either backend had a session error, a lapsed or a failed run; `pytest -m slow`
(`tests/serving/test_ray_load.py`) runs it with the issue's goals as assertions.
"""

import argparse
import json
import os
import re
import sys
from contextlib import contextmanager
from pathlib import Path

import protocol_load_test
from load_test import Every, _cpu_s, _descendants, _rss, _spread, _triple
from ray.cluster_utils import Cluster

from harness.paths import ARTIFACTS
from transformer.run_configs import default_configs
from transformer.serving import RunRegistry, ServerSettings

BACKENDS = ("local", "ray")
TRAINED = re.compile(r"run ended: .* after ([\d.]+) s of training$", re.M)  # the serving log's line (run.py)
READY_S = 120.0  # a registry's warm-up of the cluster's processes, importing torch


class ClusterSampler(Every):
    """On a thread: the peak resident memory of a local cluster's processes (its nodes' and the workers they
    started: the training tasks' processes), every 0.2 s, and the CPU seconds they used while it is open, as last
    seen."""

    def __init__(self, cluster: Cluster, every_s: float = 0.2):
        super().__init__(every_s)
        self.cluster = cluster
        self.peak_bytes = 0
        self._cpu_s: dict[int, float] = {}
        self._before: dict[int, float] = {}

    def __enter__(self) -> "ClusterSampler":
        self._before = {pid: _cpu_s(pid) for pid in self.pids()}
        return super().__enter__()

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
        return sum(seconds - self._before.get(pid, 0.0) for pid, seconds in self._cpu_s.items())


@contextmanager
def ray_cluster(nodes: int = 2):
    """A local cluster of `nodes` nodes with one CPU each."""
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False}, connect=False)
    try:
        for _ in range(nodes - 1):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        yield cluster
    finally:
        cluster.shutdown()


def load_test(backend: str, n_sessions: int, cluster: Cluster) -> dict:
    """The seeds scenario against a server on `backend`; its summary, with the runs' training times from its log
    and the machine's load average after it (other work on the machine, if any)."""
    log_name = f"server-ray-load-test-{backend}.log"
    os.environ.pop("LAB_TRAINING_SLOTS", None)  # two slots on both: the machine's cores, the cluster's CPUs
    os.environ["LAB_RAY_ADDRESS"] = cluster.address if backend == "ray" else ""
    try:
        summary = protocol_load_test.run(n_sessions, "seeds", log_name)
    finally:
        os.environ.pop("LAB_RAY_ADDRESS")
    summary["load_avg_1m_after"] = round(os.getloadavg()[0], 1)
    trained = TRAINED.findall((ARTIFACTS / log_name).read_text())
    summary["training_s_of_runs"] = _spread(float(seconds) for seconds in trained)
    return summary


def duplicate_cost(cluster: Cluster, sampler: ClusterSampler, seed: int = 0) -> dict:
    """The default run, seed `seed`, for two students: on two replicas (two registries of one slot each on the
    cluster), then on one (the second student joins). Each run's training seconds and the cluster's CPU seconds."""
    replicas = [RunRegistry(ServerSettings(ray_address=cluster.address, training_slots=1)) for _ in range(2)]
    try:
        assert all(registry.wait_ready(READY_S) for registry in replicas), "the replicas' warm-up did not end"
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


def measure(n_sessions: int = 30, order: tuple[str, ...] = BACKENDS) -> dict[str, dict]:
    """The seeds scenario on each backend in `order`, the cluster up for both (its idle daemons take their share
    in both), then the cost of identical runs across replicas; the summaries by backend."""
    summaries = {}
    with ray_cluster() as cluster:
        for backend in order:
            with ClusterSampler(cluster) as sampler:
                summaries[backend] = load_test(backend, n_sessions, cluster)
                sampler.tick()
            summaries[backend]["cluster"] = {
                "peak_rss_mb": round(sampler.peak_bytes / 2**20, 1),
                "cpu_s": round(sampler.cpu_s(), 1),
            }
        with ClusterSampler(cluster) as sampler:
            summaries["identical_runs"] = duplicate_cost(cluster, sampler)
    return summaries


def side_by_side(summaries: dict[str, dict]) -> str:
    """One row per figure, one column per backend."""

    def rows(s: dict) -> list[tuple[str, str]]:
        t, r = s["training"], s["runs_on_server"]
        cluster = s["cluster"]
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
            ("peak server RSS, workers or gateway", f"{s['peak_rss_mb']:.0f} MB"),
            ("server CPU, workers or gateway", f"{s['server_cpu_s']} s of {s['total_s']} s"),
            ("training time of a run p50 / p95 / max", _triple(s["training_s_of_runs"])),
            ("peak cluster RSS, tasks included", f"{cluster['peak_rss_mb']:.0f} MB"),
            ("cluster CPU, tasks included", f"{cluster['cpu_s']} s"),
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
    parser.add_argument("--order", nargs=2, choices=BACKENDS, default=BACKENDS, help="which backend goes first")
    args = parser.parse_args(argv)
    if not 1 <= args.sessions <= 200:
        parser.error("--sessions must be between 1 and 200")
    if len(set(args.order)) != 2:
        parser.error("--order names both backends, once each")
    summaries = measure(args.sessions, tuple(args.order))
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
