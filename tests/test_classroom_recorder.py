"""The class recorder: runs of class students are written into the class's database as they queue, train and end,
with no page involved."""

import pytest
from polling import wait_until

from transformer.classroom import ClassStore
from transformer.classroom.recorder import ClassRecorder
from transformer.model import ModelConfig
from transformer.serving import RunRegistry, ServerSettings
from transformer.tasks import DataConfig
from transformer.training import TrainConfig


def configs(seed: int, **train) -> tuple:
    return ModelConfig(), DataConfig(task="copy", min_len=3, max_len=3, seed=seed), TrainConfig(seed=seed, **train)


@pytest.fixture
def world(tmp_path):
    store = ClassStore(f"sqlite:///{tmp_path / 'classes.sqlite3'}")
    registry = RunRegistry(ServerSettings(training_slots=1, max_queue=4, worker_processes=False))
    recorder = ClassRecorder(store, registry.place, every_s=0.1)
    yield store, registry, recorder
    recorder.close()
    registry.close()
    store.close()


def test_a_class_run_is_recorded_queued_then_training_then_finished(world):
    store, registry, recorder = world
    code, key = store.create_class("Lab 1")
    ada, bob = store.join(code, "browser-a", "Ada"), store.join(code, "browser-b", "Bob")
    first = registry.submit("browser-a", *configs(0, steps=10**6, early_stop=False))
    recorder.follow(ada, first)
    second = registry.submit("browser-b", *configs(1, steps=30, early_stop=False))
    recorder.follow(bob, second)
    assert store.open_board(code, key).runs[bob.id].status == "queued"  # written at once, with its place
    assert store.open_board(code, key).runs[bob.id].queue_place == 1
    wait_until(lambda: store.open_board(code, key).runs[ada.id].status == "training")
    wait_until(lambda: store.open_board(code, key).runs[ada.id].step > 0)
    registry.leave("browser-a", first)  # Ada stops: Bob's run takes the slot
    wait_until(lambda: store.open_board(code, key).runs[bob.id].status == "finished", timeout=30)
    board = store.open_board(code, key)
    assert board.runs[ada.id].status == "stopped"
    bobs = board.runs[bob.id]
    assert bobs.result["steps"] == 30 and bobs.result["reason"] == "step budget"
    assert [row["step"] for row in bobs.rows] == [row["step"] for row in second.rows]


def test_a_failed_run_is_recorded_with_its_message(world):
    store, registry, recorder = world
    code, key = store.create_class("Lab 2")
    ada = store.join(code, "browser-a", "Ada")
    run = registry.submit("browser-a", ModelConfig(vocab_size=20), *configs(0)[1:])  # fails in set-up
    recorder.follow(ada, run)
    wait_until(lambda: store.open_board(code, key).runs[ada.id].status == "failed", timeout=30)
    assert "vocab_size" in store.open_board(code, key).runs[ada.id].error
