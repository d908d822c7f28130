"""Teacher: run the class as one experiment. Create a class (its teacher key is shown once, alone on the page), show
its link and QR code on the projector, set what it trains (groups that differ in one setting, a question to
predict), watch every student's run on a live board, and export what the database holds at the click."""

from pages.streamlit_internals import rerun_inside_frame

rerun_inside_frame()  # first of all: see its docstring

import io
from collections.abc import Callable
from functools import partial

import pandas as pd
import segno
import streamlit as st

from pages.classes import caller, class_store
from pages.downloads import csv_download
from pages.state import flash, show_flashes
from transformer import settings as spec
from transformer.classroom import QUESTIONS, Assignment, ClassroomError, ClassStore, Snapshot
from transformer.classroom.assignment import split_groups
from transformer.classroom.board import (
    difference_sentence,
    flags,
    group_curves,
    metrics_frame,
    outcome_table,
    prediction_tally,
    predictions_frame,
    results_frame,
    student_rows,
)
from transformer.figures.board import group_curves_figure, outcomes_figure
from transformer.limits import DEFAULT_RETENTION_DAYS, MAX_TITLE_CHARS, RETENTION_DAYS
from transformer.literal import markdown_literal

BOARD_POLL_S = 2.0  # the board redraws every 2 s: it reads the database, never the runs themselves
PRESET = ("task", "min_len", "max_len", "steps")  # the settings the assignment form presets

st.title("Teacher: the class as one experiment")
st.caption(
    "Create a class, share its link, and every student's run joins one experiment: groups that differ in one "
    "setting, a seed each, and a live board of the whole class."
)


def create_class(title: str, days: int) -> None:
    try:
        code, key = class_store().create_class(title, days, caller())
    except ClassroomError as err:
        st.error(markdown_literal(str(err)))
        return
    st.session_state["teacher_class"] = code, key
    st.session_state["teacher_new_key"] = key
    st.rerun()


def open_class(code: str, key: str) -> None:
    try:
        class_store().open_board(code.strip().lower(), key.strip(), caller())
    except ClassroomError as err:
        st.error(markdown_literal(str(err)))
        return
    st.session_state["teacher_class"] = code.strip().lower(), key.strip()
    st.rerun()


def start_page() -> None:
    """No class open yet: create one, or open one with its code and teacher key."""
    create_col, open_col = st.columns(2)
    with create_col.form("teacher_create"):
        st.subheader("Create a class")
        title = st.text_input("Title", max_chars=MAX_TITLE_CHARS, key="teacher_title", placeholder="Period 3")
        days = st.number_input(
            "Keep its data for (days)", *RETENTION_DAYS, value=DEFAULT_RETENTION_DAYS, key="teacher_days"
        )
        if st.form_submit_button("Create", type="primary", icon=":material/add:", key="teacher_create_button"):
            create_class(title, int(days))
    with open_col.form("teacher_open"):
        st.subheader("Open a class's board")
        code = st.text_input("Class code", key="teacher_code", placeholder="amber-otter-7351", max_chars=40)
        key = st.text_input("Teacher key", type="password", key="teacher_key", max_chars=64)
        if st.form_submit_button("Open", icon=":material/login:", key="teacher_open_button"):
            open_class(code, key)


def class_link(code: str) -> str:
    """The link students open: the Train page, with the class in the address."""
    base = (st.context.url or "").rsplit("/", 1)[0]
    return f"{base}/train?class={code}"


def qr_png(link: str) -> bytes:
    """A QR code of `link` for phones, as PNG bytes (a full QR code: phones do not all read Micro QR)."""
    buffer = io.BytesIO()
    segno.make_qr(link).save(buffer, kind="png", scale=8, border=2)
    return buffer.getvalue()


