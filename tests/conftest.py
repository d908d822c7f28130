"""Shared test set-up."""

import pytest
from streamlit.runtime.pages_manager import PagesManager


@pytest.fixture(autouse=True)
def navigation_mode(monkeypatch):
    """AppTest runs as a served app does once `st.navigation` has run: every page inside streamlit_app.py's frame.

    AppTest forgets the navigation mode before each run, and the app's folder is called pages/, so a run after
    `switch_page` would otherwise execute the page's file alone, without the frame (the sidebar, the saving of a
    finished run) that every page has in the browser.
    """
    init = PagesManager.__init__

    def init_in_navigation_mode(self, *args, **kwargs):
        init(self, *args, **kwargs)
        PagesManager.uses_pages_directory = False

    monkeypatch.setattr(PagesManager, "__init__", init_in_navigation_mode)
