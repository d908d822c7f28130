"""Every part of Streamlit the app uses that is not its public API, each behind one small function.

A Streamlit upgrade may move or change any of these: tests/test_streamlit_internals.py fails when one does, and
this module is the one place to mend. Nothing else in the app imports `streamlit.runtime`. `navigation_mode_patch` is
for AppTest (the tests and benchmarks/app_bench.py), never the served app.
"""

import functools
import hashlib
import logging
import re
import threading
import time
from collections.abc import Callable

import streamlit as st
from starlette.websockets import WebSocketDisconnected
from streamlit.runtime import Runtime
from streamlit.runtime.app_session import AppSession, AppSessionState
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.runtime.pages_manager import PagesManager
from streamlit.runtime.scriptrunner import get_script_run_ctx

from transformer.i18n import N_

MEDIA_CLEANUP_EVERY_S = 30.0  # the server clears files no page shows at most this often: a download lives this long
WAKE_WAIT_S, WAKE_RETRY_S = 2.0, 0.05  # a woken page busy running is retried this often for at most this long
XSRF_COOKIE = "_streamlit_xsrf"  # the cookie Streamlit's server sets on every page load while XSRF protection is on
# What Streamlit's browser code writes in English whatever the page's language, word for word ({name}: a value it fills
# in; {sentence}: another of these sentences): a number input's and a file uploader's errors, as a screen reader hears
# them and as their tooltips show them ("**Error**: ..."), a number input's buttons' names and "Press Enter" hint,
# the name of an uploader's button that adds a file, the title of the dialog a page shows while the server does
# not answer, and what a screen reader hears as a list of options opens.
# `ui.language` shows each in the session's language; tests/browser/test_streamlit_words.py makes Streamlit show each.
FRONTEND_SENTENCES = (
    N_("Error: {sentence}"),
    N_("Error: "),  # written apart from the sentence that follows it
    N_("Error"),
    N_(": {sentence}"),
    N_("Number is outside the allowed range. Please enter a value between {low} and {high}."),
    N_("Number is below the allowed range. Please enter a value greater than or equal to {low}."),
    N_("Number is above the allowed range. Please enter a value less than or equal to {high}."),
    N_("Press Enter to apply"),
    N_("Press Enter to submit form"),
    N_("Increment"),
    N_("Decrement"),
    N_("Clear value"),
    N_("File must be {size} or smaller."),
    N_("Only one file is allowed."),  # several files dropped on an uploader that takes one
    N_("Drag and drop a file here"),  # over an uploader while a file is dragged onto it
    N_("add icon"),  # the name of a file uploader's button that adds another file
    N_("Connection error"),  # the dialog's title while the server does not answer (restarting, or gone)
    N_("{count} options available."),  # a select box's or multiselect's list as it opens, to a screen reader
    N_("{count} option available."),
)
# What Streamlit's browser code writes that the lab words its own way in every language (English included): the
# dialog's sentence while the server does not answer blames the student's network, where a class's server is most
# likely restarting; an uploader's refusal of a file's kind names its MIME type ("application/vnd.openxmlformats-
# officedocument.spreadsheetml.sheet files are not allowed."), or nothing for a kind the browser does not know, where
# each uploader's label names the kind it takes.
SERVER_AWAY = "Streamlit server is not responding. Are you connected to the internet?"
# The same dialog on a page opened at localhost: a teacher trying the lab on their own computer.
SERVER_AWAY_HERE = (
    "Is Streamlit still running? If you accidentally stopped Streamlit, just restart it in your terminal:"
)
NOT_THIS_KIND = N_("This kind of file is not taken here: choose a file of the kind named above.")
FRONTEND_REWORDED = {
    SERVER_AWAY: N_(
        "The server is not answering: it may be restarting, and this page reconnects by itself. If it stays away, "
        "check your network or tell your teacher."
    ),
    SERVER_AWAY_HERE: N_(
        "The server is not answering: it may be restarting, and this page reconnects by itself. If you stopped the "
        "lab on this computer, start it again in a terminal, in the lab's folder:"
    ),
    "streamlit run yourscript.py": "streamlit run streamlit_app.py",  # the command under it: the lab's own
    "{kind} files are not allowed.": NOT_THIS_KIND,
    " files are not allowed.": NOT_THIS_KIND,  # a file of no kind the browser knows
}
# The names Streamlit's browser code gives controls in English only, as a screen reader reads them (aria-label), as an
# empty box shows them (placeholder) or as a chart's toolbar shows them on hover (data-title): a help icon's, a chosen
# option's remove button, a multiselect's clear button, an uploader's file input, a select box's placeholder and its
# open and close button, a range slider's two thumbs, the sidebar and its pages, a heading's link, an image's
# full-screen button, the buttons of a chart's and a table's toolbar, a button's shortcut badge, a password field's
# show and hide button, and a multiselect's group of chosen values. Shown in the
# session's words in those attributes only: as page text, "Remove {item}" or "Search" could be a student's own words.
REMOVE_ITEM = N_("Remove {item}")  # also the name the lab gives an uploaded file's remove button, which has none
FRONTEND_LABELS = (
    N_("Help for {label}"),
    REMOVE_ITEM,
    N_("Clear all"),
    N_("file upload"),
    N_("Choose an option"),
    N_("Open"),
    N_("Close"),
    N_("{label} — start"),
    N_("{label} — end"),
    N_("Sidebar"),
    N_("Collapse sidebar"),
    N_("Expand sidebar"),
    N_("App pages"),
    N_("Link to heading"),
    N_("Fullscreen"),
    N_("Fullscreen: {label}"),  # an image's full-screen button, named after the image
    N_("Close fullscreen"),
    N_("Show/hide columns"),
    N_("Download as CSV"),
    N_("Search"),
    N_("Add row"),
    N_("Shortcut {key}"),  # a button's keyboard shortcut, as its badge names it
    N_("Show password"),  # a password field's eye button (the teacher key), and once pressed:
    N_("Hide password"),
    N_("Selected values"),  # a multiselect's chosen values, as a group
    N_("Copy to clipboard"),  # a code block's copy button (the teacher key's)
    N_("progress"),  # a progress bar (a run's, on Train)
)


