"""The test aid that runs pages inside streamlit_app.py's frame under AppTest, as a served app runs them.

It reaches a Streamlit internal, `PagesManager`; tests/test_streamlit_internals.py fails when an upgrade moves it."""

import functools
from collections.abc import Callable

from streamlit.runtime.pages_manager import PagesManager


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
