"""Teacher: run the class as one experiment. Create a class (its teacher key is shown once, alone on the page), show
its link and QR code on the projector, set what it trains (groups that differ in one setting, a question to
predict), watch every student's run on a live board, and export what the database holds at the click."""

from ui.streamlit_internals import rerun_inside_frame

rerun_inside_frame()  # first of all: see its docstring

import io
from collections.abc import Callable
from functools import partial
from urllib.parse import urlencode

import pandas as pd
import segno
import streamlit as st

from transformer.classroom import Assignment, ClassroomError, ClassStore, Snapshot
from transformer.classroom.board import (
    WORDS,
    difference_sentence,
    flags,
    group_curves,
    metrics_frame,
    outcome_table,
    predictions_frame,
    results_frame,
    student_rows,
)
from transformer.classroom.questions import question_text
from transformer.evaluation import PEEKED
from transformer.figures.board import group_curves_figure, outcomes_figure
from transformer.i18n import N_, Translator
from transformer.literal import code_span, markdown_literal
from ui.assignment_form import assignment_form
from ui.charts import chart
from ui.class_access import board_in_address, made_class, new_key_panel, start_page
from ui.classes import board_table, caller, class_store, tally_table
from ui.common import cluster_not_used, local_time
from ui.downloads import csv_download
from ui.language import (
    _,
    class_language_param,
    ngettext,
    option_for,
    session_translator,
    table_cells,
)
from ui.links import link_heading, unreachable_host
from ui.own_task import class_task_section
from ui.report_view import class_reports_download
from ui.state import flash, show_flashes
from ui.tables import fitted_px

BOARD_POLL_S = 2.0  # the board redraws every 2 s: it reads the database, never the runs themselves
TABS = (N_("Board"), N_("Assignment"), N_("Export and end"))
TAB = "teacher_tab"  # session_state key: the open tab, as the words it shows
EXPORTS = (  # what the Export tab downloads: (file name, button label, table)
    ("results", N_("Download results (CSV)"), results_frame),
    ("metric rows", N_("Download metric rows (CSV)"), metrics_frame),
    ("predictions", N_("Download predictions (CSV)"), predictions_frame),
)

st.title(_("Teacher: the class as one experiment"))
st.caption(
    _(
        "Create a class, share its link, and every student's run joins one experiment: groups that differ in one "
        "setting, a seed each, and a live board of the whole class."
    )
)
if cluster_not_used():
    st.info(
        _(
            "Runs train on this server's own workers: the Ray cluster it was given is not used (the server log "
            "says why)."
        )
    )


def class_link(code: str) -> str:
    """The link students open: the Train page, with the class in the address, and the teacher's language unless
    it is English (a student may still pick another)."""
    base = (st.context.url or "").rsplit("/", 1)[0]
    return f"{base}/train?" + urlencode({"class": code, **class_language_param()})


def qr_png(link: str) -> bytes:
    """A QR code of `link` for phones, as PNG bytes (a full QR code: phones do not all read Micro QR)."""
    buffer = io.BytesIO()
    segno.make_qr(link).save(buffer, kind="png", scale=8, border=2)
    return buffer.getvalue()


def projector_view(title: str, code: str, closed: bool) -> None:
    """What the room sees: the class's title, its link in large type and a QR code of the link (for those who joined
    alone where the class is `closed` to new students). Never the key."""
    link = class_link(code)
    with st.container(key="teacher_projector", border=True):
        link_col, qr_col = st.columns([3, 1], vertical_alignment="center")
        with link_col:
            st.header(markdown_literal(title), anchor=False)
            if closed:
                st.markdown(
                    _(
                        ":material/lock: **Closed to new students.** Students who joined open this link, or scan the "
                        "code, to come back:"
                    )
                )
            else:
                st.markdown(_("Open this link to join the class, or scan the code with a phone:"))
            with st.container(key="teacher_link"):
                st.markdown(link_heading(link), unsafe_allow_html=True)  # escaped: the lab's own address
            with st.popover(_("Copy link"), icon=":material/content_copy:"):  # to paste into a chat or an email
                st.code(link, language=None, wrap_lines=True)
        qr_col.image(  # as drawn: JPEG blurs it
            qr_png(link), caption=_("The class link"), output_format="PNG", alt=_("QR code of {link}", link=link)
        )
        if host := unreachable_host(link):
            st.warning(
                _(
                    "Students cannot open this link: it names {host}, this computer itself, because you opened the "
                    "lab from it by that name. Open the lab by the computer's network address instead (for example "
                    "`http://192.168.1.20:8501/teacher`, the Network URL Streamlit prints when it starts), and the "
                    "link and QR code will use it.",
                    host=code_span(host),
                ),
                icon=":material/wifi_off:",
            )


