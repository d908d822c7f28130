"""The lab reports a class keeps: each student's latest report (`transformer.report_data`), written by the class
recorder when their run ends, and the length test they ran on its model; a student's place in the class as a report
shows it; and every report of a class as one HTML file for its teacher (plotly.js in it once, however many students).

A report is kept only beside the run it reports on: the teacher's file shows it while the board shows that run ended.
"""

import json
import logging
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError

from ..i18n import N_, Translator
from ..report import Section, report_html
from ..report_data import ClassPart, ReportData, from_json, gather, to_json
from ..serving import Run
from .board import difference_sentence, state_text
from .questions import question_text, right_choices
from .records import Snapshot, Student
from .rows import seated, upsert
from .schema import reports, students
from .store import NOT_SEATED, ClassStore, UnknownClass

ENDED = ("finished", "stopped")  # run states a report is kept for
log = logging.getLogger("transformer.classroom")


def record_run_report(store: ClassStore, student: Student, run: Run) -> None:
    """Keep the report of `student`'s ended run in place of their last one and its length test, if the run trained a
    model; the same report again (Start joined the run it is of) keeps its length test. A run no report can be made of
    is logged and left out. UnknownClass once the class has ended."""
    if run.error is not None or run.result is None or run.result.steps == 0:
        return
    try:
        text = to_json(gather(run))
    except ValueError as err:  # a model whose outputs overflow, a report past its bound
        log.warning("class reports: no report of student %d's run: %s", student.id, err)
        return
    values = dict(student_id=student.id, report=text, lengths=None, updated_at=store.now())
    try:
        with store.engine.begin() as conn:
            if conn.scalar(select(students.c.id).where(seated(student))) is None:
                raise UnknownClass(NOT_SEATED)
            kept = conn.scalar(select(reports.c.report).where(reports.c.student_id == student.id))
            if kept == text:  # the model the length test was run on is this report's
                return
            upsert(conn, reports, values)
    except IntegrityError as err:  # the student was removed, or their class deleted, meanwhile
        raise UnknownClass(NOT_SEATED) from err


def record_lengths(store: ClassStore, student: Student, scores: list[dict]) -> None:
    """Keep a length test's score rows (`lengths.SCORE_COLUMNS`) with the student's latest report, which is of the run
    whose model was tested; nothing when no report is kept."""
    text = json.dumps(scores, allow_nan=False)
    with store.engine.begin() as conn:
        theirs = reports.c.student_id.in_(select(students.c.id).where(seated(student)))
        conn.execute(update(reports).where(theirs).values(lengths=text))


def kept_reports(store: ClassStore, student_ids: list[int]) -> dict[int, ReportData]:
    """The reports kept of these students, by student id, each with its length test; one unreadable is left out."""
    with store.engine.begin() as conn:
        found = conn.execute(select(reports).where(reports.c.student_id.in_(student_ids))).all()
    kept = {}
    for row in found:
        try:
            data = json.loads(row.report)
            data["lengths"] = None if row.lengths is None else json.loads(row.lengths)
            kept[row.student_id] = from_json(json.dumps(data))
        except (ValueError, TypeError) as err:
            log.warning("class reports: the report of student %d is unreadable: %s", row.student_id, err)
    return kept


def class_part(snapshot: Snapshot, student: Student) -> ClassPart:
    """The student's place in the class as a report shows it: their group, their prediction, what the class's runs
    measured, and the class's outcomes so far."""
    key, prediction = snapshot.info.question, snapshot.predictions.get(student.id)
    answered = prediction is not None and prediction.question == key
    return ClassPart(
        title=snapshot.info.title,
        student=student.name,
        group=student.group,
        question=None if key is None else question_text(key, snapshot.info),
        prediction=prediction.choice if answered else None,
        measured=right_choices(key, snapshot).get(student.id) if key else None,
        outcome=difference_sentence(snapshot),
    )


def class_reports_html(store: ClassStore, code: str, tr: Translator, made: datetime | None = None) -> str:
    """Every student's report in one HTML file, in join order, names included (for the class's teacher only), with
    why there is none for a student whose run has not ended, made at `made` (None: now, in the server's zone);
    UnknownClass once the class has ended."""
    snapshot = store.snapshot(code, names=True)
    kept = kept_reports(store, [s.id for s in snapshot.students])
    sections = []
    for student in snapshot.students:
        run, report = snapshot.runs.get(student.id), kept.get(student.id)
        if run is None or run.status not in ENDED or report is None or report.step != run.step:
            report = None
        heading = student.name if student.group is None else f"{student.name} · {tr.gettext(student.group)}"
        why = tr.gettext(N_("No report yet: the run is {state}."), state=tr.gettext(state_text(run)))
        sections.append(Section(heading, report, class_part(snapshot, student), why))
    title = tr.gettext(N_("Lab reports of the class {title}"), title=snapshot.info.title)
    return report_html(sections, tr, title, made=made)
