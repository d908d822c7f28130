"""The Streamlit internals the app and its AppTest runs rely on (ui/streamlit_internals.py) are still there and
still behave as they expect: each test fails when a Streamlit upgrade moves or changes one, pointing at the function
to mend.

Also: a reload gives the browser its training run back, since the browser is known by the secret in Streamlit's
XSRF cookie, which stays the same while its mask changes on every page load."""

import ast
import dataclasses
import inspect
import json
import logging
import re
from pathlib import Path

import pytest
import streamlit
from streamlit.runtime import Runtime
from streamlit.runtime.app_session import AppSession, AppSessionState
from streamlit.runtime.pages_manager import PagesManager
from streamlit.runtime.scriptrunner import ScriptRunContext, get_script_run_ctx
from streamlit.testing.v1 import AppTest
from streamlit.web.server.starlette.starlette_app_utils import decode_xsrf_token_string, generate_xsrf_token_string
from streamlit.web.server.starlette.starlette_server_config import XSRF_COOKIE_NAME

from transformer.i18n import translator
from ui import streamlit_internals
from ui.streamlit_internals import (
    FRONTEND_LABELS,
    FRONTEND_SENTENCES,
    NOT_THIS_KIND,
    SERVER_AWAY,
    SERVER_AWAY_HERE,
    XSRF_COOKIE,
    browser_id,
    frontend_rules,
    navigation_mode_patch,
)
from ui.streamlit_internals import FRONTEND_REWORDED as REWORDED

# Two page loads of one browser (captured from a served app): same secret, different masks.
LOAD_1 = "2|09b631db|e304a33f415643afd20950daf738d9b0|1795452523"
LOAD_2 = "2|c65b1213|2ce980f78ebb60671de4731238d5fa78|1795452523"
OTHER_BROWSER = "2|c65b1213|2ce980f78ebb60671de4731238d5fa79|1795452523"
ROOT = Path(__file__).resolve().parent.parent


def test_one_browser_one_id_across_reloads():
    assert browser_id(LOAD_1) == browser_id(LOAD_2) is not None
    assert browser_id(OTHER_BROWSER) != browser_id(LOAD_1)
    assert "e304a33f" not in browser_id(LOAD_1) and len(browser_id(LOAD_1)) == 64  # a hash, not the secret


@pytest.mark.parametrize(
    "cookie",
    ["", "garbage", "2|zz|e304|1", "3|09b631db|e304a33f|1", "2|09b631db|e304a33f|1"[:9], "2|09b631db||1", None],
)
def test_anything_else_is_no_id(cookie):
    assert browser_id(cookie) is None


def test_the_xsrf_cookie_streamlit_sets_decodes_to_one_id_per_browser():
    """Streamlit's own server code makes the cookie: on every page load it re-masks the same secret."""
    assert XSRF_COOKIE == XSRF_COOKIE_NAME
    secret, other = bytes(range(16)), bytes(range(1, 17))
    loads = [generate_xsrf_token_string(secret, 1795452523) for _ in range(5)]
    assert len(set(loads)) > 1  # each load masks the secret anew
    assert {decode_xsrf_token_string(load)[0] for load in loads} == {secret}  # Streamlit reads them as one
    assert len({browser_id(load) for load in loads}) == 1 and browser_id(loads[0]) is not None
    assert browser_id(generate_xsrf_token_string(other, 1795452523)) != browser_id(loads[0])
    assert browser_id(generate_xsrf_token_string()) is not None  # a fresh secret and the current time


PAGE_FILES = re.findall(r'"(pages/\w+\.py)"', (ROOT / "streamlit_app.py").read_text())  # the frame's list


@pytest.mark.parametrize("page", ["pages/anatomy.py", "pages/teacher.py"])
def test_a_page_file_that_streamlit_runs_alone_starts_over_inside_the_frame(page, monkeypatch):
    """`rerun_inside_frame`: as served, PagesManager decides the legacy pages/ mode in its __init__ (AppTest builds
    one before each run), so a page switched to runs alone, as on a freshly started server: the page starts the run
    over, and the frame draws its sidebar."""
    monkeypatch.setattr(PagesManager, "__init__", inspect.unwrap(PagesManager.__init__))  # as served: no test patch
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=90)
    at.run()
    at.switch_page(page).run()
    assert not at.exception
    assert any("Model in hand" in m.value for m in at.sidebar.markdown)  # the frame's sidebar
    assert PagesManager.uses_pages_directory is False