@st.fragment(run_every=BOARD_POLL_S)
def board(code: str, key: str) -> None:
    """Every student's run, the groups side by side, flags and predictions, and letting a student rejoin from
    another browser, redrawn every BOARD_POLL_S."""
    try:
        snapshot = class_store().snapshot(code, names=True)  # the key was checked when the board was opened
    except ClassroomError as err:
        st.error(_("The board cannot be read: {reason}", reason=markdown_literal(_(err))))
        return
    rows = student_rows(snapshot)
    if not len(rows):
        if snapshot.info.joins_closed:
            st.markdown(_("**No student is in the class.**"))  # closed: the notice and its Open button follow
        else:
            st.markdown(_("**No student has joined yet.** Share the link above."))
        show_flashes("teacher_remove", keep=True)  # the class's last student removed: said here
        joining_section(snapshot, code, key)
        return
    students = ngettext("{n} student", "{n} students", len(rows))
    closed = [_(":material/lock: closed to new students")] if snapshot.info.joins_closed else []
    st.markdown(" · ".join([f"**{students}**", *state_counts(rows), *closed]))
    shown = table_cells(rows)  # its Messages: states, results, and group labels as a setting's words
    curve = st.column_config.LineChartColumn(_("training loss"), width=fitted_px([_("training loss")]))  # its heading
    board_table(shown, "teacher_students", curve=curve)
    st.text(_(difference_sentence(snapshot)))  # group labels are the teacher's text: shown literally
    curves_col, outcomes_col = st.columns(2)
    tr = session_translator()
    losses = group_curves(snapshot)
    if any(len(curves.median) for curves in losses.values()):  # no axes before a run has a metric row
        grouped = snapshot.info.assignment is not None and snapshot.info.assignment.groups
        title = _("Training loss by group") if grouped else _("Training loss of the class")
        chart(curves_col, group_curves_figure(losses, title, tr=tr), key="board_curves")
    outcomes = outcome_table(snapshot)
    if len(outcomes):
        chart(outcomes_col, outcomes_figure(outcomes, list(losses), tr=tr), key="board_outcomes")  # colours as above
    if len(flagged := flags(snapshot)):
        needs = ngettext("{n} student needs a look:", "{n} students need a look:", len(flagged))
        st.warning(needs, icon=":material/flag:")
        board_table(table_cells(flagged), "teacher_flags")  # names: a grid, never markdown
    if snapshot.info.question is not None:
        question = markdown_literal(_(question_text(snapshot.info.question, snapshot.info)))  # it may name a file
        st.markdown(_("**Predictions:** {question}", question=question))
        tally_table(snapshot)
    joining_section(snapshot, code, key)
    rejoin_section(snapshot, code, key)
    remove_section(snapshot, code, key)


def joining_section(snapshot: Snapshot, code: str, key: str) -> None:
    """Whether new students may join, and the button that changes it: once the class has joined, closing it keeps a
    name typed to disrupt the board out of its free seats."""
    closed = snapshot.info.joins_closed
    if closed:
        st.info(
            _(
                "Closed to new students: the students who joined come back, and one you give a rejoin code moves to "
                "another browser; nobody else can join."
            ),
            icon=":material/lock:",
        )
    else:
        st.caption(_("Anyone with the link can join. Once your class has joined, you can close it to new students."))
    label = _("Open to new students") if closed else _("Close to new students")
    icon = ":material/lock_open:" if closed else ":material/lock:"
    if st.button(label, key="teacher_joining", icon=icon):
        set_joining(code, key, closed)
        st.rerun()  # the whole page, not the board alone: the projected link says whether it still lets students in
    show_flashes("teacher_joining")


