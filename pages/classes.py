"""A teacher's class, as the pages share it: the class database and its recorder (one per server), the class a
link names, and the student this browser joined it as.

Session state keys:
- "class_code": the class the opened link (`?class=...`) or the join form named, for this session;
- "teacher_class": (code, teacher key) of the class whose board this session opened;
- "teacher_new_key": the key of a class just created here, shown once.
"""

import os

import streamlit as st

from pages.common import run_registry
from pages.state import watcher_id
from transformer.classroom import ClassInfo, ClassroomError, ClassStore, Student, database_url
from transformer.classroom.recorder import ClassRecorder
from transformer.literal import markdown_literal
from transformer.url_state import class_code_parser, read_params


@st.cache_resource(show_spinner=False, on_release=ClassStore.close)
def class_store() -> ClassStore:
    """The classes of this server, kept where `LAB_DATABASE_URL`, the secrets' `[connections.classes] url`, or
    else SQLite under `LAB_DATA_DIR` says (docs/teacher.md)."""
    secrets = st.secrets.to_dict() if st.secrets.load_if_toml_exists() else {}
    return ClassStore(database_url(os.environ, secrets))


@st.cache_resource(show_spinner=False, on_release=ClassRecorder.close)
def class_recorder() -> ClassRecorder:
    """Writes the runs of class students into the class database as they train, from one thread."""
    return ClassRecorder(class_store(), run_registry().place)


def class_from_link() -> None:
    """Once per session, note the class the opened link names (`?class=amber-otter-7351`)."""
    if "class_link_read" in st.session_state:
        return
    st.session_state["class_link_read"] = True
    values, notices = read_params(st.query_params.to_dict(), {"class": class_code_parser()})
    for notice in notices:
        st.warning(f"{notice} Check the link you opened.", icon=":material/link_off:")
    if "class" in values:
        st.session_state["class_code"] = values["class"]


def current_class() -> tuple[ClassInfo, Student | None] | None:
    """The class this session is in (from its link) and the student this browser joined it as (None before they
    join); None outside a class, or when the class has ended (the link is then forgotten, with a message)."""
    code = st.session_state.get("class_code")
    if code is None:
        return None
    try:
        return class_store().class_info(code), class_store().student(code, watcher_id())
    except ClassroomError as err:
        st.session_state.pop("class_code", None)
        st.warning(f"The class link does not work: {markdown_literal(str(err))}.")
        return None


def join_form(info: ClassInfo) -> None:
    """The student's one question before they join: their display name."""
    st.subheader(f"Join the class {markdown_literal(info.title)}")
    with st.form("class_join"):
        name = st.text_input(
            "Your name on the class board",
            max_chars=40,
            key="class_name",
            help="Your teacher sees it beside your run; your classmates do not.",
        )
        if st.form_submit_button("Join", type="primary", icon=":material/group_add:"):
            try:
                class_store().join(info.code, watcher_id(), name)
            except ClassroomError as err:
                st.error(markdown_literal(str(err)))
            else:
                st.rerun()
