"""The class recorder: runs of class students are written into the class's database as they queue, train and end,
with no page involved."""

import os
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import OperationalError

import transformer.classroom.recorder as recorder_module
from tests.helpers import wait_until
from transformer.classroom import ClassStore, RunState, schema
from transformer.classroom.board import result_text, results_frame, state_text
from transformer.classroom.outcomes import measured
from transformer.classroom.recorder import ClassRecorder
from transformer.classroom.store import NOT_SEATED
from transformer.model import ModelConfig
from transformer.serving import RunRegistry, ServerSettings
from transformer.tasks import DataConfig
from transformer.training import TrainConfig

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
SERVER = """
import sys, time
from transformer.classroom import ClassStore
from transformer.classroom.recorder import ClassRecorder
from transformer.model import ModelConfig
from transformer.serving import RunRegistry, ServerSettings
from transformer.tasks import DataConfig
from transformer.training import TrainConfig

url, code, browser = sys.argv[1:]
store = ClassStore(url, server="lab-host:8501")
registry = RunRegistry(ServerSettings(training_slots=1, worker_processes=False))
recorder = ClassRecorder(store, registry.place, every_s=0.1)
data = DataConfig(task="copy", min_len=3, max_len=3, seed=0)
run = registry.submit(browser, ModelConfig(), data, TrainConfig(seed=0, steps=10**6, early_stop=False))
recorder.follow(store.student(code, browser), run)
time.sleep(600)
"""


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
    adas = board.runs[ada.id]
    assert adas.status == "stopped" and measured(adas) is None  # never graded
    assert adas.result["reason"] == "stopped" and adas.result["steps"] == adas.step > 0  # what her page said, kept
    assert results_frame(board).set_index("name").loc["Ada", "steps"] == adas.step  # and exported
    bobs = board.runs[bob.id]
    assert bobs.result["steps"] == 30 and bobs.result["reason"] == "step budget"
    assert [row["step"] for row in bobs.rows] == [row["step"] for row in second.rows]


def test_the_runs_of_a_removed_student_end_and_free_their_slot_for_whoever_takes_their_place(tmp_path, monkeypatch):
    """A removed student's run trained on for a minute, holding a slot; the student who then took their place (and
    so their seed) pressed Start and joined it, at step 1,161, as their own. A queued run, whose state does not
    change, is found when the recorder reports on the runs it holds (every HEARD_EVERY_S)."""
    monkeypatch.setattr(recorder_module, "HEARD_EVERY_S", 0.2)
    store = ClassStore(f"sqlite:///{tmp_path / 'classes.sqlite3'}")
    registry = RunRegistry(ServerSettings(training_slots=1, max_queue=4, worker_processes=False))
    recorder = ClassRecorder(store, registry.place, every_s=0.1, withdraw=registry.withdraw)
    try:
        code, key = store.create_class("Lab 1")
        ann, bob = store.join(code, "browser-a", "Ann"), store.join(code, "browser-b", "Bob")
        training = registry.submit("browser-a", *configs(0, steps=10**6, early_stop=False))
        queued = registry.submit("browser-b", *configs(1, steps=10**6, early_stop=False))
        recorder.follow(ann, training)
        recorder.follow(bob, queued)
        wait_until(lambda: training.step > 0 and store.open_board(code, key).runs[bob.id].status == "queued")
        store.remove_student(code, key, "Bob")
        wait_until(lambda: queued.done, timeout=30)
        assert queued.step == 0 and str(queued.withdrawn) == str(NOT_SEATED)  # left the queue, saying why
        store.remove_student(code, key, "Ann")
        wait_until(lambda: training.done, timeout=30)
        assert training.result.reason == "stopped"
        again = registry.submit("browser-c", *configs(0, steps=10**6, early_stop=False))
        assert again is not training  # a fresh run for whoever takes Ann's place
        registry.leave("browser-c", again)
    finally:
        recorder.close()
        registry.close()
        store.close()