def test_every_page_file_starts_its_run_over_inside_the_frame_before_it_imports_anything():
    assert len(PAGE_FILES) == 9
    for page in PAGE_FILES:
        body = ast.parse((ROOT / page).read_text()).body[1:3]  # after the docstring
        assert ast.unparse(body[0]) == "from ui.streamlit_internals import rerun_inside_frame", page
        assert ast.unparse(body[1]) == "rerun_inside_frame()", page


def test_the_navigation_mode_patch_wraps_pages_manager_init(tmp_path, monkeypatch):
    assert "main_script_path" in inspect.signature(PagesManager.__init__).parameters
    monkeypatch.setattr(PagesManager, "uses_pages_directory", None)
    monkeypatch.setattr(*navigation_mode_patch())
    (tmp_path / "pages").mkdir()
    PagesManager(str(tmp_path / "app.py"))
    assert PagesManager.uses_pages_directory is False


def test_page_connected_reads_the_runtime_and_the_script_run_context():
    """`page_connected`: `get_script_run_ctx()` is None outside a script run, else a context with the session's id;
    `Runtime.exists()`, `Runtime.instance()` and `Runtime.is_active_session(session_id)` answer whether the
    session's browser is still connected."""
    assert "session_id" in {field.name for field in dataclasses.fields(ScriptRunContext)}
    assert inspect.signature(Runtime.exists).parameters == {}
    assert inspect.signature(Runtime.instance).parameters == {}
    assert list(inspect.signature(Runtime.is_active_session).parameters) == ["self", "session_id"]
    assert get_script_run_ctx(suppress_warning=True) is None and streamlit_internals.page_connected() is None
    at = AppTest.from_function(_script_reading_the_connection).run()
    assert not at.exception
    assert [m.value for m in at.markdown] == ["check: True", "connected: False"]  # AppTest's runtime is a mock


def test_page_waker_reruns_a_session_as_streamlit_s_run_on_save_does():
    """`page_waker`: `Runtime.get_app_session` finds the session from any thread; on the session's event loop
    (`_call_soon_on_event_loop`), its `_state` says whether a script runs, and `request_rerun(_client_state)` runs
    its page again as it stands, the rerun Streamlit makes itself when a source file changes.
    tests/browser/test_streamlit_client.py has a served page hear of its run's end this way."""
    assert list(inspect.signature(Runtime.get_app_session).parameters) == ["self", "session_id"]
    assert list(inspect.signature(AppSession._call_soon_on_event_loop).parameters) == ["self", "callback"]
    assert list(inspect.signature(AppSession.request_rerun).parameters) == ["self", "client_state"]
    assert {"APP_NOT_RUNNING", "APP_IS_RUNNING"} <= {state.name for state in AppSessionState}
    init = inspect.getsource(AppSession.__init__)
    assert all(f"self.{field} = " in init for field in ("_state", "_client_state", "_event_loop"))
    assert "self.request_rerun(self._client_state)" in inspect.getsource(AppSession._on_source_file_changed)
    ended = inspect.getsource(AppSession._handle_scriptrunner_event_on_event_loop)
    assert "self._client_state = client_state" in ended  # a new one at each run's end: a run ended since the wake
    assert get_script_run_ctx(suppress_warning=True) is None and streamlit_internals.page_waker() is None


def _script_reading_the_connection() -> None:
    import streamlit as st

    from ui.streamlit_internals import page_connected

    check = page_connected()
    st.markdown(f"check: {callable(check)}")
    st.markdown(f"connected: {check() if check else None}")


def editor_page() -> None:
    """A table of 2 rows, at most 5, as the Train page's typed pairs are bounded."""
    import pandas as pd
    import streamlit as st

    from ui.streamlit_internals import cut_table_edits

    cut = cut_table_edits("table", 2, 5)
    table = st.data_editor(pd.DataFrame({"source": ["a", "b"]}), num_rows="dynamic", key="table", hide_index=True)
    st.write(f"{len(table)} rows, cut: {cut}")


def send_edits(at: AppTest, state: dict) -> None:
    """Run the page with `state` as the editor's edits, sent as a browser sends them: serialized widget state."""
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    states = at._tree.get_widget_states()
    states.widgets.append(WidgetState(id=at.data_editor[0].proto.id, string_value=json.dumps(state)))
    at._run(states)
    assert not at.exception


