"""The deployment in deploy/ (docs/scale.md), read as Docker Compose, HAProxy and Ray would read it: valid YAML, the
app's settings accepted by the app, every `ray start` flag one that ray has, and the balancer reaching every
replica with sticky sessions."""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from transformer.serving.settings import ENV_NAMES, ServerSettings

try:
    import yaml  # installed with ray
except ImportError:  # in CI a skip would pass a run that never read the deployment (see test_ray.py)
    if os.environ.get("CI", "").lower() in ("true", "1"):
        raise
    pytest.skip("ray: pip install -r requirements-ray.txt", allow_module_level=True)

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
APP_ONLY = {"LAB_DATABASE_URL"}  # read by the class store, not ServerSettings


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def apps(compose: dict) -> dict[str, dict]:
    """The app's replicas: the services that train on the cluster."""
    services = compose["services"].items()
    return {name: service for name, service in services if "LAB_RAY_ADDRESS" in service.get("environment", {})}


def ray_starts(compose: dict) -> list[list[str]]:
    """The words after `ray start` in each service's command (exec form, or a shell's script of `&&`-joined
    commands)."""
    found = []
    for service in compose["services"].values():
        command = service.get("command", [])
        script = command[2] if command[:2] == ["sh", "-c"] else shlex.join(command)
        for part in script.split("&&"):
            words = shlex.split(part)
            if words[:2] == ["ray", "start"]:
                found.append(words[2:])
    return found


def test_the_head_its_workers_and_every_replica_join_one_cluster_at_the_heads_port(compose):
    head = next(words for words in ray_starts(compose) if "--head" in words)
    port = next(word.split("=")[1] for word in head if word.startswith("--port="))
    others = [words for words in ray_starts(compose) if "--head" not in words]
    assert len(others) == 1 + len(apps(compose))  # the workers' service, and each replica as a node with no CPUs
    assert all(f"--address=ray-head:{port}" in words for words in others)
    assert "ray-head" in compose["services"]
    for app in apps(compose).values():
        assert app["environment"]["LAB_RAY_ADDRESS"] == f"ray-head:{port}"


def test_every_replica_has_settings_the_app_accepts_and_the_one_database(compose):
    replicas = apps(compose)
    assert len(replicas) >= 2
    for service in replicas.values():
        env = {name: str(value) for name, value in service["environment"].items()}
        assert set(env) <= set(ENV_NAMES.values()) | APP_ONLY
        settings = ServerSettings.from_env(env)  # raises on a value out of its bounds
        assert (
            settings.ray_address
            and settings.ray_address_problem is None
            and env["LAB_DATABASE_URL"].startswith("postgresql+psycopg://")
        )
        assert "@postgres:5432/" in env["LAB_DATABASE_URL"] and "postgres" in compose["services"]
    assert len({service["hostname"] for service in replicas.values()}) == len(replicas)  # one name per replica


def test_every_ray_start_flag_is_one_that_ray_start_has(compose):
    command = [sys.executable, "-m", "ray.scripts.scripts", "start", "--help"]
    known = set(re.findall(r"--[a-z-]+", subprocess.run(command, capture_output=True, text=True, check=True).stdout))
    flags = {word.split("=")[0] for words in ray_starts(compose) for word in words}
    assert "--block" in known and flags and flags <= known, flags - known


def test_the_balancer_reaches_every_replica_with_a_sticky_cookie_and_the_image_installs_ray(compose):
    config = (DEPLOY / "haproxy.cfg").read_text()
    assert re.search(r"^\s*cookie \w+ insert", config, re.M)
    for name in apps(compose):
        assert re.search(rf"^\s*server {name} {name}:8501 check cookie {name}$", config, re.M)
    balancer = compose["services"]["balancer"]
    assert any(volume.startswith("./haproxy.cfg:") for volume in balancer["volumes"])
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert "-r requirements-ray.txt" in dockerfile and compose["x-lab"]["build"]["dockerfile"] == "deploy/Dockerfile"
