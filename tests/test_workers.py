"""Runs that train in worker processes: the same run as on a thread, controlled the same way, and nothing left
behind when a worker dies or the pool closes."""

import signal
import time
from dataclasses import replace

import pytest
import torch
from polling import wait_until

from transformer.model import ModelConfig
from transformer.runs import RunRegistry
from transformer.tasks import DataConfig
from transformer.training import TrainConfig, Trainer
from transformer.workers import WorkerPool, WorkerTrainingJob


def settings(seed: int = 0, **train) -> tuple[ModelConfig, DataConfig, TrainConfig]:
    return ModelConfig(), DataConfig(task="copy", min_len=4, max_len=4, seed=seed), TrainConfig(seed=seed, **train)


@pytest.fixture(scope="module")
def pool():
    pool = WorkerPool(2)
    yield pool
    pool.close()


def alone(*configs) -> tuple[Trainer, list[dict]]:
    """The same run trained in this process, on one thread as in a worker, and the metric rows it yielded."""
    threads, rows = torch.get_num_threads(), []
    torch.set_num_threads(1)
    try:
        trainer = Trainer(*configs)
        trainer.run(on_row=rows.append)
    finally:
        torch.set_num_threads(threads)
    return trainer, rows


def same_weights(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    expected = b.state_dict()
    return all(torch.equal(tensor, expected[k]) for k, tensor in a.state_dict().items())


def test_a_run_in_a_worker_is_the_run_its_settings_make_alone_with_another_run_beside_it(pool):
    registry = RunRegistry(slots=2, max_queue=0, idle_timeout_s=30.0, workers=pool)
    other = registry.start("b", *settings(seed=9, steps=10**6, early_stop=False))
    try:
        job = registry.start("a", *settings(steps=60, early_stop=False, record_attention=True))
        assert isinstance(job, WorkerTrainingJob)
        assert job.wait_until_moving(30.0)
        wait_until(lambda: job.done, timeout=60.0)
    finally:
        other.stop(wait_s=10)
    reference, rows = alone(*settings(steps=60, early_stop=False, record_attention=True))
    assert job.error is None and replace(job.result, seconds=0) == replace(reference.result, seconds=0)
    assert same_weights(job.trainer.network, reference.network) and same_weights(job.trainer.model, reference.model)
    assert job.step_losses() == reference.step_losses
    assert [{k: v for k, v in row.items() if k not in ("tokens_per_s", "elapsed_s")} for row in job.rows()] == [
        {k: v for k, v in row.items() if k not in ("tokens_per_s", "elapsed_s")} for row in rows
    ]
    assert [s["step"] for s in job.attention_snapshots] == [s["step"] for s in reference.attention_snapshots]
    assert same_weights(job.model_snapshot(), reference.model)
    assert registry.counts()["training"] == 0


def test_pause_step_and_resume_in_a_worker_end_with_the_weights_of_an_unpaused_run(pool):
    configs = settings(steps=150, early_stop=False)
    job = WorkerTrainingJob(*configs, pool).start()
    job.pause()
    wait_until(lambda: job.status == "paused", timeout=30.0)
    held = job.step
    time.sleep(1.0)  # held for a second: no step
    assert job.step == held and job.status == "paused"
    job.step_row()
    every = configs[2].eval_every
    wait_until(lambda: job.status == "paused" and job.step == (held // every + 1) * every, timeout=30.0)
    job.resume()
    wait_until(lambda: job.done, timeout=60.0)
    assert job.error is None and job.result.steps == 150
    assert same_weights(job.trainer.network, alone(*configs)[0].network)


def test_stop_reaches_a_worker_asked_before_it_started_or_while_it_trains(pool):
    early = WorkerTrainingJob(*settings(steps=10**6, early_stop=False), pool)
    early.stop()
    early.start()
    wait_until(lambda: early.done, timeout=30.0)
    assert early.error is None and early.result.reason == "stopped"
    running = WorkerTrainingJob(*settings(steps=10**6, early_stop=False), pool).start()
    assert running.wait_until_moving(30.0)
    running.stop(wait_s=10)
    assert running.done and running.result.reason == "stopped" and running.result.steps > 0
    assert running.worker.alive  # a clean end: the worker waits for the next run


def test_a_worker_that_dies_mid_run_ends_the_run_with_a_message_and_frees_its_slot(pool):
    registry = RunRegistry(slots=1, max_queue=0, idle_timeout_s=30.0, workers=pool)
    job = registry.start("a", *settings(steps=10**6, early_stop=False))
    assert job.wait_until_moving(30.0)
    job.worker.process.kill()
    wait_until(lambda: job.done, timeout=30.0)
    assert job.error == "the training process ended unexpectedly"
    assert registry.counts()["training"] == 0
    after = registry.start("b", *settings(seed=1, steps=30, early_stop=False))  # a fresh worker takes its place
    wait_until(lambda: after.done, timeout=60.0)
    assert after.error is None and after.result.steps == 30


def test_a_worker_that_stops_answering_is_closed_and_its_run_ends_with_a_message(pool, monkeypatch):
    monkeypatch.setattr(WorkerTrainingJob, "silence_limit_s", 1.0)
    job = WorkerTrainingJob(*settings(steps=10**6, early_stop=False), pool).start()
    assert job.wait_until_moving(30.0)
    job.worker.process.send_signal(signal.SIGSTOP)  # hung: alive, but silent
    wait_until(lambda: job.done, timeout=30.0)
    assert job.error == "the training process stopped answering"
    wait_until(lambda: not job.worker.alive, timeout=10.0)  # closed, not handed to the next run


def test_closing_the_pool_leaves_no_worker_process():
    pool = WorkerPool(2)
    workers = list(pool._ready)
    job = WorkerTrainingJob(*settings(steps=20, early_stop=False), pool).start()
    wait_until(lambda: job.done, timeout=60.0)
    pool.close()
    assert all(not worker.alive for worker in workers)