def set_joining(code: str, key: str, open_: bool) -> None:
    """The class closed to new students or opened to them, or why not."""
    try:
        class_store().set_joining(code, key, open_, caller())
    except ClassroomError as err:
        flash("teacher_joining", "error", _("Not done: {reason}.", reason=markdown_literal(_(err))))


def rejoin_section(snapshot: Snapshot, code: str, key: str) -> None:
    """Let a student who opened the class link in another browser take their name there, with what they recorded."""
    names = [student.name for student in snapshot.students]
    with st.expander(_("A student changed browser"), key="teacher_rejoin_expander"):
        st.markdown(
            _(
                "A name stays with the browser that joined under it. A student who opens the class link in another "
                "browser (another computer, or a private window) joins under their name again with a rejoin code "
                "from you: the browser they joined from then leaves the class, and what they recorded stays theirs."
            )
        )
        name = st.selectbox(_("Student"), names, index=None, key="teacher_rejoin_name", placeholder=_("Pick a name"))
        if st.button(_("Let them rejoin"), disabled=name is None, key="teacher_rejoin", icon=":material/devices:"):
            try:
                rejoin = class_store().let_rejoin(code, key, name, caller())
            except ClassroomError as err:
                st.error(_("Not done: {reason}.", reason=markdown_literal(_(err))))
            else:  # kept, so that each redraw of the board shows it
                st.session_state["teacher_rejoin_code"] = name, rejoin
        given = st.session_state.get("teacher_rejoin_code")
        if given is not None and not class_store().rejoin_waiting(code, given[0]):  # used: the notice has done its job
            del st.session_state["teacher_rejoin_code"]
        elif given is not None:  # the code stays off the projected page until asked for
            done = N_(
                "{name} can join from the other browser under the same name, with a rejoin code. Tell it to them "
                "alone: whoever has it takes their name, so keep it off the projector."
            )
            student, given_code = markdown_literal(given[0]), code_span(given[1])
            st.success(_(done, name=student), icon=":material/devices:")
            with st.popover(_("Show the rejoin code"), icon=":material/visibility:", key="teacher_rejoin_shown"):
                st.markdown(_("Rejoin code for {name}: {code}", name=student, code=given_code))


def remove_section(snapshot: Snapshot, code: str, key: str) -> None:
    """Take a student off the class with what they recorded: a name typed to disrupt the board, or a seat taken by
    mistake. A form, cleared by each Remove: the board redraws every BOARD_POLL_S, and widgets outside a form would
    send their values back with a redraw. What the last Remove did stays under it."""
    names = [student.name for student in snapshot.students]
    with st.expander(_("Remove a student"), key="teacher_remove_expander"):
        st.markdown(
            _(
                "Removing a student takes their name off the board and deletes what they recorded: their prediction, "
                "run and lab report. The next student to join takes their place in the groups; the browser they "
                "joined from may join again."
            )
        )
        with st.form("teacher_remove_form", clear_on_submit=True, border=False):
            st.selectbox(_("Student"), names, index=None, key="teacher_remove_name", placeholder=_("Pick a name"))
            st.checkbox(_("Remove this student and what they recorded"), key="teacher_remove_sure")
            remove = dict(on_click=remove_student, args=(code, key))
            st.form_submit_button(_("Remove"), key="teacher_remove", icon=":material/person_remove:", **remove)
        show_flashes("teacher_remove", keep=True)


def remove_student(code: str, key: str) -> None:
    """The Remove button: the picked student out of the class once the check is ticked, or why not."""
    name, sure = st.session_state.get("teacher_remove_name"), st.session_state.get("teacher_remove_sure")
    if name is None or not sure:
        unsure = _("Not removed: pick a name and tick the check, since a removal deletes what the student recorded.")
        flash("teacher_remove", "warning", unsure)
        return
    try:
        class_store().remove_student(code, key, name, caller())
    except ClassroomError as err:
        flash("teacher_remove", "error", _("Not removed: {reason}.", reason=markdown_literal(_(err))))
        return
    done = _("Removed {name} from the class, with what they recorded.", name=markdown_literal(name))
    flash("teacher_remove", "success", done)


