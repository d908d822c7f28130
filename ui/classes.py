"""A teacher's class, as the pages share it: the class database and its recorder (one per server), the class a
link names, the student this browser joined it as (their `Seat`), and what the Train page shows a class student:
the join form, their group and locked settings, the question to answer before Start, and their prediction graded
after the run.

Session state keys:
- "class_prediction": the choice picked in the question's widget on Train (and, as a flash's place, the warning
  under it when Start was pressed without one);
- "teacher_class": (code, teacher key) of the class whose board this session opened;
- "teacher_new_key": the key of a class just created here, shown alone until the teacher says it is saved.
"""

import atexit
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import streamlit as st

from transformer.classroom import (
    QUESTIONS,
    Assignment,
    Caller,
    ClassInfo,
    ClassroomError,
    ClassStore,
    Prediction,
    Snapshot,
    Student,
    database_url,
)
from transformer.classroom.assignment import form_names
from transformer.classroom.board import HEADINGS, prediction_tally, result_text, state_text
from transformer.classroom.questions import is_graded, question_text, right_choices
from transformer.classroom.recorder import ClassRecorder
from transformer.classroom.records import IN_FLIGHT
from transformer.classroom.schema import name_key
from transformer.figures import drawn_px
from transformer.i18n import N_
from transformer.link_params import LEFT_OUT, class_code_parser, read_params
from transformer.literal import markdown_literal
from transformer.run_configs import run_configs
from ui.common import client_address, run_registry
from ui.into_view import bring_into_view
from ui.language import _, chosen, said, table_cells, worded
from ui.links import show_link_notices
from ui.state import CLASS_CODE, RUN_SEAT, drop_flash, flash, show_flashes, watcher_id
from ui.tables import TABLE_PADDING_PX, fitted_px

if TYPE_CHECKING:
    import pandas as pd

# why Start did not start a class student's first run, said under the question (`answer_prediction`)
UNANSWERED = N_("answer the question above the Start button first: it is your prediction")
# what a join under another name says where this browser joined meanwhile, in another tab (`join_form`)
JOINED_ELSEWHERE = N_(
    "This browser joined the class as **{name}** in another tab, and a browser is one student: you are {name} here too."
)
JOIN_NAME, JOIN_BUTTON = "class_name", "class_join_button"  # the join form's name field and button
REMOVED = N_(
    "Your teacher removed your name from this class, with what you recorded. To take part again, join under a name "
    "of yours."
)
REMOVED_CLOSED = N_(
    "Your teacher removed your name from this class, with what you recorded, and the class is closed to new "
    "students: to take part again, ask your teacher to open it."
)
CLASS_POLL_S = 5.0  # a class's state a student's page waits on (a verdict, a class opened again) is read this often


@st.cache_resource(show_spinner=False, on_release=ClassStore.close)
def class_store() -> ClassStore:
    """The classes of this server, kept where `LAB_DATABASE_URL`, the secrets' `[connections.classes] url`, or
    else SQLite under `LAB_DATA_DIR` says (docs/teacher.md). The server's name (host and port) stays the same
    across its restarts, so the runs it held before one are known as its own, and marked lost."""
    secrets = st.secrets.to_dict() if st.secrets.load_if_toml_exists() else {}
    server = f"{socket.gethostname()}:{st.get_option('server.port')}"
    return ClassStore(database_url(os.environ, secrets), server=server)


@st.cache_resource(show_spinner=False, on_release=ClassRecorder.close)
def class_recorder() -> ClassRecorder:
    """Writes the runs of class students into the class database as they train, from one thread. A server that
    stops (a restart) writes the step each run reached first: Streamlit releases no cached resource as it exits, and
    a run the restarted server finds lost would read up to a round (RECORD_EVERY_S) of steps behind."""
    recorder = ClassRecorder(class_store(), run_registry().place, withdraw=run_registry().withdraw)
    atexit.register(recorder.close)
    return recorder


def caller() -> Caller:
    """Who asks the class database for something from this page: the rate limits count per address and browser."""
    return Caller(client_address(), watcher_id())


def class_from_link() -> None:
    """Once per session, note the class the opened link names (`?class=amber-otter-7351`); on any page, Home
    included, a link whose class is not one (or no longer one) says so and leaves the address."""
    if "class_link_read" in st.session_state:
        return
    st.session_state["class_link_read"] = True
    values, notices = read_params(st.query_params.to_dict(), {"class": class_code_parser()}, LEFT_OUT)
    show_link_notices(notices)
    if "class" in values:
        st.session_state[CLASS_CODE] = values["class"]
        current_class()
    else:
        st.query_params.pop("class", None)


