"""Runs on a registry: the settings of a small run, the same run trained alone to compare with, a wait for a run's
first step through the queue, and a run paused, stepped and resumed."""

import time

import torch

from tests.helpers import wait_until
from transformer.i18n import translator
from transformer.model import ModelConfig
from transformer.serving import Run
from transformer.tasks import DataConfig
from transformer.training import TrainConfig, Trainer

ENDLESS = dict(steps=10**6, early_stop=False)
ZH = translator("zh-CN")  # what a page in Chinese shows of a run's error, notice or withdrawal


def settings(seed: int = 0, **train) -> tuple[ModelConfig, DataConfig, TrainConfig]:
    """The configs of a copy run at length 4 from `seed`, with `train` changing its TrainConfig."""
    return ModelConfig(), DataConfig(task="copy", min_len=4, max_len=4, seed=seed), TrainConfig(seed=seed, **train)


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
    """Whether `a` holds exactly the weights of `b`."""
    expected = b.state_dict()
    return all(torch.equal(tensor, expected[k]) for k, tensor in a.state_dict().items())


def moving(run: Run, timeout_s: float) -> bool:
    """Whether `run` leaves the queue and takes its first step (or ends) within `timeout_s`. A registry kept for a
    module's tests may still be freeing the slot of the test before when a test submits, so its run waits in the
    queue a moment; `Run.wait_until_moving` returns at once for a queued run (a page's Start does not wait)."""
    deadline = time.monotonic() + timeout_s
    while run.status == "queued" and time.monotonic() < deadline:
        time.sleep(0.02)
    return run.wait_until_moving(max(0.0, deadline - time.monotonic()))


def pause_step_and_resume(run: Run) -> None:
    """Pause a training run, check it holds for a second, Step it by one metric row, then Resume it."""
    run.pause()
    wait_until(lambda: run.status == "paused", timeout=30.0)
    held = run.step
    time.sleep(1.0)  # held for a second: no step
    assert run.step == held and run.status == "paused"
    run.step_row()
    every = run.train_config.eval_every
    wait_until(lambda: run.status == "paused" and run.step == (held // every + 1) * every, timeout=30.0)
    run.resume()