def rerun_inside_frame() -> None:
    """Start this run over inside streamlit_app.py's frame when Streamlit ran a page's file on its own.

    Streamlit treats a folder named pages/ as legacy auto-discovered pages until some run calls st.navigation, so
    requests that reach a freshly started server at once (a class opening its links) may each run a page's file
    without the frame, several importing the pages' modules side by side. Such a run finds the legacy mode on
    (`PagesManager.uses_pages_directory`, which st.navigation turns off); every page file calls this first, before
    importing anything else."""
    if get_script_run_ctx() is not None and PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False  # what st.navigation does: later runs use the frame's pages
        st.rerun()


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


def page_connected() -> Callable[[], bool] | None:
    """Whether this session's page is still connected to the server, as a check any thread may call; None outside
    a script run. Only a real True counts (AppTest's runtime is a mock)."""
    ctx = get_script_run_ctx()
    if ctx is None or not Runtime.exists():
        return None
    runtime, session = Runtime.instance(), ctx.session_id
    return lambda: runtime.is_active_session(session) is True


def page_waker() -> Callable[[], None] | None:
    """A call any thread may make to run this session's page again at once, as it stands (its page, query and
    widgets): the rerun Streamlit itself makes when a source file changes and it runs on save. None outside a
    script run. A page busy running waits up to WAKE_WAIT_S for that run to end, so that a click it is answering
    is not cut short, and is left as it is once that run has ended: the run, or the page's next poll, has read
    what the wake was for (a second rerun would redraw the page again and move it from where the first put it)."""
    ctx = get_script_run_ctx()
    if ctx is None or not Runtime.exists():
        return None
    runtime, session_id = Runtime.instance(), ctx.session_id

    def wake() -> None:
        session = runtime.get_app_session(session_id)  # None once the page has gone
        if session is not None:
            deadline = time.monotonic() + WAKE_WAIT_S
            session._call_soon_on_event_loop(lambda: _rerun_when_idle(session, deadline, session._client_state))

    return wake


def _rerun_when_idle(session: AppSession, deadline: float, last: object) -> None:
    """On the server's event loop: rerun `session` with its last client state once no script of it runs, unless a
    run has ended since the wake (each run's end leaves a new client state in place of `last`)."""
    if session._client_state is not last:
        return
    if session._state == AppSessionState.APP_NOT_RUNNING:
        session.request_rerun(session._client_state)
    elif session._state == AppSessionState.APP_IS_RUNNING and time.monotonic() < deadline:
        session._event_loop.call_later(WAKE_RETRY_S, _rerun_when_idle, session, deadline, last)


def browser_id(xsrf_cookie: object) -> str | None:
    """A private, stable id of the browser that sent Streamlit's XSRF cookie ("2|mask|masked secret|time"): a hash
    of the secret, which stays the same across reloads while its mask changes. None for any other value."""
    if not isinstance(xsrf_cookie, str):  # no cookie: XSRF protection is off, or a test harness
        return None
    parts = xsrf_cookie.split("|")
    try:
        mask, masked = bytes.fromhex(parts[1]), bytes.fromhex(parts[2])
    except (IndexError, ValueError):
        return None
    if parts[0] != "2" or len(mask) != 4 or not masked:
        return None
    secret = bytes(b ^ mask[i % 4] for i, b in enumerate(masked))
    return hashlib.sha256(secret).hexdigest()


