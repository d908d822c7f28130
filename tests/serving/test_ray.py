"""Runs on a Ray cluster (LAB_RAY_ADDRESS): a real local cluster of two nodes, one CPU each, started once for the
session, with two servers' registries on it (one slot each, as two replicas would share it). The registry behaves
as with its own workers: join, queue, pause/step/resume/stop, caps; a task killed or a node lost mid-run ends its
run as a lost worker's, its last snapshot kept; a cluster that cannot be reached, at start or later, leaves the
server training on its own workers. Each replica talks to Ray through one gateway process, and its runs hold the
cluster's CPUs only while they train, so replicas with more slots than CPUs share them through Ray's queue. Two
replicas writing one PostgreSQL show one class on one board.

Fails, rather than skips, in CI without ray: README's test command installs requirements-ray.txt."""

import os
import signal
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from sqlalchemy import create_engine
from sqlalchemy.engine import make_url

from tests.helpers import wait_until
from tests.helpers.serving import ENDLESS, ZH, alone, moving, pause_step_and_resume, same_weights, settings
from transformer.batched import train_together
from transformer.classroom import ClassStore
from transformer.classroom.recorder import ClassRecorder
from transformer.i18n import Message
from transformer.serving import RunRegistry, ServerSettings
from transformer.serving.protocol import Caps
from transformer.serving.worker_link import WorkerLink
from transformer.training import Trainer

try:
    import ray
    from ray.cluster_utils import Cluster

    from transformer.serving.ray_worker import NAMESPACE
except ImportError:  # in CI a skip would pass a run that never trained on a cluster (see conftest's postgres_url)
    if os.environ.get("CI", "").lower() in ("true", "1"):
        raise
    pytest.skip("ray: pip install -r requirements-ray.txt", allow_module_level=True)

READY_S = 120.0  # two tasks' processes importing torch at once on a busy 2-core machine


def start_cluster(nodes: int) -> Cluster:
    """A local cluster of `nodes` nodes with one CPU each, small object stores, no dashboard."""
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False}, connect=False)
    for _ in range(nodes - 1):
        cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    return cluster


@pytest.fixture(scope="module")
def cluster():
    """The module's two-node cluster, shut down when its tests end."""
    cluster = start_cluster(2)
    yield cluster
    cluster.shutdown()


@pytest.fixture(scope="module")
def driver(cluster):
    """This process joined to the cluster as a driver, to read its free CPUs, until the module ends."""
    ray.init(cluster.address, namespace=NAMESPACE, log_to_driver=False, logging_level="ERROR")
    yield
    ray.shutdown()


def replica(cluster: Cluster) -> RunRegistry:
    registry = RunRegistry(ServerSettings(ray_address=cluster.address, training_slots=1, max_queue=4))
    assert registry.ray_address == cluster.address and len(registry.workers) == 1
    return registry


@pytest.fixture(scope="module")
def replicas(cluster):
    """Two servers' registries on the one cluster, a slot (a task, a CPU, while a run trains) each."""
    pair = replica(cluster), replica(cluster)
    assert all(registry.wait_ready(READY_S) and registry.gateway is not None for registry in pair)
    yield pair
    for registry in pair:
        registry.close()


def task_of(registry: RunRegistry) -> WorkerLink:
    """The link to the task training the one run of a replica's slot: a Ray task, not this server's worker."""
    wait_until(lambda: registry.workers[0] is not None, timeout=READY_S)
    assert registry.workers[0].task_name
    return registry.workers[0]


