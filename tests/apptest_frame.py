"""Make AppTest run every page inside streamlit_app.py's frame, as a served app does once `st.navigation` has run.

AppTest forgets the navigation mode before each run, and the app's folder is called pages/, so a run after
`switch_page` would otherwise execute the page's file alone, without the frame (the sidebar, the saving of a
finished run) that every page has in the browser.
"""

from collections.abc import Callable

from streamlit.runtime.pages_manager import PagesManager


def in_navigation_mode(init: Callable) -> Callable:
    """`PagesManager.__init__` that leaves the legacy pages/ mode off, wrapping the original `init`."""

    def init_in_navigation_mode(self, *args, **kwargs) -> None:
        init(self, *args, **kwargs)
        PagesManager.uses_pages_directory = False

    return init_in_navigation_mode