def current_class() -> tuple[ClassInfo, Student | None] | None:
    """The class this session is in (from its link) and the student this browser joined it as (None before they
    join); None outside a class, or when the class has ended (the link is then forgotten, with a message)."""
    code = st.session_state.get(CLASS_CODE)
    if code is None:
        return None
    try:
        info = class_store().class_info(code, caller())  # a code from a link: a wrong one counts against its sender
        return info, class_store().student(code, watcher_id())
    except ClassroomError as err:
        st.session_state.pop(CLASS_CODE, None)
        st.query_params.pop("class", None)  # a reload does not open it again
        st.warning(
            _("This class link does not work ({reason}).", reason=markdown_literal(_(err))), icon=":material/link_off:"
        )
        return None


def join_form(info: ClassInfo) -> None:
    """The student's one question before they join: their display name."""
    st.header(_("Join the class {title}", title=markdown_literal(info.title)))
    if info.joins_closed:
        st.fragment(run_every=CLASS_POLL_S)(closed_notice)(info.code)
    with st.form("class_join"):
        name = st.text_input(  # no max_chars: Streamlit drops a longer paste whole; the store says how long it is
            _("Your name on the class board"),
            key=JOIN_NAME,
            help=_("Your teacher sees it beside your run; your classmates do not."),
        )
        with st.expander(_("Joined before, from another browser?"), key="class_rejoin_expander"):
            rejoin = st.text_input(
                _("Rejoin code from your teacher"),
                key="class_rejoin",
                help=_("With it, your name and all you recorded move to this browser."),
            )
        if st.form_submit_button(_("Join"), type="primary", icon=":material/group_add:", key=JOIN_BUTTON):
            try:
                student = class_store().join(info.code, watcher_id(), name, rejoin)
            except ClassroomError as err:
                st.error(_("Not joined: {reason}.", reason=markdown_literal(_(err))))
            else:
                tell_if_joined_elsewhere(student, name)  # a Join pressed in two tabs at once
                st.rerun()


def closed_notice(code: str) -> None:
    """While the class is closed to new students, says so; read again every CLASS_POLL_S, and once the teacher opens
    it, the page is drawn again without it (and without a "Not joined" that said it was closed)."""
    try:
        closed = class_store().class_info(code).joins_closed
    except ClassroomError:  # the class ended: the page's next run says so
        closed = False
    if not closed:
        st.rerun()
    closed = _(
        "Your teacher has closed this class to new students. If you joined it from another browser, type your "
        "name and the rejoin code your teacher gives you."
    )
    st.info(closed, icon=":material/lock:")


def tell_if_joined_elsewhere(student: Student, typed: str) -> None:
    """Where a join typed as `typed` found this browser joined as another name (from another tab), say so above the
    class's banner: a browser is one student."""
    if name_key(student.name) != name_key(typed):
        flash("class_joined", "info", _(JOINED_ELSEWHERE, name=markdown_literal(student.name)))


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
        return {name: values[name] for name in form_names() if name not in self.assignment.open}

    @property
    def key(self) -> tuple[str, int, datetime]:
        """The class and the student: what a run started in this seat is kept under (RUN_SEAT). A student is their
        id and when they joined (`rows.seated`): SQLite gives a removed student's id to the next to join."""
        return self.info.code, self.student.id, self.student.joined_at

    def task_name(self) -> str | None:
        """The task the student's group trains, by name, where it is one of the lab's; None for the class's own
        examples."""
        if self.info.task is not None:
            return None
        return str(self.assignment.settings(self.assignment.group(self.student.position))["task"])

    def configs(self, values: Mapping[str, Any]) -> tuple:
        """The run's configs: the form's values (by setting name) of the open settings over the assignment's;
        ValueError on a bad one."""
        changes = {name: values[name] for name in self.assignment.open if name in values}
        group = self.assignment.group(self.student.position)
        return run_configs(self.assignment.settings(group, self.student.seed, changes), pairs=self.info.task)


def run_of_seat(seat: Seat | None) -> bool:
    """Whether the session's Train run is `seat`'s, started in its class under its name, so that its page and lab
    report may show it as theirs; outside a class (None), whatever run the session has is."""
    return seat is None or st.session_state.get(RUN_SEAT) == seat.key


