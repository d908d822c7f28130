"""How a teacher reaches a class's board: create a class (its teacher key shown once, alone, with the class code,
until the teacher says it is saved), or open one with its code and key. The open board's code stays in the tab's
address, so that a reload or a restarted server offers it again.

Session state keys: "teacher_class", the open class's (code, key); "teacher_new_key", the key of a class just made,
until it is saved; MADE; and the forms' widgets ("teacher_title", "teacher_days", "teacher_code", "teacher_key")."""

import time
from urllib.parse import parse_qs, urlsplit

import streamlit as st

from transformer.classroom import ClassroomError
from transformer.limits import DEFAULT_RETENTION_DAYS, RETENTION_DAYS
from transformer.link_params import LEFT_OUT, class_code_parser, read_params
from transformer.literal import code_span, markdown_literal
from ui.classes import caller, class_store
from ui.language import _
from ui.links import show_link_notices
from ui.state import flash, show_flashes

# session_state key: the class Create is making, a dict: "making" until the database answers, then "code" and "key".
# A click while a run of the page is busy starts another run of it beside that one, on another thread, so a double
# click on Create runs its callback twice at once: the second finds this and makes no second class.
MADE = "teacher_made_class"
MADE_WAIT_S = 10.0  # the longest a run waits for the class another run of its page is making
BOARD = "board"  # the address's parameter: the class whose board the tab has open (its code, never its key)


def create_class() -> None:
    """The Create button: a class with the form's title and days. A session's Create makes one class until its key
    is saved: a double click's second run finds the first's being made (MADE) and waits for it (`made_class`)."""
    earlier = st.session_state.get(MADE)  # being made, or made, by another run of the page: it shows that one
    if "teacher_new_key" in st.session_state or (earlier and (earlier["making"] or "code" in earlier)):
        return
    made = {"making": True}
    st.session_state[MADE] = made
    try:
        title, days = st.session_state["teacher_title"], int(st.session_state["teacher_days"])
        code, key = class_store().create_class(title, days, caller())
        made.update(code=code, key=key)  # a plain dict's: written at once, whatever run of the page reads it
    except ClassroomError as err:
        flash("teacher_create", "error", _("Not created: {reason}.", reason=markdown_literal(_(err))))
    finally:
        made["making"] = False  # made, refused or failed: no run waits for it any longer
    made_class()


def made_class() -> None:
    """Open the class this session's Create made and show its key, once it is made (MADE): a run of the page that
    replaced the one making it waits for it, at most MADE_WAIT_S."""
    made = st.session_state.get(MADE)
    if made is None:
        return
    deadline = time.monotonic() + MADE_WAIT_S
    while made["making"] and time.monotonic() < deadline:
        time.sleep(0.05)
    if made["making"]:  # a database slower than that: a later run of the page shows it
        return
    if "code" in made:
        st.session_state["teacher_class"] = made["code"], made["key"]
        st.session_state["teacher_new_key"] = made["key"]
    st.session_state.pop(MADE, None)


def typed_code(text: str) -> str:
    """The class code in what a teacher typed or pasted: the code, or a class link or board address naming it."""
    params = parse_qs(urlsplit(text.strip()).query)
    named = params.get("class") or params.get(BOARD) or [text]
    return named[0].strip().lower()


def open_class(text: str, key: str) -> None:
    """The Open button: the board of the class `text` names (`typed_code`), if `key` is its teacher key."""
    code = typed_code(text)
    try:
        class_store().open_board(code, key.strip(), caller())
    except ClassroomError as err:
        st.error(_("Not opened: {reason}.", reason=markdown_literal(_(err))))
        return
    st.session_state["teacher_class"] = code, key.strip()
    st.rerun()


def board_in_address(code: str | None) -> None:
    """Keep the code of the class whose board is open in the tab's address, so that after a reload or a server
    restart the page offers it again (`start_page`); None takes it out."""
    if code is None:
        if BOARD in st.query_params:
            del st.query_params[BOARD]
    elif st.query_params.get(BOARD) != code:
        st.query_params[BOARD] = code


def start_page() -> None:
    """No class open yet: create one, or open one with its code and teacher key (the code filled in when the
    address names the board this tab had open)."""
    values, notices = read_params(st.query_params.to_dict(), {BOARD: class_code_parser()}, LEFT_OUT)
    show_link_notices(notices)
    if BOARD not in values:
        board_in_address(None)  # no class code: a reload would say so again
    else:
        try:
            class_store().class_info(values[BOARD], caller())  # a code from a link: a wrong one counts against it
        except ClassroomError as err:
            board_in_address(None)
            st.warning(
                _(
                    "The address names class {code}, whose board cannot open ({reason}).",
                    code=code_span(values[BOARD]),
                    reason=markdown_literal(_(err)),
                ),
                icon=":material/link_off:",
            )
        else:
            st.session_state.setdefault("teacher_code", values[BOARD])
            st.info(
                _(
                    "The address names the board of class {code}: enter its teacher key to open it.",
                    code=code_span(values[BOARD]),
                ),
                icon=":material/login:",
            )
    create_col, open_col = st.columns(2)
    with create_col.form("teacher_create"):
        st.header(_("Create a class"))
        st.text_input(_("Title"), key="teacher_title", placeholder=_("Period 3"))
        st.number_input(
            _("Keep its data for (days, {low} to {high})", low=RETENTION_DAYS[0], high=RETENTION_DAYS[1]),
            *RETENTION_DAYS,
            value=DEFAULT_RETENTION_DAYS,
            key="teacher_days",
        )
        st.form_submit_button(
            _("Create"), type="primary", icon=":material/add:", key="teacher_create_button", on_click=create_class
        )
    with create_col:
        show_flashes("teacher_create")
    with open_col.form("teacher_open"):
        st.header(_("Open a class's board"))
        code = st.text_input(_("Class code"), key="teacher_code", placeholder="amber-otter-7351")
        key = st.text_input(_("Teacher key"), type="password", key="teacher_key")
        if st.form_submit_button(_("Open"), icon=":material/login:", key="teacher_open_button"):
            open_class(code, key)


def new_key_panel(title: str, code: str, key: str) -> None:
    """The teacher key of the class just created here, alone on the page: not the link nor the QR code, so it is
    never projected with them. It stays until the teacher says they have saved it."""
    st.header(markdown_literal(title), anchor=False)
    st.warning(
        _(
            "**Your teacher key**, shown only now: copy it (point at it: a copy button appears at its right) and keep "
            "it somewhere safe, with the class code. The two open this class's board again, from any browser; "
            "without the key nobody can. Never share it or project it."
        ),
        icon=":material/key:",
    )
    st.markdown(_("Class code: {code}", code=code_span(code)))
    with st.container(key="teacher_new_key_box", border=True):
        st.code(key, language=None)
    st.button(_("I have saved the key"), type="primary", key="teacher_key_saved", on_click=forget_new_key)
    st.caption(_("Then the class's link and QR code appear, for the projector."))


def forget_new_key() -> None:
    """The "I have saved the key" button: the key leaves the page for good."""
    st.session_state.pop("teacher_new_key", None)