def new_key_panel(title: str, key: str) -> None:
    """The teacher key of the class just created here, alone on the page: not the link nor the QR code, so it is
    never projected with them. It stays until the teacher says they have saved it."""
    st.subheader(markdown_literal(title), anchor=False)
    st.warning(
        "**Your teacher key**, shown only now: copy it (the button at its right) and keep it somewhere safe. It opens "
        "this class's board again, from any browser; without it nobody can. Never share it or project it.",
        icon=":material/key:",
    )
    with st.container(key="teacher_new_key_box", border=True):
        st.code(key, language=None)
    st.button("I have saved the key", type="primary", key="teacher_key_saved", on_click=forget_new_key)
    st.caption("Then the class's link and QR code appear, for the projector.")


def forget_new_key() -> None:
    """The "I have saved the key" button: the key leaves the page for good."""
    st.session_state.pop("teacher_new_key", None)


def projector_view(title: str, code: str) -> None:
    """What the room sees: the class's title, its link in large type and a QR code of the link. Never the key."""
    link = class_link(code)
    with st.container(key="teacher_projector", border=True):
        link_col, qr_col = st.columns([3, 1], vertical_alignment="center")
        with link_col:
            st.subheader(markdown_literal(title), anchor=False)
            st.markdown("Open this link to join the class, or scan the code with a phone:")
            with st.container(key="teacher_link"):
                st.header(markdown_literal(link), anchor=False)
        qr_col.image(qr_png(link), caption="The class link", output_format="PNG")  # as drawn: JPEG blurs it


def assignment_form(snapshot: Snapshot, code: str, key: str) -> None:
    """What the class trains: task, lengths and steps, which settings students may change, the groups and the
    question. Saved by a callback, so its outcome shows above the tabs whichever tab is open."""
    current = snapshot.info.assignment or Assignment()
    preset = current.preset
    with st.form("teacher_assignment"):
        for col, name in zip(st.columns(len(PRESET)), PRESET):
            s = spec.setting(name)
            value, common = preset.get(name, s.default), {"key": f"teacher_{name}", "help": s.help}
            if s.options:
                col.selectbox(s.label, s.options, index=s.options.index(value), format_func=s.word, **common)
            else:
                col.number_input(s.label, *s.bounds, value=value, **common)
        splits = [None, *(s.name for s in spec.group_splits())]
        st.selectbox(
            "Groups differ in",
            splits,
            index=splits.index(current.setting if current.setting in splits else None),
            format_func=lambda name: (
                "no groups: one class" if name is None else " / ".join(g.label for g in split_groups(name))
            ),
            key="teacher_split",
            help="Students alternate between the groups as they join, so the groups stay the same size.",
        )
        st.multiselect(
            "Students may change",
            [s.name for s in spec.class_open()],
            default=sorted(current.open),
            format_func=lambda name: spec.setting(name).label,
            key="teacher_open_settings",
        )
        questions = [None, *QUESTIONS]
        st.selectbox(
            "Question students answer before Start",
            questions,
            index=questions.index(snapshot.info.question),
            format_func=lambda q: "none" if q is None else QUESTIONS[q].text,
            key="teacher_question",
        )
        st.form_submit_button(
            "Save the assignment", type="primary", key="teacher_save", on_click=save_assignment, args=(code, key)
        )


def save_assignment(code: str, key: str) -> None:
    """The Save button: the form's values as the class's assignment and question, or why they were not saved."""
    state = st.session_state
    split, question = state["teacher_split"], state["teacher_question"]
    preset = {name: state[f"teacher_{name}"] for name in PRESET}
    groups = split_groups(split) if split else ()
    try:
        assignment = Assignment(preset, frozenset(state["teacher_open_settings"]), split, groups)
        if question is not None and (why := QUESTIONS[question].unfit(assignment)):
            raise ClassroomError(f"that question does not fit these groups: {why}")
        class_store().set_assignment(code, key, assignment, caller())
        class_store().set_question(code, key, question, caller())
    except (ClassroomError, ValueError) as err:
        flash("teacher", "error", f"Not saved: {markdown_literal(str(err))}")
    else:
        flash("teacher", "success", "Saved: students see it on Train from their next page load.")