def class_task_name() -> str | None:
    """The task this session's class trains, by name, where it is one of the lab's (not the class's own examples);
    None outside a class, or before joining."""
    seat = seat_in_class()
    return None if seat is None else seat.task_name()


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
        if class_store().left(info.code, watcher_id()):  # this browser had a seat, now another's
            st.info(_("This browser has left the class: your teacher let you take your name to another browser."))
        elif class_store().removed(info.code, watcher_id()):
            st.warning(_(REMOVED_CLOSED if info.joins_closed else REMOVED), icon=":material/person_remove:")
        join_form(info)
        st.stop()
    seat = Seat(info, student)
    if st.session_state.get(JOIN_BUTTON):  # a join form drawn before this browser joined in another tab
        tell_if_joined_elsewhere(student, st.session_state.get(JOIN_NAME) or "")
    parts = [
        _("Class **{title}**", title=markdown_literal(info.title)),
        _("you are **{name}**", name=markdown_literal(student.name)),
        *([_("group **{group}**", group=markdown_literal(_(student.group)))] if student.group else []),  # its words
        _("seed {seed}. Your teacher locked the settings shown greyed out.", seed=student.seed)
        if info.assignment is not None
        else _("seed {seed}. The settings shown greyed out are your class's.", seed=student.seed),
    ]
    st.info(" · ".join(parts), icon=":material/school:")
    show_flashes("class_joined")
    return seat


def recorded_elsewhere(seat: Seat) -> None:
    """For a class student with no run on this page whose class has one of theirs: a run lost with its server (say
    so, and to press Start again), one still training on another page of theirs, or one that ended on a page this
    one is not (another browser before a rejoin, or this one before a reload or a server restart): where it is, and
    how to see it here; then their prediction's result."""
    class_recorder().record(seat.student)  # a run of theirs that has just ended is read back as ended
    run = class_store().standing(seat.student)[1]
    if run is None or run.status == "not started":
        return
    if run.status == "lost":
        st.warning(_("Your run was {result}.", result=_(result_text(run))), icon=":material/sync_problem:")
        return
    if run.status in IN_FLIGHT:
        st.info(
            _(
                "Your run is {state} on another page of yours (another tab or browser). Press Start with the same "
                "settings to watch it here.",
                state=_(state_text(run)),
            ),
            icon=":material/history:",
        )
        return
    st.info(
        _(
            "Your class has a run of yours, {result}: it is on your teacher's board and in the class's reports. This "
            "page does not have its curves: they stayed with the page that trained it, which a reload, another "
            "browser or a server restart leaves behind. To see them here, press Start with the settings you used: "
            "the same settings and your seed make the same run again.",
            result=_(result_text(run) or state_text(run)),
        ),
        icon=":material/history:",
    )
    prediction_result(seat)


def prediction_input(seat: Seat) -> None:
    """The class's question, to answer before the student's first run (drawn in the settings form). After a Start
    pressed without an answer (`answer_prediction`), the question comes into view with the warning under its
    choices, where the student looks, rather than under Start, which may be out of view."""
    refused = drop_flash("class_prediction")
    question = seat.info.question
    if question is None or class_store().standing(seat.student) != (None, None):  # answered, or has run already
        return
    if refused is not None:
        bring_into_view("class_prediction", object())  # each refused press, wherever the page was scrolled to
    words = _(question_text(question, seat.info))
    st.markdown(_("**Predict first:** {question}", question=markdown_literal(words)))
    st.caption(_(QUESTIONS[question].caption))
    st.radio(
        _("Predict first: {question}", question=words),  # the choices' name for a screen reader: plain, not Markdown
        QUESTIONS[question].choices,  # kept as the English choice: the class database's
        index=None,
        format_func=said(str),
        horizontal=True,
        key=worded("class_prediction", QUESTIONS[question].choices, str),
        label_visibility="collapsed",
    )
    if refused is not None:
        st.warning(refused[1])


def answer_prediction(seat: Seat) -> bool:
    """Before a class student's first run (Start's callback): keep the prediction picked on the page. False when the
    class asks one and none is picked: the question then says so under its choices (`prediction_input`)."""
    if seat.info.question is None or class_store().standing(seat.student) != (None, None):
        return True
    choice = chosen("class_prediction")
    if choice is None:
        flash("class_prediction", "warning", _("Not yet: {reason}.", reason=_(UNANSWERED)))
        return False
    class_store().answer(seat.student, choice)
    return True


