"""Fixtures of the page tests."""

import pytest
import torch
from streamlit.runtime.media_file_manager import MediaFileManager

import ui.classes
import ui.common
import ui.state


@pytest.fixture
def browser(monkeypatch) -> dict:
    """Pages served to one browser with an id (`this_browser`), as a phone's reloads are: {"id": ...}, which a test
    may change to serve another browser; the browsers' kept models and runs are this test's alone."""
    served = {"id": "a-phone"}
    for module in (ui.common, ui.state):
        monkeypatch.setattr(module, "this_browser", lambda: served["id"])
    monkeypatch.setattr(ui.common, "models_by_browser", lambda kept={}: kept)
    monkeypatch.setattr(ui.common, "runs_by_browser", lambda kept={}: kept)
    monkeypatch.setattr(ui.state, "models_by_browser", ui.common.models_by_browser)
    monkeypatch.setattr(ui.state, "runs_by_browser", ui.common.runs_by_browser)
    return served


@pytest.fixture
def media(monkeypatch) -> dict:
    """What the page hands Streamlit's media files: images' bytes by URL, and download buttons' callables by their
    deferred file id (called when a button is clicked)."""
    kept = {}
    add, add_deferred = MediaFileManager.add, MediaFileManager.add_deferred

    def keep_file(self, data, mimetype, *args, **kwargs):
        url = add(self, data, mimetype, *args, **kwargs)
        kept[url] = data
        return url

    def keep_callable(self, data_callable, *args, **kwargs):
        file_id = add_deferred(self, data_callable, *args, **kwargs)
        kept[file_id] = data_callable
        return file_id

    monkeypatch.setattr(MediaFileManager, "add", keep_file)
    monkeypatch.setattr(MediaFileManager, "add_deferred", keep_callable)
    return kept


@pytest.fixture
def class_server(tmp_path, monkeypatch):
    """A class database and a run registry of the test's own."""
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("LAB_DATABASE_URL", raising=False)
    for resource in (ui.classes.class_recorder, ui.classes.class_store, ui.common.run_registry):
        resource.clear()
    yield
    for resource in (ui.classes.class_recorder, ui.common.run_registry, ui.classes.class_store):
        resource.clear()


@pytest.fixture
def restore_threads():
    """The test process gets its torch thread count back after the test (`open_train` sets one thread)."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def fresh_registry():
    """Each test on a server of its own: no run of an earlier test to join."""
    ui.common.run_registry.clear()
    yield
    ui.common.run_registry.clear()  # closes it: nothing trains on behind the test
