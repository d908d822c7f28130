"""Helpers shared by the tests: waiting on threads, a run trained to its end, reading AppTest session state and Plotly
JSON, and running pages inside the app's frame under AppTest (which reaches a Streamlit internal, `PagesManager`;
tests/test_streamlit_internals.py fails when an upgrade moves it)."""

import base64
import functools
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
import torch
from streamlit.runtime.pages_manager import PagesManager
from streamlit.testing.v1 import AppTest

from pages.state import FLASHES, RESULTS, ModelResult
from transformer.model import ModelConfig, Transformer
from transformer.pairs import TaskPairs
from transformer.run_configs import run_configs
from transformer.serving import Run, RunRegistry, ServerSettings


def wait_until(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    """Return once `condition()` is true; AssertionError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@contextmanager
def finished_run(pairs: TaskPairs | None = None, **settings) -> Iterator[Run]:
    """A run of the Train form's `settings` (as a class or the form makes it, recording attention), learning the task
    `pairs` when given, trained to its end on a registry of its own, in this process; the registry closes after."""
    registry = RunRegistry(ServerSettings(training_slots=1, worker_processes=False))
    try:
        run = registry.submit("tests", *run_configs(settings, pairs=pairs))
        deadline = time.monotonic() + 120
        while not run.wait_until_done(0.5):  # watched all along: the registry stops a run nobody watches
            assert time.monotonic() < deadline, "the run did not end in time"
            run.touch("tests")
        yield run
    finally:
        registry.close()


def poll_until_done(at: AppTest, timeout_s: float = 90.0) -> None:
    """Rerun the page, as its live fragment would, until the session's job has finished."""
    deadline = time.monotonic() + timeout_s
    while not at.session_state["run"].done:
        assert time.monotonic() < deadline, "training did not finish in time"
        time.sleep(0.3)
        at.run()
        assert not at.exception
    at.run()
    assert not at.exception


def kept(at: AppTest, name: str) -> ModelResult | None:
    """The result a page keeps under `name` (`per_model`, `keep_result`): (model, key, value), or None."""
    return at.session_state[RESULTS].get(name) if RESULTS in at.session_state else None


def flash_waiting(at: AppTest, place: str) -> bool:
    """Whether a one-off message waits for `place` to show it."""
    return FLASHES in at.session_state and place in at.session_state[FLASHES]


def array(value) -> np.ndarray:
    """A figure's data array, decoded from Plotly's typed-array JSON when encoded."""
    if isinstance(value, dict):
        flat = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        return flat.reshape([int(n) for n in value["shape"].split(",")]) if "shape" in value else flat
    return np.asarray(value)


def navigation_mode_patch() -> tuple[type, str, Callable]:
    """(object, attribute, value) for `setattr` or a test's `monkeypatch.setattr`: a `PagesManager.__init__` that
    leaves the legacy pages/ mode off, so that AppTest runs every page inside streamlit_app.py's frame, as a
    served app does once `st.navigation` has run. (AppTest forgets the navigation mode before each run, so a run
    after `switch_page` would otherwise execute the page's file alone, without the sidebar and the saving of a
    finished run that every page has in the browser.)"""
    init = PagesManager.__init__

    @functools.wraps(init)
    def init_in_navigation_mode(self, *args, **kwargs) -> None:
        init(self, *args, **kwargs)
        PagesManager.uses_pages_directory = False

    return PagesManager, "__init__", init_in_navigation_mode


def random_model(seed: int = 0, **changes) -> Transformer:
    """An untrained model of ModelConfig's defaults with `changes`, its weights drawn from `seed`, in eval mode."""
    torch.manual_seed(seed)
    return Transformer(ModelConfig(**changes)).eval()


def hooks_left(model: Transformer) -> int:
    """How many forward hooks remain on the model's modules (a probe must remove every hook it adds)."""
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())


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