def state_counts(rows: pd.DataFrame) -> list[str]:
    """How many students' runs are in each state ('3 training', '12 finished'), in the session's language: a
    state's first words, before its step or place."""
    counts = rows["state"].str.extract(r"^(not started|[a-z]+)")[0].value_counts()  # a Message reads as English
    return [_("{n} {state}", n=n, state=_(WORDS.get(state, state))) for state, n in counts.items()]


def exports(code: str, key: str, assignment: Assignment | None) -> None:
    """The class's results, metric rows and predictions as CSV files and its students' lab reports, read at the
    click (what their token accuracy means, where the `assignment` trains without the causal mask), and deleting the
    class."""
    for col, (name, label, frame) in zip(st.columns(3), EXPORTS):
        file_name = f"{code}-{name.replace(' ', '-')}.csv"  # a file's name and columns stay English: data tools
        # read when clicked: what the database holds then, its words in the session's language
        table = partial(class_table, class_store(), code, frame, session_translator())
        widget = f"teacher_download_{name.replace(' ', '_')}"
        csv_download(col, _(label), table, file_name, widget)
    st.caption(
        _(
            "The files' names and column headings are the same in every language of the lab, so that a spreadsheet "
            "or a script reads every class's files alike; names, states, groups and reasons are in this page's "
            "language."
        )
    )
    if assignment is not None and assignment.without_causal_mask():  # the results' token_acc column
        st.caption(_(PEEKED))
    class_reports_download(code)
    sure = st.checkbox(_("Delete this class and everything it recorded, now"), key="teacher_delete_sure")
    if st.button(_("Delete the class"), disabled=not sure, key="teacher_delete", icon=":material/delete:"):
        try:
            class_store().delete_class(code, key, caller())
        except ClassroomError as err:
            st.error(_("Not deleted: {reason}.", reason=markdown_literal(_(err))))
            return
        st.session_state.pop("teacher_class")
        board_in_address(None)
        flash("teacher", "success", _("Deleted: the class and everything it recorded are gone."))
        st.rerun()


def class_table(
    store: ClassStore, code: str, frame: Callable[[Snapshot, Translator], pd.DataFrame], tr: Translator
) -> pd.DataFrame:
    """`frame` of the class as its database holds it now, names included, its words in `tr`'s language (a download
    button calls it when clicked, on a thread of the server: the store and translator are handed over, not looked
    up)."""
    return frame(store.snapshot(code, names=True), tr)


made_class()  # a double click's second run: the class the first is making
if "teacher_class" not in st.session_state:
    show_flashes("teacher")
    start_page()
    st.stop()

code, key = st.session_state["teacher_class"]  # checked by open_board or made by create_class in this session
try:
    snapshot = class_store().snapshot(code)
except ClassroomError as err:
    st.session_state.pop("teacher_class")
    st.session_state.pop("teacher_new_key", None)
    board_in_address(None)
    st.error(_("This class cannot be opened: {reason}", reason=markdown_literal(_(err))))
    start_page()
    st.stop()
info = snapshot.info
board_in_address(code)
if "teacher_new_key" in st.session_state:  # a class just created: its key first, alone, until it is saved
    new_key_panel(info.title, code, st.session_state["teacher_new_key"])
    st.stop()
projector_view(info.title, code, info.joins_closed)
st.caption(
    _("Kept until {until:%Y-%m-%d %H:%M %Z}, then deleted with all it recorded.", until=local_time(info.expires_at))
)
show_flashes("teacher")
open_tab = option_for(st.session_state.get(TAB), TABS, str)  # after a language switch: the same tab, new words
if open_tab in TABS:
    st.session_state[TAB] = _(open_tab)
board_tab, assignment_tab, export_tab = st.tabs([_(tab) for tab in TABS], key=TAB, on_change="rerun")
with board_tab:
    board(code, key)
with assignment_tab:
    assignment_form(snapshot, code, key)
    class_task_section(info, code, key)
with export_tab:
    exports(code, key, info.assignment)
if st.button(_("Close the board"), key="teacher_close"):
    st.session_state.pop("teacher_class")
    board_in_address(None)
    st.rerun()