def prediction_result(seat: Seat) -> None:
    """After the student's run: their prediction, what the runs measured, and the class's predictions so far. Every
    run of the class can turn the verdict, a classmate's who joins late too: while the class is open it is read
    again every CLASS_POLL_S on its own."""
    if seat.info.question is None:
        return
    try:
        class_recorder().record(seat.student)  # the run's end, written before the class is read back
        predicted = graded(seat)[1] is not None
    except ClassroomError:  # the class ended since this run of the page began: the next says so
        st.rerun()
    if predicted:
        st.fragment(run_every=CLASS_POLL_S)(prediction_verdict)(seat)


def graded(seat: Seat) -> tuple[Snapshot, Prediction | None, str | None]:
    """The class as it stands, the student's prediction, and the choice its runs make right (None until
    measured)."""
    snapshot = class_store().snapshot(seat.info.code)
    measured = right_choices(seat.info.question, snapshot).get(seat.student.id)
    return snapshot, snapshot.predictions.get(seat.student.id), measured


def prediction_verdict(seat: Seat) -> None:
    """The student's prediction, graded once measured, and the class's tally; once the class has ended, the whole
    page, which says so."""
    try:
        snapshot, prediction, measured = graded(seat)
    except ClassroomError:  # the teacher deleted the class while this page polled: the whole page tells the student
        st.rerun()
    if prediction is None:
        return
    question = QUESTIONS[seat.info.question]
    if measured is None:
        verdict = _("not measured: it needs finished runs in both groups.")
    elif not is_graded(measured):
        verdict = _("not graded: the runs it rests on ran out of time before they solved the task.")
    elif measured == prediction.choice:
        verdict = _("the runs say **{measured}**: you were right.", measured=_(measured))
    else:
        verdict = _("the runs say **{measured}**: not what you predicted.", measured=_(measured))
    st.markdown(
        _(
            "**Your prediction:** {question} **{choice}**. So far {verdict}",
            question=markdown_literal(_(question_text(seat.info.question, seat.info))),
            choice=_(prediction.choice),
            verdict=verdict,
        )
    )
    st.caption(_("{caption} The whole class's predictions so far:", caption=_(question.caption)))
    tally_table(snapshot)


def tally_table(snapshot: Snapshot) -> None:
    """The class's predictions, choice by choice (`prediction_tally`): an HTML table, whose choices wrap to a phone's
    width where a grid would scroll sideways (its choices are the questions' own words, never a user's)."""
    tally = table_cells(prediction_tally(snapshot), "choice")
    tally.columns = [_(HEADINGS[name]) for name in tally.columns]
    st.table(tally.set_index(_(HEADINGS["choice"])))


NAME_MOST_PX = 200  # a student's name column: about 12 Chinese or 28 Latin characters, the loss curves in view at
# a projector's 1280 px beside the sidebar
ELLIPSIS = "…"


def fitted_name(name: str) -> str:
    """`name` whole where it fits the name column (NAME_MOST_PX), else cut in its middle to fit, with an ellipsis
    (the grid cuts a wider cell mid-character, with no sign that it did): its start, and about a third of what is
    kept from its end, which tells apart names that start alike ("Zhang Wei, group 1" and "Zhang Wei, group 2")."""
    room = NAME_MOST_PX - TABLE_PADDING_PX
    if drawn_px(name) <= room:
        return name
    head, tail = name[: len(name) * 2 // 3], name[len(name) * 2 // 3 :]
    while drawn_px(head + ELLIPSIS + tail) > room:
        head, tail = (head[:-1], tail) if drawn_px(head) >= 2 * drawn_px(tail) else (head, tail[1:])
    return head.rstrip() + ELLIPSIS + tail.lstrip()


def board_table(frame: "pd.DataFrame", key: str, **config: object) -> None:
    """A board's table (as shown: `table_cells`), each column as wide as `board_columns` makes it and each name cut
    to fit (`fitted_name`); the full names are in the exports."""
    if "name" in frame:
        frame = frame.assign(name=frame["name"].map(fitted_name))
    st.dataframe(frame, hide_index=True, column_config=board_columns(frame, **config), key=key)


def board_columns(frame: "pd.DataFrame", **config: object) -> dict[str, object]:
    """A `column_config` heading each column of a board's table (as shown: `table_cells`) with its `HEADINGS` words
    in the session's language, each as wide as its widest cell or heading (`fitted_px`: a table wider than the page
    scrolls); `config`: a column's own config, in place of that."""
    columns = {}
    for name in frame:
        if name in config:
            columns[name] = config[name]
            continue
        heading = _(HEADINGS[name])
        width = fitted_px([heading, *frame[name]])
        columns[name] = st.column_config.Column(heading, width=width)
    return columns