def test_cut_table_edits_bounds_the_rows_a_browser_adds_before_the_editor_applies_them(monkeypatch):
    """`cut_table_edits`: the editor's state, read before the editor and cut in place, is what it applies."""
    import streamlit.elements.widgets.data_editor as data_editor

    applied, add_rows = [], data_editor._apply_row_additions

    def counted(df, rows, schema) -> None:
        applied.append(len(rows))
        add_rows(df, rows, schema)

    monkeypatch.setattr(data_editor, "_apply_row_additions", counted)
    at = AppTest.from_function(editor_page).run()
    pasted = [{"source": str(i)} for i in range(1000)]
    send_edits(at, {"edited_rows": {}, "added_rows": pasted, "deleted_rows": [1, 1, 7, -1]})
    assert at.markdown[0].value == "5 rows, cut: True" and applied == [4]  # row 1 deleted, 4 of the 1,000 added
    send_edits(at, {"edited_rows": {}, "added_rows": pasted[:3], "deleted_rows": []})
    assert at.markdown[0].value == "5 rows, cut: False" and applied[-1] == 3


STREAMLIT_JS = Path(streamlit.__file__).parent / "static" / "static" / "js"


@pytest.mark.parametrize("sentences", [FRONTEND_SENTENCES, FRONTEND_LABELS])
def test_each_frontend_rule_matches_its_english_whole_and_gives_its_translation(sentences):
    zh = translator("zh-CN")
    for (pattern, names, text), english in zip(frontend_rules(zh.gettext, sentences), sentences, strict=True):
        values = {name: f"<{name}>" for name in names}
        found = re.fullmatch(pattern, english.format(**values))
        assert found and list(found.groups()) == list(values.values()), english
        assert names or not re.search(pattern, f"{english} and more"), english  # the whole text, not a part of one
        assert text == zh.gettext(english) != english


def test_streamlit_s_browser_code_still_writes_the_sentences_the_lab_rewords():
    """The dialog a page shows while its server does not answer (a browser test sees it at localhost, in the class
    board's killed server; the other address's sentence needs a network), and an uploader's refusal of a file's kind:
    their words are in Streamlit's browser code, so an upgrade that rewords them fails here."""
    bundle = "".join(p.read_text("utf-8", "replace") for p in STREAMLIT_JS.glob("*.js"))
    assert "Connection error" in FRONTEND_SENTENCES
    assert all(f"`{s}`" in bundle for s in ("Connection error", SERVER_AWAY, SERVER_AWAY_HERE))
    assert "codeBlock:`streamlit run yourscript.py`" in bundle  # the command under the localhost sentence
    assert "{kind} files are not allowed." in REWORDED and "type} files are not allowed.`" in bundle


# How Streamlit's Markdown makes links, emoji and signs of plain text, after its escapes are read (mdast's GitHub
# autolinks, remark-emoji, its own replacements), as its browser code writes them; tests/test_text_is_text.py reads
# text as they do.
MARKDOWN_TEXT_PATTERNS = (
    r"/(https?:\/\/|www(?=\.))([-.\w]+)([^ \t\r\n]*)/gi",
    r"/(?<=^|\s|\p{P}|\p{S})([-.\w+]+)@([-\w]+(?:\.[-\w]+)+)/gu",
    r"/:\+1:|:-1:|:[\w-]+:/g",
    # and its typographic signs in text between white space: "--" a dash, "->" an arrow, ">=" a sign
    *(
        rf"[/(^|\s){sign}(\s|$)/g,`$1{shown}$2`]"
        for sign, shown in (("<->", "↔"), ("->", "→"), ("<-", "←"), ("--", "—"), (">=", "≥"), ("<=", "≤"), ("~=", "≈"))
    ),
)


def test_streamlit_s_markdown_still_links_and_emojifies_text_by_the_patterns_the_lab_breaks():
    """`markdown_literal` puts a word joiner where these patterns would match; an upgrade that changes them fails
    here, and the patterns in tests/test_text_is_text.py need mending with the literal's."""
    bundle = "".join(p.read_text("utf-8", "replace") for p in STREAMLIT_JS.glob("*.js"))
    assert all(pattern in bundle for pattern in MARKDOWN_TEXT_PATTERNS)


@pytest.mark.parametrize("language", ["en", "zh-CN"])
def test_the_lab_rewords_the_connection_dialog_and_a_refused_file_kind_in_every_language(language):
    say = translator(language).gettext
    rules = frontend_rules(lambda english: say(REWORDED[english]), tuple(REWORDED))
    (pattern, names, text), *refusals = rules
    assert re.fullmatch(pattern, SERVER_AWAY) and not names  # Streamlit's whole sentence, nothing filled in
    assert text == say(REWORDED[SERVER_AWAY]) and "internet" not in text and "restarting" in REWORDED[SERVER_AWAY]
    here = [text for pattern, _, text in refusals if re.fullmatch(pattern, SERVER_AWAY_HERE)]
    assert here == [say(REWORDED[SERVER_AWAY_HERE])] and "accidentally" not in here[0]  # the teacher's own computer
    command = [text for pattern, _, text in refusals if re.fullmatch(pattern, "streamlit run yourscript.py")]
    assert command == ["streamlit run streamlit_app.py"]
    kind = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    for refused in (f"{kind} files are not allowed.", " files are not allowed."):  # a kind, or none the browser knows
        shown = [text for pattern, _, text in refusals if re.fullmatch(pattern, refused)]
        assert shown == [say(NOT_THIS_KIND)] and "application" not in shown[0]


