"""Fixtures of the page tests."""

import pytest
from streamlit.runtime.media_file_manager import MediaFileManager


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