def gateways() -> list[int]:
    """The gateway processes this test process has started: every process of it that talks to Ray."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            stat = (proc / "stat").read_text()
            command = (proc / "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError):
            continue
        ppid = int(stat.rpartition(")")[2].split()[1])
        if ppid == os.getpid() and b"transformer.serving.ray_worker" in command:
            found.append(int(proc.name))
    return found


def kill_processes(title: str) -> None:
    """Kill every process whose command line starts with `title` (Ray titles a task's process `ray::NAME` while it
    runs, an actor's `ray::CLASS`); AssertionError when there is none."""
    killed = 0
    for proc in Path("/proc").iterdir():
        try:
            if (proc / "cmdline").read_bytes().startswith(title.encode()):
                os.kill(int(proc.name), signal.SIGKILL)
                killed += 1
        except (OSError, ValueError):
            continue
    assert killed, f"no process is {title}"


def test_a_run_on_the_cluster_is_the_run_its_settings_make_alone_and_a_second_student_joins_it(replicas):
    registry = replicas[0]
    configs = settings(steps=60, early_stop=False, record_attention=True)
    run = registry.submit("a", *configs)
    assert registry.submit("b", *configs) is run and sorted(run.watchers()) == ["a", "b"]
    assert moving(run, READY_S) and run.wait_until_done(60.0)
    reference, rows = alone(*configs)
    assert run.error is None and run.result.steps == reference.result.steps == 60
    assert run.losses == reference.step_losses and same_weights(run.model(), reference.model)
    assert [row["exact_match"] for row in run.rows] == [row["exact_match"] for row in rows]
    assert [s["step"] for s in run.attention] == [s["step"] for s in reference.attention_snapshots]


def test_distinct_runs_queue_for_the_clusters_slot_and_stop_reaches_the_task_before_and_while_it_trains(replicas):
    registry = replicas[0]
    first = registry.submit("a", *settings(seed=1, **ENDLESS))
    queued = registry.submit("b", *settings(seed=2, **ENDLESS))
    assert queued.status == "queued" and registry.place(queued).position == 1
    queued.stop()  # asked while queued: sent as its task takes it
    assert moving(first, READY_S)
    registry.leave("a", first)  # nobody watches it: stopped on the task
    assert first.wait_until_done(60.0) and first.result.reason == "stopped" and first.result.steps > 0
    assert queued.wait_until_done(READY_S) and queued.result.reason == "stopped" and queued.error is None


def test_pause_step_and_resume_on_the_cluster_end_with_the_weights_of_an_unpaused_run(replicas):
    registry = replicas[1]
    configs = settings(seed=3, steps=120, early_stop=False)
    run = registry.submit("a", *configs)
    pause_step_and_resume(run)
    assert run.wait_until_done(60.0) and run.error is None and run.result.steps == 120
    assert same_weights(run.model(), alone(*configs)[0].model)


@pytest.mark.parametrize(
    "caps, pause, notice, in_chinese",
    [
        (
            Caps(run_s=1.5, total_pause_s=60.0),
            False,
            "it held a training slot for over 1.5 s by the clock, the most one run may",
            "它占用训练名额的钟表时间超过了 1.5 秒，这是一次训练最多可以占用的时长",
        ),
        (
            Caps(run_s=60.0, total_pause_s=0.5),
            True,
            "it was paused for over 0.5 s in all, the most one run may be",
            "它累计暂停超过了 0.5 秒，这是一次训练最多可以暂停的时长",
        ),
    ],
)
def test_a_runs_caps_reach_the_task_and_end_the_run_with_its_model_kept(
    replicas, monkeypatch, caps, pause, notice, in_chinese
):
    registry = replicas[1]
    capped = replace(registry.settings, max_run_s=caps.run_s, max_total_pause_s=caps.total_pause_s)
    monkeypatch.setattr(registry, "settings", capped)  # what the slot's StartRuns carries to the task
    run = registry.submit("a", *settings(seed=4, **ENDLESS, eval_every=5))
    assert moving(run, READY_S)
    if pause:
        run.pause()
    assert run.wait_until_done(30.0) and run.error is None and run.result.reason == "stopped"
    assert run.notice.startswith(notice) and run.model() is not None
    assert isinstance(run.notice, Message) and ZH(run.notice) == in_chinese  # the task's words, in a page's language


def test_a_task_killed_mid_run_leaves_its_last_snapshot_in_hand_and_a_new_task_takes_the_slot(replicas):
    registry = replicas[0]
    run = registry.submit("a", *settings(seed=5, **ENDLESS, eval_every=5))
    wait_until(lambda: len(run.rows) >= 2, timeout=60.0)
    killed = task_of(registry)
    kill_processes(f"ray::{killed.task_name}")
    assert run.wait_until_done(30.0) and run.error is None and run.result.reason == "stopped"
    kept = int(run.rows[-1]["step"])
    assert run.result.steps == kept and run.notice.endswith(f"; the model kept is its snapshot of step {kept}")
    assert run.notice.startswith("the training process ended unexpectedly at step ")
    assert same_weights(run.model(), alone(*settings(seed=5, steps=kept, early_stop=False, eval_every=5))[0].model)
    after = registry.submit("b", *settings(seed=6, **ENDLESS))
    assert moving(after, READY_S)
    assert task_of(registry).task_name != killed.task_name
    registry.leave("b", after)
    assert after.wait_until_done(30.0) and after.error is None and after.result.reason == "stopped"


def test_a_mailbox_lost_with_its_node_is_started_again_and_the_next_run_trains(replicas):
    kill_processes("ray::Mailbox")  # both replicas' mailboxes, as when the node they live on dies
    runs = [
        registry.submit("a", *settings(seed=80 + i, steps=20, early_stop=False)) for i, registry in enumerate(replicas)
    ]
    assert all(run.wait_until_done(READY_S) and run.error is None and run.result.steps == 20 for run in runs)


def test_each_replica_talks_to_ray_through_one_gateway_and_holds_a_cpu_only_while_a_run_trains(
    cluster, replicas, driver
):
    """Two replicas of two slots each on a cluster of two CPUs: four runs, two training and two waiting in Ray's
    queue, all finish; one gateway per replica; the CPUs are the cluster's again once the runs end."""
    more = [RunRegistry(ServerSettings(ray_address=cluster.address, training_slots=2)) for _ in "ab"]
    try:
        assert [len(registry.workers) for registry in more] == [2, 2]
        assert len(gateways()) == 4  # the module's two replicas and these two: one each, whatever their slots
        # Each gateway warms a process per slot, each warm-up a task holding a CPU while it imports torch: on a busy
        # machine the four could still hold the cluster's two CPUs after the runs end.
        assert all(registry.wait_ready(READY_S) for registry in more)
        configs = [settings(seed=60 + i, steps=150, early_stop=False) for i in range(4)]
        runs = [registry.submit(f"s{i}", *configs[i]) for i, registry in enumerate(more * 2)]
        wait_until(lambda: sum(run.status == "preparing" for run in runs) == 2, timeout=READY_S)
        assert all(run.wait_until_done(READY_S) and run.error is None and run.result.steps == 150 for run in runs)
        assert same_weights(runs[3].model(), alone(*configs[3])[0].model)
        wait_until(lambda: ray.available_resources().get("CPU") == 2.0, timeout=READY_S)
        assert all(worker is None for registry in more for worker in registry.workers)
    finally:
        for registry in more:
            registry.close()
    wait_until(lambda: len(gateways()) == 2, timeout=60.0)


@pytest.fixture
def class_database(postgres_url):
    """The tests' PostgreSQL database, in a schema of this test's own (the store's tests drop the tables of theirs,
    perhaps while this one runs)."""
    engine = create_engine(postgres_url)
    with engine.begin() as conn:
        conn.exec_driver_sql("DROP SCHEMA IF EXISTS two_replicas CASCADE")
        conn.exec_driver_sql("CREATE SCHEMA two_replicas")
    engine.dispose()
    url = make_url(postgres_url).update_query_dict({"options": "-csearch_path=two_replicas"})
    return url.render_as_string(hide_password=False)


def test_two_replicas_on_one_cluster_and_one_database_show_one_class_on_one_board(replicas, class_database):
    stores = [ClassStore(class_database, server=f"replica-{i}") for i in range(2)]
    recorders = [ClassRecorder(store, registry.place, every_s=0.1) for store, registry in zip(stores, replicas)]
    try:
        code, key = stores[0].create_class("Two replicas")
        runs = []
        for i in range(4):  # students 0 and 2 reach replica 0, 1 and 3 replica 1 (sticky sessions)
            store, registry, recorder = stores[i % 2], replicas[i % 2], recorders[i % 2]
            student = store.join(code, f"browser-{i}", f"Student {i}")
            runs.append(registry.submit(f"browser-{i}", *settings(seed=10 + i, steps=20, early_stop=False)))
            recorder.follow(student, runs[-1])
        assert all(run.wait_until_done(60.0) and run.result.steps == 20 for run in runs)
        for store in stores:  # either replica's board
            wait_until(lambda s=store: sum(r.status == "finished" for r in s.open_board(code, key).runs.values()) == 4)
    finally:
        for recorder in recorders:
            recorder.close()
        for store in stores:
            store.close()


def test_the_same_settings_on_two_replicas_train_twice_to_the_same_model(replicas):
    configs = settings(seed=20, steps=40, early_stop=False)
    first, second = (registry.submit("a", *configs) for registry in replicas)
    assert first is not second  # each replica joins only its own runs (docs/scale.md gives the cost)
    assert first.wait_until_done(60.0) and second.wait_until_done(60.0)
    assert first.losses == second.losses and same_weights(first.model(), second.model())


def test_queued_runs_of_one_shape_train_together_in_one_task_each_as_it_would_here(cluster):
    registry = RunRegistry(ServerSettings(ray_address=cluster.address, training_slots=1, train_together=4))
    try:
        assert registry.wait_ready(READY_S)
        blocker = registry.submit("teacher", *settings(seed=70, **ENDLESS))  # holds the one slot
        configs = [settings(seed=71 + i, steps=40, early_stop=False) for i in range(4)]
        runs = [registry.submit(f"student {i}", *c) for i, c in enumerate(configs)]
        assert blocker.wait_until_moving(READY_S) and all(run.status == "queued" for run in runs)
        registry.leave("teacher", blocker)  # the slot frees, and its next task takes the four at once
        assert all(run.wait_until_done(READY_S) and run.error is None and run.result.steps == 40 for run in runs)
    finally:
        registry.close()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the task's process trains (LAB_TORCH_THREADS)
    try:
        trainers = [Trainer(*c) for c in configs]
        for _ in train_together(trainers, [None] * len(trainers)):
            pass
    finally:
        torch.set_num_threads(threads)
    assert [run.losses for run in runs] == [trainer.step_losses for trainer in trainers]


def test_a_node_lost_mid_run_ends_its_run_as_a_lost_worker_and_the_other_node_trains_on(cluster, replicas):
    runs = [replicas[i].submit("a", *settings(seed=30 + i, **ENDLESS, eval_every=5)) for i in range(2)]
    wait_until(lambda: all(len(run.rows) >= 2 for run in runs), timeout=60.0)
    worker_node = next(node for node in cluster.list_all_nodes() if node is not cluster.head_node)
    cluster.remove_node(worker_node, allow_graceful=False)
    wait_until(lambda: any(run.done for run in runs), timeout=60.0)
    lost, survivor = sorted(runs, key=lambda run: not run.done)
    kept = int(lost.rows[-1]["step"])
    assert lost.result.reason == "stopped" and lost.notice.endswith(f"the model kept is its snapshot of step {kept}")
    step = survivor.step
    wait_until(lambda: survivor.step > step, timeout=30.0)  # the other node's task trains on
    cluster.add_node(num_cpus=1)  # the lost slot's next task waits for a CPU, and takes the new node's
    for i, run in enumerate(runs):
        replicas[i].leave("a", run)
    assert survivor.wait_until_done(60.0)
    after = replicas[runs.index(lost)].submit("b", *settings(seed=40, steps=20, early_stop=False))
    assert after.wait_until_done(READY_S) and after.error is None and after.result.steps == 20


def test_a_cluster_that_cannot_be_reached_at_start_leaves_the_server_training_on_its_own_workers():
    registry = RunRegistry(ServerSettings(ray_address="127.0.0.1:9", training_slots=1, worker_processes=False))
    try:
        assert registry.ray_address is None and registry.wait_ready(30.0)
        run = registry.submit("a", *settings(steps=10, early_stop=False))
        assert run.wait_until_done(30.0) and run.error is None and run.result.steps == 10
    finally:
        registry.close()


def test_a_cluster_lost_later_ends_its_runs_as_lost_workers_and_new_runs_train_on_the_servers_workers(cluster):
    doomed = start_cluster(1)
    registry = RunRegistry(ServerSettings(ray_address=doomed.address, training_slots=1, worker_processes=False))
    try:
        assert registry.wait_ready(READY_S) and registry.gateway is not None
        run = registry.submit("a", *settings(seed=50, **ENDLESS, eval_every=5))
        wait_until(lambda: len(run.rows) >= 2, timeout=60.0)
        doomed.shutdown()  # the head, its node and the task on it go
        assert run.wait_until_done(60.0) and run.result.reason == "stopped" and "snapshot of step" in run.notice
        after = registry.submit("b", *settings(seed=51, steps=10, early_stop=False))
        assert after.wait_until_done(60.0) and after.error is None and after.result.steps == 10
        assert registry.workers[0].task_name is None  # this server's own worker took the slot
    finally:
        registry.close()
        doomed.shutdown()
