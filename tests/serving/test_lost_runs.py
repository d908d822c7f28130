"""The Train runs in flight, written down for the next server: a run a restart lost is told to its browser, with the
form's values it was started with, until it starts another; a run that ended, and a file of something else."""

import json

import pytest

from tests.helpers import wait_until
from tests.helpers.serving import ENDLESS
from transformer.model import ModelConfig
from transformer.serving import LostRun, LostRuns, RunRegistry, ServerSettings
from transformer.tasks import DataConfig
from transformer.training import TrainConfig

FORM = {"train_task": "copy", "train_seed": 321, "train_lr": None, "train_causal_mask": True}


@pytest.fixture
def registry():
    registry = RunRegistry(ServerSettings(training_slots=2, worker_processes=False))
    yield registry
    registry.close()


def submit(registry: RunRegistry, browser: str, seed: int, **train):
    data = DataConfig(task="copy", min_len=3, max_len=3, seed=seed)
    return registry.submit(browser, ModelConfig(), data, TrainConfig(seed=seed, **train))


def test_a_run_in_flight_when_the_server_stops_is_told_to_its_browser_once_by_the_next(tmp_path, registry):
    path = tmp_path / "runs_in_flight.json"
    first = LostRuns(path, every_s=0.05)
    endless, short = submit(registry, "browser-a", 321, **ENDLESS), submit(registry, "browser-b", 5, steps=5)
    first.follow("browser-a", endless, FORM)
    first.follow("browser-b", short, {"train_seed": 5})
    wait_until(lambda: endless.step > 3 and short.done)
    wait_until(lambda: set(json.loads(path.read_text())) == {"browser-a"})  # an ended run is not left in flight
    first.close()  # the server stops: what it wrote last stays
    step = json.loads(path.read_text())["browser-a"]["step"]
    second = LostRuns(path, every_s=0.05)
    try:
        assert second.lost("browser-a") == LostRun("copy", 321, step, FORM) and step > 0
        assert second.lost("browser-a") == LostRun("copy", 321, step, FORM)  # for every page, until...
        assert second.lost("browser-b") is None  # its run had ended
        assert json.loads(path.read_text()) == {}  # nothing of the last server's is in flight on this one
        endless.stop(wait_s=30)  # the last server's run: gone with it
        second.follow("browser-a", submit(registry, "browser-a", 322, **ENDLESS), FORM)
        assert second.lost("browser-a") is None  # ...the browser starts another run
    finally:
        second.close()


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not json",
        "[1, 2]",
        json.dumps({"browser-a": {"task": "copy", "seed": "321", "step": 4, "form": {}}}),
        json.dumps({"browser-a": {"task": "copy", "seed": 321, "step": 4, "form": {"train_seed": [1, 2]}}}),
        json.dumps({"browser-a": None}),
    ],
)
def test_a_file_this_module_did_not_write_lists_no_run(tmp_path, text):
    path = tmp_path / "runs_in_flight.json"
    path.write_text(text)
    lost = LostRuns(path)
    try:
        assert lost.lost("browser-a") is None
    finally:
        lost.close()
