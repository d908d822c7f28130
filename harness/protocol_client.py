"""A Streamlit session without a browser: enough of Streamlit's websocket protocol to open a page, set and click
widgets, read the texts the server sends, and keep a page's fragments polling on their `run_every` timers as the
browser does. The load test's protocol clients use it, so that 30 students cost the machine what they cost the
server and no Chromium takes its cores.

The protocol (protobuf messages on `/_stcore/stream`) is Streamlit's internals, not its API:
tests/browser/test_streamlit_client.py fails when an upgrade moves what this module reads or sends.
"""

import asyncio
import time
from typing import Self

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.asyncio.client import ClientConnection, connect

TEXT_FIELDS = {"markdown": "body", "alert": "body", "heading": "body", "text": "body", "progress": "text"}
FINISHED = ForwardMsg.ScriptFinishedStatus.FINISHED_SUCCESSFULLY
VALUE_FIELDS = {bool: "bool_value", int: "int_value", float: "double_value", str: "string_value"}


class StreamlitSession:
    """One browser tab's session, as an async context manager.

    `texts` holds the text of every element the server has drawn on the page (by its place on the page), and
    `exceptions` every exception shown. Set widgets by their `key` with `set`, then `click` a button: both go to
    the server with the click, as a form's widgets do on submit. `choose` sets a widget outside a form, which reruns
    the page at once. With `polls` False the page's fragments never poll: it hears only what the server sends of
    its own accord.
    """

    def __init__(self, url: str, polls: bool = True):
        self.polls = polls
        self.url = url.replace("http", "ws", 1).rstrip("/") + "/_stcore/stream"
        self.texts: dict[tuple[int, ...], str] = {}
        self.exceptions: list[str] = []
        self.pages: dict[str, str] = {}  # url path ("" for the default page) -> page script hash
        self.sent_at: list[float] = []  # perf_counter times of the reruns this session asked for
        self._page, self._query, self._page_hash = "", "", ""
        self._ids: dict[str, str] = {}  # widget key -> the server's widget id
        self._values: dict[str, WidgetState] = {}  # widget id -> the value this session gave it
        self._timers: dict[str, asyncio.Task] = {}  # fragment id -> its auto-rerun loop
        self._finished = asyncio.Event()
        self._changed = asyncio.Condition()
        self._socket: ClientConnection | None = None
        self._reader: asyncio.Task | None = None

    async def __aenter__(self) -> Self:
        self._socket = await connect(self.url, subprotocols=["streamlit"], max_size=None, open_timeout=60)
        self._reader = asyncio.create_task(self._read())
        return self

    async def __aexit__(self, *exc) -> None:
        for task in [*self._timers.values(), self._reader]:
            if task is not None:
                task.cancel()
        if self._socket is not None:
            await self._socket.close()

    async def open(self, page: str, query: str = "", timeout_s: float = 60.0) -> None:
        """Load a page by its url path ("" for the default), as typing its address does, and wait for its script
        run to finish."""
        self._page, self._query, self._page_hash = page, query, self.pages.get(page, "")
        self.texts.clear()
        await self._rerun()
        await self.wait_finished(timeout_s)

    def set(self, key: str, value: bool | int | float | str) -> None:
        """Give the widget with this key a value, sent with the next rerun (the next click)."""
        state = WidgetState(id=self._ids[key])
        setattr(state, VALUE_FIELDS[type(value)], value)
        self._values[state.id] = state

    async def choose(self, key: str, value: bool | int | float | str, timeout_s: float = 60.0) -> None:
        """Give a widget outside a form a value (a select box's is the option as it shows it), and wait for the
        rerun that sends at once, as the browser does."""
        self.set(key, value)
        await self._rerun()
        await self.wait_finished(timeout_s)

    async def click(self, key: str) -> None:
        """Click the button with this key: a rerun of the whole page with the values set so far."""
        await self._rerun(trigger=self._ids[key])

    async def wait_finished(self, timeout_s: float) -> None:
        """Until the script run in progress has finished (not one cut short for another)."""
        await asyncio.wait_for(self._finished.wait(), timeout_s)

    async def wait_for_text(self, *markers: str, timeout_s: float) -> str:
        """Until an element's text contains one of `markers`; returns that marker."""

        def found() -> str | None:
            return next((m for m in markers for text in self.texts.values() if m in text), None)

        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(found), timeout_s)
        return found()

    async def _rerun(self, trigger: str | None = None, fragment_id: str = "") -> None:
        back = BackMsg()
        rerun = back.rerun_script
        rerun.query_string, rerun.page_name, rerun.page_script_hash = self._query, self._page, self._page_hash
        rerun.widget_states.widgets.extend(self._values.values())
        if trigger is not None:
            rerun.widget_states.widgets.append(WidgetState(id=trigger, trigger_value=True))
        if fragment_id:
            rerun.fragment_id, rerun.is_auto_rerun = fragment_id, True
        else:  # the whole page runs again: the fragments it declares send their timers anew
            self._stop_polls()
            self._finished.clear()
        self.sent_at.append(time.perf_counter())
        await self._socket.send(back.SerializeToString())

    def _stop_polls(self) -> None:
        for task in self._timers.values():
            task.cancel()
        self._timers.clear()

    async def _poll(self, fragment_id: str, interval_s: float) -> None:
        while True:
            await asyncio.sleep(interval_s)
            await self._rerun(fragment_id=fragment_id)

    async def _read(self) -> None:
        async for raw in self._socket:
            msg = ForwardMsg()
            msg.ParseFromString(raw)
            self._take(msg)
            async with self._changed:
                self._changed.notify_all()

    def _take(self, msg: ForwardMsg) -> None:
        kind = msg.WhichOneof("type")
        if kind == "new_session":
            self._page_hash = msg.new_session.page_script_hash
            if not msg.metadata.run.fragment_ids:  # a run of the whole page, the server's own too: as the browser's
                self._stop_polls()  # `cleanupAutoReruns`, the polls stop and its fragments send their timers anew
        elif kind == "navigation":
            self.pages = {page.url_pathname: page.page_script_hash for page in msg.navigation.app_pages}
            self._page_hash = msg.navigation.page_script_hash or self._page_hash
        elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
            self._take_element(tuple(msg.metadata.delta_path), msg.delta.new_element)
        elif kind == "auto_rerun" and self.polls:
            fragment, interval = msg.auto_rerun.fragment_id, msg.auto_rerun.interval
            if fragment in self._timers:
                self._timers[fragment].cancel()
            self._timers[fragment] = asyncio.create_task(self._poll(fragment, interval))
        elif kind == "stop_auto_rerun":
            for fragment in msg.stop_auto_rerun.fragment_ids:
                if fragment in self._timers:
                    self._timers.pop(fragment).cancel()
        elif kind == "script_finished" and msg.script_finished == FINISHED:
            self._finished.set()

    def _take_element(self, path: tuple[int, ...], element) -> None:
        kind = element.WhichOneof("type")
        if kind == "exception":
            self.exceptions.append(f"{element.exception.type}: {element.exception.message}")
        widget_id = getattr(getattr(element, kind), "id", "") if kind else ""
        if isinstance(widget_id, str) and widget_id.startswith("$$ID-"):
            self._ids[widget_id.split("-", 2)[2]] = widget_id  # "$$ID-<hash>-<key>"
        if kind in TEXT_FIELDS:
            self.texts[path] = getattr(getattr(element, kind), TEXT_FIELDS[kind])
        else:
            self.texts.pop(path, None)
