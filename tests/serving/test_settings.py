"""The server's settings: read once from LAB_* variables, each checked against its bounds, and the CPU cores a
container may use."""

import pytest

from transformer.serving.settings import ServerSettings, cgroup_cpu_quota, usable_cores


def test_settings_come_from_the_environment_with_defaults_for_the_rest():
    env = {"LAB_TRAINING_SLOTS": "3", "LAB_JOB_IDLE_TIMEOUT_S": "4.5", "LAB_TRAINING_PROCESSES": "0"}
    settings = ServerSettings.from_env(env)
    assert (settings.training_slots, settings.slots, settings.idle_timeout_s) == (3, 3, 4.5)
    assert settings.worker_processes is False and settings.max_queue == ServerSettings().max_queue
    assert ServerSettings.from_env({}).slots == usable_cores() >= 1  # 0: one slot per usable core


def test_the_limits_on_one_run_one_worker_and_one_address_come_from_the_environment():
    env = {
        "LAB_MAX_RUN_S": "900",
        "LAB_MAX_PAUSED_S": "30.5",
        "LAB_WORKER_MAX_MB": "800",
        "LAB_MAX_RUNS_PER_ADDRESS": "70",
    }
    settings = ServerSettings.from_env(env)
    assert (settings.max_run_s, settings.max_total_pause_s, settings.worker_max_mb, settings.runs_per_address) == (
        900.0,
        30.5,
        800.0,
        70,
    )


def test_a_ray_clusters_address_comes_from_the_environment_and_bounds_the_slots_to_its_cpus():
    assert ServerSettings.from_env({}).ray_address == ""  # no cluster: this server's workers
    assert ServerSettings.from_env({"LAB_RAY_ADDRESS": " ray-head:6379 "}).ray_address == "ray-head:6379"
    assert ServerSettings.from_env({"LAB_RAY_ADDRESS": "auto"}).ray_address == "auto"
    assert ServerSettings().cluster_slots(200) == 64  # one per CPU, at most LAB_TRAINING_SLOTS' top
    assert ServerSettings(training_slots=8).cluster_slots(200) == 8 and ServerSettings().cluster_slots(3) == 3


@pytest.mark.parametrize(
    "name, value, message",
    [
        ("LAB_TRAINING_SLOTS", "many", "LAB_TRAINING_SLOTS must be a number"),
        ("LAB_TRAINING_SLOTS", "1000", "LAB_TRAINING_SLOTS must be in 0..64"),
        ("LAB_MAX_QUEUE", "-1", "LAB_MAX_QUEUE must be in 0..1000"),
        ("LAB_JOB_IDLE_TIMEOUT_S", "nan", "LAB_JOB_IDLE_TIMEOUT_S must be in"),
        ("LAB_TORCH_THREADS", "0", "LAB_TORCH_THREADS must be in 1..64"),
        ("LAB_SWITCH_INTERVAL_S", "5", "LAB_SWITCH_INTERVAL_S must be in"),
        ("LAB_MAX_RUN_S", "0", "LAB_MAX_RUN_S must be in 1..86400"),
        ("LAB_MAX_RUN_S", "inf", "LAB_MAX_RUN_S must be in 1..86400"),
        ("LAB_MAX_PAUSED_S", "nan", "LAB_MAX_PAUSED_S must be in 0.1..3600"),
        ("LAB_MAX_PAUSED_S", "7200", "LAB_MAX_PAUSED_S must be in 0.1..3600"),
        ("LAB_WORKER_MAX_MB", "50", "LAB_WORKER_MAX_MB must be in 100..100000"),
        ("LAB_MAX_RUNS_PER_ADDRESS", "0", "LAB_MAX_RUNS_PER_ADDRESS must be in 1..1000"),
        ("LAB_MAX_RUNS_PER_ADDRESS", "2.5", "LAB_MAX_RUNS_PER_ADDRESS must be a number"),
    ],
)
def test_a_bad_value_is_refused_naming_its_variable(name, value, message):
    with pytest.raises(ValueError, match=message):
        ServerSettings.from_env({name: value})


@pytest.mark.parametrize(
    "value", ["ray-head", "ray://head:10001", "http://head:6379", "head :6379", "head:6379 --block", "h" * 300 + ":1"]
)
def test_a_malformed_ray_address_is_read_and_named_in_one_line_never_raised(value):
    problem = ServerSettings.from_env({"LAB_RAY_ADDRESS": value}).ray_address_problem
    assert problem.startswith("LAB_RAY_ADDRESS '") and problem.endswith(
        "is not host:port (the Ray head's address) or auto"
    )
    assert "\n" not in problem and len(problem) < 200
    assert ServerSettings(ray_address="ray-head:6379").ray_address_problem is None


def test_a_containers_cpu_quota_caps_the_cores(tmp_path):
    (tmp_path / "cpu.max").write_text("150000 100000\n")  # cgroup v2: 1.5 cores
    assert cgroup_cpu_quota(tmp_path) == 1.5 and usable_cores(tmp_path) == 1
    (tmp_path / "cpu.max").write_text("max 100000\n")  # no quota
    assert cgroup_cpu_quota(tmp_path) is None
    v1 = tmp_path / "v1"
    (v1 / "cpu").mkdir(parents=True)
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("200000")
    (v1 / "cpu" / "cpu.cfs_period_us").write_text("100000")
    assert cgroup_cpu_quota(v1) == 2.0
    assert cgroup_cpu_quota(tmp_path / "missing") is None