def test_a_paused_run_reads_paused_and_a_run_whose_page_closed_is_told_apart_from_one_stopped(tmp_path):
    """The board shows what the student's page shows: a pause as a pause, and a run that stopped because no page
    watched it any more (a closed tab) as that, not as a Stop the student pressed."""
    store = ClassStore(f"sqlite:///{tmp_path / 'classes.sqlite3'}")
    registry = RunRegistry(ServerSettings(training_slots=1, worker_processes=False, idle_timeout_s=0.5))
    recorder = ClassRecorder(store, registry.place, every_s=0.1)
    try:
        code, key = store.create_class("Lab 1")
        ada = store.join(code, "browser-a", "Ada")
        run = registry.submit("browser-a", *configs(0, steps=10**6, early_stop=False))
        recorder.follow(ada, run)

        def watched_until(condition) -> bool:  # her page polls, as an open tab does
            run.touch("browser-a")
            return condition()

        wait_until(lambda: watched_until(lambda: run.step > 0))
        run.pause()
        wait_until(lambda: watched_until(lambda: store.open_board(code, key).runs[ada.id].status == "paused"))
        paused = store.open_board(code, key).runs[ada.id]
        assert state_text(paused) == f"paused at step {paused.step}" and paused.step == run.step
        run.resume()
        wait_until(lambda: watched_until(lambda: store.open_board(code, key).runs[ada.id].status == "training"))
        wait_until(lambda: store.open_board(code, key).runs[ada.id].status == "stopped", timeout=30)  # tab closed
        board = store.open_board(code, key)
        closed = board.runs[ada.id]
        assert closed.result["reason"] == "page closed" and closed.result["steps"] == closed.step > 0
        assert result_text(closed) == f"stopped at step {closed.step} when its page closed"
        assert results_frame(board).set_index("name").loc["Ada", "reason"] == "page closed"  # and exported
    finally:
        recorder.close()
        registry.close()
        store.close()


def test_a_run_a_limit_of_the_server_ended_is_told_apart_from_one_a_student_stopped(tmp_path):
    store = ClassStore(f"sqlite:///{tmp_path / 'classes.sqlite3'}")
    settings = ServerSettings(training_slots=1, worker_processes=False, max_total_pause_s=0.2)
    registry = RunRegistry(settings)
    recorder = ClassRecorder(store, registry.place, every_s=0.1)
    try:
        code, key = store.create_class("Lab 1")
        ada = store.join(code, "browser-a", "Ada")
        run = registry.submit("browser-a", *configs(0, steps=10**6, early_stop=False), connected=lambda: True)
        recorder.follow(ada, run)
        wait_until(lambda: run.step > 0)
        run.pause()  # and left paused past the server's limit: the run ends, its model kept
        wait_until(lambda: store.open_board(code, key).runs[ada.id].status == "stopped", timeout=30)
        board = store.open_board(code, key)
        ended = board.runs[ada.id]
        assert run.notice is not None and ended.result["reason"] == "ended by the server"
        assert result_text(ended) == f"stopped at step {ended.step} by the server"
        assert results_frame(board).set_index("name").loc["Ada", "reason"] == "ended by the server"
    finally:
        recorder.close()
        registry.close()
        store.close()


def test_a_failed_run_is_recorded_with_its_message(world):
    store, registry, recorder = world
    code, key = store.create_class("Lab 2")
    ada = store.join(code, "browser-a", "Ada")
    run = registry.submit("browser-a", ModelConfig(vocab_size=20), *configs(0)[1:])  # fails in set-up
    recorder.follow(ada, run)
    wait_until(lambda: store.open_board(code, key).runs[ada.id].status == "failed", timeout=30)
    assert "vocab_size" in store.open_board(code, key).runs[ada.id].error


