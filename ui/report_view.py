"""The lab report on the pages: its download on Train once a run has finished, every report of a class on Teacher,
and a class student's length test kept with the report their class keeps of their run.

The files are made when a button is clicked, on a thread of the server: what they need from the session is handed
to them when the page is drawn (the run, the length test last run, the seat, the translator), never looked up there.
"""

import logging
from datetime import datetime, tzinfo
from functools import partial

import pandas as pd
import streamlit as st
from sqlalchemy.exc import SQLAlchemyError
from torch.nn import Module

from transformer.classroom import ClassroomError, ClassStore
from transformer.classroom.recorder import ClassRecorder
from transformer.classroom.reports import class_part, class_reports_html, record_lengths
from transformer.i18n import N_, Translator
from transformer.lengths import LengthReport
from transformer.limits import MAX_NAME_CHARS
from transformer.literal import markdown_literal
from transformer.report import notice_html, report_file_name, run_report_html
from transformer.report_data import gather, length_rows, same_weights
from transformer.serving import Run
from ui.classes import Seat, class_recorder, class_store, run_of_seat, seat_in_class
from ui.common import local_time
from ui.downloads import DOWNLOAD_RERUNS
from ui.language import _, session_translator
from ui.state import CLASS_CODE, RUN, kept_result, watcher_id

LENGTHS_KEPT = "report_lengths_kept"  # session_state key: the last length test kept with a class report
REPORT_NAME = "report_name"  # widget key: the name a student outside a class puts on their report
log = logging.getLogger("transformer.classroom")


def report_download(run: Run, name: str, seat: Seat | None) -> None:
    """A button that downloads the finished `run`'s lab report, made at the click, under `name` (its model's, as
    kept): with the length test last run on its model, the student's name (a class student's from the class, anyone
    else's if they give one) and the time, and for a class student their place in the class as the class stands
    then."""
    tested = kept_result("lengths")
    tested = None if tested is None else (tested.model, tested.value.scores)
    student = seat.student.name if seat else report_name()
    now = local_time()  # in the browser's time zone: the file names it, and the report says it
    made = partial(
        run_report, run, name, tested, seat, class_recorder() if seat else None, session_translator(), student, now
    )
    st.download_button(
        _("Download the lab report (HTML)"),
        made,
        report_file_name(name, student, watcher_id(), now),
        "text/html",
        key="download_report",
        on_click=DOWNLOAD_RERUNS,
        icon=":material/description:",
        help=_(
            "One file to hand in: the settings, curves, held-out examples, attention maps, alignment and length "
            "test. It opens offline in any browser."
        ),
    )


def report_name() -> str:
    """The name a student outside a class gives for their report, kept through the session: printable characters,
    at most MAX_NAME_CHARS (a longer one is cut, and the page says so); "" for none."""
    typed = st.text_input(
        _("Your name (for the report)"),
        key=REPORT_NAME,
        persist_state="session",
        help=_("Written on the report and in its file's name, so that your teacher knows whose it is."),
    )
    name = "".join(c for c in typed or "" if c.isprintable()).strip()
    if len(name) > MAX_NAME_CHARS:
        st.warning(
            _(
                "A name on a report holds at most {most} characters; this one has {n}, so the report carries its "
                "first {most}.",
                most=MAX_NAME_CHARS,
                n=len(name),
            ),
            icon=":material/content_cut:",
        )
    return name[:MAX_NAME_CHARS].strip()


def run_report(
    run: Run,
    name: str,
    tested: tuple[Module, pd.DataFrame] | None,
    seat: Seat | None,
    recorder: ClassRecorder | None,
    tr: Translator,
    student: str,
    offered: datetime,
) -> str:
    """The run's report as an HTML file under `name`, by `student` ("" for no one named), dated `offered` (when the
    page offered it, the time its file's name carries); a class student's with the class's part as the class
    database holds it once this run is written there (its end may not be yet: `recorder` writes every few seconds).
    A class that has ended meanwhile leaves that part out."""
    part = None
    if seat is not None and recorder is not None:
        try:
            recorder.record(seat.student)
            part = class_part(recorder.store.snapshot(seat.info.code), seat.student)
        except (ClassroomError, SQLAlchemyError) as err:
            log.warning("lab report: the class's part left out: %s", err)
    return run_report_html(gather(run, tested, name), tr, part, student, offered)


def class_reports_download(code: str) -> None:
    """A button that downloads every student's report in one file, as the class database holds them at the click."""
    st.download_button(
        _("Download every student's lab report (HTML)"),
        partial(class_reports, class_store(), code, session_translator(), local_time().tzinfo),
        f"{code}-reports.html",
        "text/html",
        key="teacher_download_reports",
        on_click=DOWNLOAD_RERUNS,
        icon=":material/description:",
        help=_("One file with a section per student, in join order; it opens offline in any browser."),
    )


def class_reports(store: ClassStore, code: str, tr: Translator, zone: tzinfo) -> str:
    """The class's reports made now, in `zone` (the teacher's), or a file that says why there are none."""
    try:
        return class_reports_html(store, code, tr, datetime.now(zone))
    except (ClassroomError, SQLAlchemyError) as err:
        title = tr.gettext(N_("No lab reports"))
        return notice_html(tr, title, tr.gettext(N_("The class's reports could not be read: {reason}"), reason=err))


def keep_class_length_test(model: Module, report: LengthReport) -> None:
    """Keep a length test with the class report of the student's finished Train run, if it tested that run's model;
    once per test."""
    run: Run | None = st.session_state.get(RUN)
    if CLASS_CODE not in st.session_state or run is None or not run.done or run.result is None:
        return
    if st.session_state.get(LENGTHS_KEPT) is report:
        return
    st.session_state[LENGTHS_KEPT] = report
    if (seat := seat_in_class()) is None or not run_of_seat(seat):  # a run of another class, or of none
        return
    if (trained := run.model()) is None or not same_weights(model, trained):
        return
    try:
        class_recorder().record(seat.student)  # the run's end and its report first, if not written yet
        record_lengths(class_store(), seat.student, length_rows(report.scores))
    except (ClassroomError, SQLAlchemyError) as err:
        reason = markdown_literal(_(err))
        st.warning(_("Your length test could not be kept with your class report: {reason}", reason=reason))
