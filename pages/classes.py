"""A teacher's class, as the pages share it: the class database and its recorder (one per server), the class a
link names, the student this browser joined it as (their `Seat`), and what the Train page shows a class student:
the join form, their group and locked settings, the question to answer before Start, and their prediction graded
after the run.

Session state keys:
- "class_prediction": the choice picked in the question's widget on Train;
- "teacher_class": (code, teacher key) of the class whose board this session opened;
- "teacher_new_key": the key of a class just created here, shown once.
"""

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import streamlit as st

from pages.common import run_registry
from pages.links import show_link_notices
from pages.state import CLASS_CODE, watcher_id
from transformer.classroom import QUESTIONS, Assignment, ClassInfo, ClassroomError, ClassStore, Student, database_url
from transformer.classroom.assignment import SETTINGS, run_configs
from transformer.classroom.board import prediction_tally
from transformer.classroom.questions import right_choices
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
    show_link_notices(notices)
    if "class" in values:
        st.session_state[CLASS_CODE] = values["class"]


def current_class() -> tuple[ClassInfo, Student | None] | None:
    """The class this session is in (from its link) and the student this browser joined it as (None before they
    join); None outside a class, or when the class has ended (the link is then forgotten, with a message)."""
    code = st.session_state.get(CLASS_CODE)
    if code is None:
        return None
    try:
        return class_store().class_info(code), class_store().student(code, watcher_id())
    except ClassroomError as err:
        st.session_state.pop(CLASS_CODE, None)
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
        if st.form_submit_button("Join", type="primary", icon=":material/group_add:", key="class_join_button"):
            try:
                class_store().join(info.code, watcher_id(), name)
            except ClassroomError as err:
                st.error(markdown_literal(str(err)))
            else:
                st.rerun()


@dataclass(frozen=True)
class Seat:
    """A student in a class: what their runs train with (the assignment, their group and their seed)."""

    info: ClassInfo
    student: Student

    @property
    def assignment(self) -> Assignment:
        return self.info.assignment or Assignment()

    def locked(self) -> dict[str, Any]:
        """The settings the student may not change, by config field, with the values their runs use."""
        group = self.assignment.group(self.student.position)
        values = self.assignment.settings(group, self.student.seed)
        return {name: values[name] for name in SETTINGS if name not in self.assignment.open}

    def configs(self, data: Mapping, model: Mapping, train: Mapping) -> tuple:
        """The run's configs: the form's values of the open settings over the assignment's; ValueError on a bad
        one."""
        values = {**data, **model, **train}
        changes = {name: values[name] for name in self.assignment.open if name in values}
        group = self.assignment.group(self.student.position)
        return run_configs(self.assignment.settings(group, self.student.seed, changes))


def seat_in_class() -> Seat | None:
    """This browser's seat in the class of this session, if it has joined one; draws nothing."""
    code = st.session_state.get(CLASS_CODE)
    if code is None:
        return None
    try:
        info, student = class_store().class_info(code), class_store().student(code, watcher_id())
    except ClassroomError:
        return None
    return None if student is None else Seat(info, student)


def class_seat() -> Seat | None:
    """The student's seat in the class the opened link names; None outside a class. A student who has not joined
    yet gets the join form, and the page stops there."""
    found = current_class()
    if found is None:
        return None
    info, student = found
    if student is None:
        join_form(info)
        st.stop()
    seat = Seat(info, student)
    group = f" · group **{markdown_literal(student.group)}**" if student.group else ""
    st.info(
        f"Class **{markdown_literal(info.title)}** · you are **{markdown_literal(student.name)}**{group} · seed "
        f"{student.seed}. Your teacher locked the settings shown greyed out.",
        icon=":material/school:",
    )
    return seat


def prediction_input(seat: Seat) -> None:
    """The class's question, to answer before the student's first run (drawn in the settings form)."""
    question = seat.info.question
    if question is None or class_store().standing(seat.student) != (None, None):  # answered, or has run already
        return
    st.radio(
        f"**Predict first:** {QUESTIONS[question].text}",
        QUESTIONS[question].choices,
        index=None,
        horizontal=True,
        key="class_prediction",
        help=QUESTIONS[question].caption,
    )


def answer_prediction(seat: Seat) -> None:
    """Before a class student's first run: keep the prediction picked on the page; ClassroomError when the class
    asks one and none is picked."""
    if seat.info.question is None or class_store().standing(seat.student) != (None, None):
        return
    choice = st.session_state.get("class_prediction")
    if choice is None:
        raise ClassroomError("answer the question above the Start button first: it is your prediction")
    class_store().answer(seat.student, choice)


def prediction_result(seat: Seat) -> None:
    """After the student's run: their prediction, what the runs measured, and the class's predictions so far."""
    question = seat.info.question
    if question is None:
        return
    class_recorder().record(seat.student)  # the run's end, written before the class is read back
    snapshot = class_store().snapshot(seat.info.code)
    prediction = snapshot.predictions.get(seat.student.id)
    if prediction is None:
        return
    measured = right_choices(question, snapshot).get(seat.student.id)
    verdict = (
        "not measured yet: it needs finished runs in both groups"
        if measured is None
        else f"the runs measured **{measured}**: " + ("you were right." if measured == prediction.choice else "not so.")
    )
    st.markdown(f"**Your prediction:** {QUESTIONS[question].text} **{prediction.choice}**. So far {verdict}")
    st.caption(f"{QUESTIONS[question].caption} The whole class's predictions so far:")
    st.dataframe(prediction_tally(snapshot), hide_index=True, key="class_tally")