def this_browser() -> str | None:
    """The `browser_id` of the browser this script run serves, or None."""
    return browser_id(st.context.cookies.get(XSRF_COOKIE))


def cut_table_edits(key: str, rows: int, most: int) -> bool:
    """Bound the edits a browser sent to `st.data_editor(..., key=key)`, a table of `rows` rows, before the editor
    applies them, so that the table holds at most `most` rows: rows added past them are dropped, and deletions of
    rows the table does not have. Streamlit adds each row by enlarging a DataFrame, which costs the square of the
    rows added, at every rerun that sends them. Call it just before the editor; returns whether rows were dropped.

    Internal: Streamlit keeps an editor's state, once read, as the object the editor then applies, so cutting its
    lists in place cuts what the editor applies."""
    state = st.session_state.get(key)
    if state is None:
        return False
    deleted, added = state["deleted_rows"], state["added_rows"]
    deleted[:] = sorted({row for row in deleted if type(row) is int and 0 <= row < rows})
    room = most - rows + len(deleted)
    if len(added) <= room:
        return False
    del added[max(room, 0) :]
    return True


def frontend_rules(
    translate: Callable[[str], str], sentences: tuple[str, ...] = FRONTEND_SENTENCES
) -> list[tuple[str, list[str], str]]:
    """Each of `sentences` (FRONTEND_SENTENCES, or FRONTEND_LABELS) as (a pattern matching the whole English text,
    one group per placeholder, in a syntax both Python and JavaScript read; the placeholders' names in the groups'
    order; its `translate`d template). A rule applies only where each {sentence} it holds is itself one of the
    sentences."""
    rules = []
    for sentence in sentences:
        pieces = re.split(r"\{(\w+)\}", sentence)  # literal, name, literal, name, ..., literal
        pattern = "(.+?)".join(re.escape(literal) for literal in pieces[::2])
        rules.append((f"^{pattern}$", pieces[1::2], translate(sentence)))
    return rules


ASGI_LOG = "uvicorn.error"  # where the server Streamlit runs logs an exception that escapes a connection's handler


class ClosedTab(logging.Filter):
    """Drops the log record of a page's connection that ended because the page had gone (`quiet_closed_tabs`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], WebSocketDisconnected))


def quiet_closed_tabs() -> None:
    """Keep a closed tab out of the server's log as an error, once per server (idempotent).

    Internal: Streamlit 1.67's websocket handler catches WebSocketDisconnect, but Starlette 1.10 raises
    WebSocketDisconnected (a RuntimeError) for a socket the page has already closed; Streamlit takes that for a text
    frame and closes the socket again, which raises once more, and uvicorn logs it as an exception in the ASGI
    application, with some sixty lines of traceback in the teacher's terminal for a student's closed tab."""
    logger = logging.getLogger(ASGI_LOG)
    if not any(isinstance(f, ClosedTab) for f in logger.filters):
        logger.addFilter(ClosedTab())


def space_media_cleanup(
    manager: MediaFileManager | None = None,
    every_s: float = MEDIA_CLEANUP_EVERY_S,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Let a file made at the click (`st.download_button` given a callable: a lab report, a class's exports) reach
    the browser however busy the server is: the media manager (the server's, by default) clears the files no page
    shows at most once every `every_s` seconds, so such a file lives at least that long. Idempotent.

    Internal: Streamlit keeps a file made at the click in no session's references, and after every script run of
    any session clears unreferenced files in two passes (marked, then deleted). With a class's pages polling, both
    passes came within milliseconds of the click, and the browser's request for the file found nothing: the
    download read "canceled"."""
    if manager is None and not Runtime.exists():  # a script run outside a server (AppTest)
        return
    manager = manager or Runtime.instance().media_file_mgr
    clear = manager.remove_orphaned_files
    if getattr(clear, "spaced", False):
        return
    lock, last = threading.Lock(), [float("-inf")]

    @functools.wraps(clear)
    def remove_orphaned_files() -> None:
        with lock:
            now = clock()
            if now - last[0] < every_s:
                return
            last[0] = now
        clear()

    remove_orphaned_files.spaced = True  # type: ignore[attr-defined]
    manager.remove_orphaned_files = remove_orphaned_files  # type: ignore[method-assign]