@st.fragment(run_every=BOARD_POLL_S)
def board(code: str) -> None:
    """Every student's run, the groups side by side, flags and predictions, redrawn every BOARD_POLL_S."""
    try:
        snapshot = class_store().snapshot(code, names=True)  # the key was checked when the board was opened
    except ClassroomError as err:
        st.error(markdown_literal(str(err)))
        return
    rows = student_rows(snapshot)
    states = rows["state"].str.extract(r"^(not started|[a-z]+)")[0].value_counts() if len(rows) else {}
    st.markdown(
        f"**{len(rows)} student{'s' if len(rows) != 1 else ''}** · "
        + " · ".join(f"{n} {state}" for state, n in dict(states).items())
        if len(rows)
        else "**No student has joined yet.** Share the link above."
    )
    if not len(rows):
        return
    st.dataframe(
        rows,
        hide_index=True,
        column_config={"curve": st.column_config.LineChartColumn("training loss", width="small")},
        key="teacher_students",
    )
    st.text(difference_sentence(snapshot))  # group labels are the teacher's text: shown literally
    curves_col, outcomes_col = st.columns(2)
    curves_col.plotly_chart(group_curves_figure(group_curves(snapshot), "Training loss by group"), key="board_curves")
    outcomes = outcome_table(snapshot)
    if len(outcomes):
        outcomes_col.plotly_chart(outcomes_figure(outcomes), key="board_outcomes")
    if len(flagged := flags(snapshot)):
        st.warning("Needs a look:", icon=":material/flag:")
        st.dataframe(flagged, hide_index=True, key="teacher_flags")  # names are the students' text: a grid
    if snapshot.info.question is not None:
        st.markdown(f"**Predictions:** {QUESTIONS[snapshot.info.question].text}")
        st.table(prediction_tally(snapshot).set_index("choice"))  # built-in choices only: an HTML table


def exports(code: str, key: str) -> None:
    """The class's results, metric rows and predictions as CSV files read at the click, and deleting the class."""
    for col, (label, frame) in zip(
        st.columns(3),
        (("results", results_frame), ("metric rows", metrics_frame), ("predictions", predictions_frame)),
    ):
        file_name = f"{code}-{label.replace(' ', '-')}.csv"
        table = partial(class_table, class_store(), code, frame)  # read when clicked: what the database holds then
        widget = f"teacher_download_{label.replace(' ', '_')}"
        # on_click="ignore": the download leaves the page as it is, on this tab
        csv_download(col, f"Download {label} (CSV)", table, file_name, widget, on_click="ignore")
    sure = st.checkbox("Delete this class and everything it recorded, now", key="teacher_delete_sure")
    if st.button("Delete the class", disabled=not sure, key="teacher_delete", icon=":material/delete:"):
        try:
            class_store().delete_class(code, key, caller())
        except ClassroomError as err:
            st.error(f"Not deleted: {markdown_literal(str(err))}")
            return
        st.session_state.pop("teacher_class")
        flash("teacher", "success", "Deleted: the class and everything it recorded are gone.")
        st.rerun()


def class_table(store: ClassStore, code: str, frame: Callable[[Snapshot], pd.DataFrame]) -> pd.DataFrame:
    """`frame` of the class as its database holds it now, names included (a download button calls it when
    clicked, on a thread of the server: the store is handed over, not looked up)."""
    return frame(store.snapshot(code, names=True))


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
    st.error(f"This class cannot be opened: {markdown_literal(str(err))}")
    start_page()
    st.stop()
info = snapshot.info
if "teacher_new_key" in st.session_state:  # a class just created: its key first, alone, until it is saved
    new_key_panel(info.title, st.session_state["teacher_new_key"])
    st.stop()
projector_view(info.title, code)
st.caption(f"Kept until {info.expires_at:%Y-%m-%d %H:%M} UTC, then deleted with all it recorded.")
show_flashes("teacher")
board_tab, assignment_tab, export_tab = st.tabs(["Board", "Assignment", "Export and end"])
with board_tab:
    board(code)
with assignment_tab:
    assignment_form(snapshot, code, key)
with export_tab:
    exports(code, key)
if st.button("Close the board", key="teacher_close"):
    st.session_state.pop("teacher_class")
    st.rerun()