def test_a_file_made_at_the_click_outlives_the_script_runs_of_a_busy_server():
    """Streamlit clears a download made at the click after two script runs of any session: the test fails when an
    upgrade changes that, and shows that with the cleanup spaced the file lives MEDIA_CLEANUP_EVERY_S."""
    from streamlit.runtime.media_file_manager import MediaFileManager
    from streamlit.runtime.media_file_storage import MediaFileStorageError
    from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

    from ui.streamlit_internals import MEDIA_CLEANUP_EVERY_S, space_media_cleanup

    def made_at_click(manager: MediaFileManager) -> str:
        placeholder = manager.add_deferred(lambda: b"<html>report</html>", "text/html", "report", "report.html")
        return Path(manager.execute_deferred(placeholder)).name  # the URL's file: id and extension

    storage = MemoryMediaFileStorage("/media")
    plain = MediaFileManager(storage)
    made = made_at_click(plain)
    plain.remove_orphaned_files(), plain.remove_orphaned_files()  # two script runs, of any sessions
    with pytest.raises(MediaFileStorageError):
        storage.get_file(made)

    now = [0.0]
    spaced = MediaFileManager(storage)
    space_media_cleanup(spaced, clock=lambda: now[0])
    space_media_cleanup(spaced, clock=lambda: now[0])  # idempotent
    spaced.remove_orphaned_files()  # a run before the click clears
    made = made_at_click(spaced)
    for _ in range(50):  # a class's page polls within the next seconds
        now[0] += 0.5
        spaced.remove_orphaned_files()
        if now[0] < MEDIA_CLEANUP_EVERY_S:
            assert storage.get_file(made)
    now[0] += 2 * MEDIA_CLEANUP_EVERY_S
    spaced.remove_orphaned_files()
    now[0] += MEDIA_CLEANUP_EVERY_S
    spaced.remove_orphaned_files()
    with pytest.raises(MediaFileStorageError):
        storage.get_file(made)  # and then it goes


def test_a_closed_tab_logs_no_traceback_and_the_server_code_it_answers_is_still_there():
    """Streamlit takes Starlette's WebSocketDisconnected (a RuntimeError) for a text frame and closes the closed socket
    again; uvicorn logs that to "uvicorn.error". When an upgrade changes any of the three, this fails, and
    `quiet_closed_tabs` may no longer be needed."""
    import starlette.websockets
    import streamlit.web.server.starlette.starlette_websocket as streamlit_websocket
    import uvicorn.protocols.websockets.websockets_sansio_impl as uvicorn_websocket

    handler = inspect.getsource(streamlit_websocket)
    assert "except WebSocketDisconnect:" in handler and re.search(
        r"except RuntimeError:[^\n]*\n(\s*#.*\n)*\s*await websocket\.close\(\)", handler
    )
    assert issubclass(starlette.websockets.WebSocketDisconnected, RuntimeError)
    assert not issubclass(starlette.websockets.WebSocketDisconnected, starlette.websockets.WebSocketDisconnect)
    assert f'getLogger("{streamlit_internals.ASGI_LOG}")' in inspect.getsource(uvicorn_websocket)

    streamlit_internals.quiet_closed_tabs()
    streamlit_internals.quiet_closed_tabs()  # idempotent: once per server
    logger = logging.getLogger(streamlit_internals.ASGI_LOG)
    assert sum(isinstance(f, streamlit_internals.ClosedTab) for f in logger.filters) == 1
    logged = []
    handler = logging.Handler(logging.ERROR)
    handler.emit = logged.append  # what reaches the log's handlers
    logger.addHandler(handler)
    try:
        for error in (starlette.websockets.WebSocketDisconnected("closed"), ValueError("a real bug")):
            try:
                raise error
            except Exception:
                logger.exception("Exception in ASGI application\n")
    finally:
        logger.removeHandler(handler)
    assert [r.exc_info[1].args[0] for r in logged] == ["a real bug"]  # the closed tab's record dropped
