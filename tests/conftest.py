"""Shared test set-up."""

import pytest
from apptest_frame import in_navigation_mode
from streamlit.runtime.pages_manager import PagesManager


@pytest.fixture(autouse=True)
def navigation_mode(monkeypatch):
    """AppTest runs pages inside the app's frame (see `apptest_frame`)."""
    monkeypatch.setattr(PagesManager, "__init__", in_navigation_mode(PagesManager.__init__))