def test_deleting_one_class_never_stops_the_recording_of_another(world):
    store, registry, recorder = world
    doomed, doomed_key = store.create_class("Deleted")
    kept, kept_key = store.create_class("Kept")
    ada = store.join(doomed, "browser-a", "Ada")
    bob = store.join(kept, "browser-b", "Bob")
    first = registry.submit("browser-a", *configs(0, steps=10**6, early_stop=False))
    recorder.follow(ada, first)  # Ada's class is deleted while her run is followed: her writes now fail
    second = registry.submit("browser-b", *configs(1, steps=30, early_stop=False))
    recorder.follow(bob, second)
    store.delete_class(doomed, doomed_key)
    wait_until(lambda: store.open_board(kept, kept_key).runs[bob.id].status == "queued")
    registry.leave("browser-a", first)
    wait_until(lambda: store.open_board(kept, kept_key).runs[bob.id].status == "finished", timeout=30)
    assert store.open_board(kept, kept_key).runs[bob.id].step == 30
    wait_until(lambda: not recorder._followed)  # Ada's run is forgotten, not retried every round


def test_a_database_error_on_one_student_leaves_the_others_recorded(world, monkeypatch):
    store, registry, recorder = world
    code, key = store.create_class("Lab")
    ada, bob = store.join(code, "browser-a", "Ada"), store.join(code, "browser-b", "Bob")
    real = store.record_run

    def flaky(student, state):
        if student.id == ada.id:
            raise OperationalError("UPDATE runs", {}, Exception("disk I/O error"))
        real(student, state)

    monkeypatch.setattr(store, "record_run", flaky)
    for student, seed in ((ada, 0), (bob, 1)):
        recorder.follow(student, registry.submit(student.name, *configs(seed, steps=20, early_stop=False)))
    wait_until(lambda: store.open_board(code, key).runs.get(bob.id, RunState()).status == "finished", timeout=30)
    assert ada.id not in store.open_board(code, key).runs
    monkeypatch.setattr(store, "record_run", real)  # the database is back: Ada's end is written next round
    wait_until(lambda: store.open_board(code, key).runs.get(ada.id, RunState()).status == "finished", timeout=30)


def test_a_server_killed_mid_run_leaves_a_lost_run_on_the_board_not_a_training_one(tmp_path):
    url = f"sqlite:///{tmp_path / 'classes.sqlite3'}"
    store = ClassStore(url)
    code, key = store.create_class("Lab")
    ada = store.join(code, "browser-a", "Ada")
    server = subprocess.Popen([sys.executable, "-c", SERVER, url, code, "browser-a"], cwd=ROOT, env=ENV)
    try:
        wait_until(lambda: store.open_board(code, key).runs.get(ada.id, RunState()).step > 0, timeout=60)
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait()
    assert store.open_board(code, key).runs[ada.id].status == "training"  # what the database says until...
    restarted = ClassStore(url, server="lab-host:8501")  # ...the server starts again and opens its store
    lost = store.open_board(code, key).runs[ada.id]
    assert lost.status == "lost" and lost.step > 0
    assert results_frame(restarted.open_board(code, key))["state"].tolist() == [f"lost at step {lost.step}"]
    restarted.close()
    store.close()


def test_the_recorder_purges_expired_classes_on_its_timer(tmp_path, monkeypatch):
    monkeypatch.setattr(recorder_module, "PURGE_EVERY_S", 0.2)
    now = [datetime.now(UTC)]
    store = ClassStore(f"sqlite:///{tmp_path / 'classes.sqlite3'}", clock=lambda: now[0])
    code, _ = store.create_class("Lab", retention_days=1)
    store.join(code, "browser-a", "Ada")
    registry = RunRegistry(ServerSettings(training_slots=1, worker_processes=False))
    recorder = ClassRecorder(store, registry.place, every_s=0.05)
    now[0] += timedelta(days=1, seconds=1)  # no one creates a class: the server's own timer purges it
    with store.engine.connect() as conn:
        wait_until(lambda: conn.scalar(select(func.count()).select_from(schema.students)) == 0)
        assert conn.scalar(select(func.count()).select_from(schema.classes)) == 0
    recorder.close()
    registry.close()
    store.close()
