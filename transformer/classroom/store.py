"""`ClassStore`: a teacher's classes, their students, assignments, predictions and runs, kept in a database that
outlives the server: SQLite in a file by default, PostgreSQL when the URL names it, the same code on both.

Every method is one short transaction on a pooled engine, so many Streamlit sessions can share one store. Every
write is checked against the bounds of `transformer.limits` ("classes") before it is made. The teacher key is
checked against its scrypt hash in constant time, and wrong keys are counted in the database, per class, so the
rate limit holds across server processes.
"""

import unicodedata
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Row, create_engine, delete, event, func, insert, select, update
from sqlalchemy.engine import make_url
from sqlalchemy.exc import IntegrityError

from ..limits import (
    DEFAULT_RETENTION_DAYS,
    KEY_FAILURE_WINDOW_S,
    MAX_BROWSER_CHARS,
    MAX_CLASSES,
    MAX_KEY_FAILURES,
    MAX_NAME_CHARS,
    MAX_STUDENTS,
    MAX_TITLE_CHARS,
    RETENTION_DAYS,
)
from .assignment import Assignment
from .codes import MAX_CODE_CHARS, key_hash, key_matches, new_class_code, new_salt, new_teacher_key
from .questions import QUESTIONS
from .records import ClassInfo, Prediction, RunState, Snapshot, Student, bounded
from .schema import classes, key_failures, migrate, predictions, runs, students

Clock = Callable[[], datetime]
ATTEMPTS = 5  # tries at a write that a concurrent one may collide with (a code, a slot, a join position)


class ClassroomError(ValueError):
    """A request the store refuses, with a message for the person who made it."""


class UnknownClass(ClassroomError):
    """No class has this code (or it has expired)."""


class WrongKey(ClassroomError):
    """The teacher key does not match."""


class TooManyAttempts(ClassroomError):
    """Too many wrong teacher keys for this class lately."""


def database_url(env: Mapping[str, str], secrets: Mapping[str, Any] | None = None) -> str:
    """Where classes are kept: `LAB_DATABASE_URL`, else the secrets' `[connections.classes] url`, else SQLite in
    `classes.sqlite3` under `LAB_DATA_DIR` (default `./data`)."""
    if env.get("LAB_DATABASE_URL"):
        return env["LAB_DATABASE_URL"]
    if url := ((secrets or {}).get("connections") or {}).get("classes", {}).get("url"):
        return url
    return f"sqlite:///{Path(env.get('LAB_DATA_DIR') or 'data') / 'classes.sqlite3'}"


def utc_now() -> datetime:
    """The current time, time-zone aware."""
    return datetime.now(UTC)


def check_text(text: Any, what: str, longest: int) -> str:
    """`text` without surrounding spaces if it is 1..`longest` characters of printable text (no control or format
    characters), else ClassroomError. It stays literal: pages show it character for character."""
    if not isinstance(text, str) or not 1 <= len(text.strip()) <= longest:
        raise ClassroomError(f"{what} must be 1 to {longest} characters")
    if any(unicodedata.category(c).startswith("C") for c in text):
        raise ClassroomError(f"{what} must be plain text on one line")
    return text.strip()


class ClassStore:
    """Classes kept in the database at `url` (`sqlite:///path`, whose folder is created, or
    `postgresql+psycopg://...`); `clock` gives the time, so tests can move it."""

    def __init__(self, url: str, clock: Clock = utc_now):
        parsed = make_url(url)
        if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        self.engine = create_engine(parsed, pool_pre_ping=True)
        if parsed.get_backend_name() == "sqlite":
            event.listen(self.engine, "connect", _sqlite_settings)
        self.clock = clock
        self.version = migrate(self.engine, self.now())

    def now(self) -> datetime:
        """The clock's time as the database keeps it: naive UTC."""
        now = self.clock()
        return now.astimezone(UTC).replace(tzinfo=None) if now.tzinfo else now

    def close(self) -> None:
        """Close the pooled connections."""
        self.engine.dispose()

    # ---- the teacher

    def create_class(self, title: str, retention_days: int = DEFAULT_RETENTION_DAYS) -> tuple[str, str]:
        """A new class: its code (for the students' link) and its teacher key (shown once, kept only as a hash).
        ClassroomError when the server already holds MAX_CLASSES classes."""
        title = check_text(title, "A class's title", MAX_TITLE_CHARS)
        low, high = RETENTION_DAYS
        if type(retention_days) is not int or not low <= retention_days <= high:
            raise ClassroomError(f"a class is kept for {low} to {high} days")
        self.purge_expired()
        key, salt, now = new_teacher_key(), new_salt(), self.now()
        values = dict(title=title, key_salt=salt, key_hash=key_hash(key, salt), created_at=now)
        values["expires_at"] = now + timedelta(days=retention_days)
        for _ in range(ATTEMPTS):
            try:
                with self.engine.begin() as conn:
                    used = set(conn.scalars(select(classes.c.slot)))
                    slot = next((s for s in range(MAX_CLASSES) if s not in used), None)
                    if slot is None:
                        raise ClassroomError(
                            f"this server holds {MAX_CLASSES} classes, its most: delete a finished one first"
                        )
                    code = new_class_code()
                    conn.execute(insert(classes).values(code=code, slot=slot, **values))
                return code, key
            except IntegrityError:  # the code, or the slot, was taken meanwhile
                continue
        raise ClassroomError("the server is busy: try again")

    def open_board(self, code: str, key: str) -> Snapshot:
        """The whole class, names included, for its teacher."""
        row = self._teacher(code, key)
        with self.engine.begin() as conn:
            return _snapshot(conn, row, names=True)

    def set_assignment(self, code: str, key: str, assignment: Assignment | None) -> None:
        """Set (or clear) the class's assignment; ClassroomError if the class's question no longer fits it."""
        row = self._teacher(code, key)
        if row.question and (why := QUESTIONS[row.question].unfit(assignment)):
            raise ClassroomError(f"the class's question no longer fits: {why}; change the question first")
        data = None if assignment is None else assignment.to_json()
        with self.engine.begin() as conn:
            conn.execute(update(classes).where(classes.c.id == row.id).values(assignment=data))

    def set_question(self, code: str, key: str, question: str | None) -> None:
        """Set (or clear) the class's question, a key of QUESTIONS that fits its assignment."""
        row = self._teacher(code, key)
        if question is not None:
            if question not in QUESTIONS:
                raise ClassroomError("not a built-in question")
            if why := QUESTIONS[question].unfit(_assignment(row)):
                raise ClassroomError(f"this question does not fit the assignment: {why}")
        with self.engine.begin() as conn:
            conn.execute(update(classes).where(classes.c.id == row.id).values(question=question))

    def delete_class(self, code: str, key: str) -> None:
        """Delete the class and everything it recorded, now."""
        row = self._teacher(code, key)
        with self.engine.begin() as conn:
            _delete_classes(conn, [row.id])

    def purge_expired(self) -> int:
        """Delete every class past its retention, with all it recorded; returns how many."""
        with self.engine.begin() as conn:
            ids = list(conn.scalars(select(classes.c.id).where(classes.c.expires_at <= self.now())))
            _delete_classes(conn, ids)
        return len(ids)

    # ---- the students

    def class_info(self, code: str) -> ClassInfo:
        """The class as its students see it; UnknownClass if there is none with this code."""
        with self.engine.begin() as conn:
            return _info(self._class(conn, code))

    def snapshot(self, code: str, names: bool = False) -> Snapshot:
        """The whole class: without its students' names, what a student may see of the others; with them, what a
        board whose teacher key was checked (`open_board`) shows on each redraw, without checking it again."""
        with self.engine.begin() as conn:
            return _snapshot(conn, self._class(conn, code), names=names)

    def student(self, code: str, browser: str) -> Student | None:
        """The student this browser joined the class as, if any."""
        with self.engine.begin() as conn:
            row = self._class(conn, code)
            found = conn.execute(
                select(students).where(students.c.class_id == row.id, students.c.browser == browser)
            ).first()
            return None if found is None else _student(found, _assignment(row))

    def standing(self, student: Student) -> tuple[Prediction | None, str | None]:
        """The student's prediction and the status of their recorded run (None for either they have not got)."""
        with self.engine.begin() as conn:
            found = conn.execute(select(predictions).where(predictions.c.student_id == student.id)).first()
            status = conn.scalar(select(runs.c.status).where(runs.c.student_id == student.id))
        return (None if found is None else Prediction(found.question, found.choice)), status

    def join(self, code: str, browser: str, name: str) -> Student:
        """Join the class as `name` (literal text, unique in the class regardless of case) from `browser`; the same
        browser again gets the student it joined as, under their first name. ClassroomError if the name is taken
        or the class holds MAX_STUDENTS."""
        name = check_text(name, "A name", MAX_NAME_CHARS)
        browser = check_text(browser, "A browser id", MAX_BROWSER_CHARS)
        # A collision on the position means another student took it: at most MAX_STUDENTS can before the class is
        # full, so a class joining at once never sees "busy" (ATTEMPTS more for a name or browser taken meanwhile).
        for _ in range(MAX_STUDENTS + ATTEMPTS):
            if found := self.student(code, browser):
                return found
            try:
                with self.engine.begin() as conn:
                    return self._add_student(conn, self._class(conn, code), browser, name)
            except IntegrityError:  # another join took the position (or this name, or this browser) meanwhile
                continue
        raise ClassroomError("the class is busy: try again")

    def _add_student(self, conn: Connection, row: Row, browser: str, name: str) -> Student:
        """Insert a student at the next position of the class in `row`."""
        mine = students.c.class_id == row.id
        if conn.scalar(select(students.c.id).where(mine, students.c.name_key == name.casefold())) is not None:
            raise ClassroomError("someone in this class already has this name: pick another")
        position = conn.scalar(select(func.count()).select_from(students).where(mine))
        if position >= MAX_STUDENTS:
            raise ClassroomError(f"this class is full: it holds {MAX_STUDENTS} students")
        values = dict(class_id=row.id, browser=browser, name=name, name_key=name.casefold(), position=position)
        new = conn.execute(insert(students).values(**values, joined_at=self.now()).returning(students)).one()
        return _student(new, _assignment(row))

    def answer(self, student: Student, choice: str) -> None:
        """Record the student's prediction for the class's question; only before their run starts."""
        with self.engine.begin() as conn:
            joined = classes.join(students, students.c.class_id == classes.c.id)
            question = conn.scalar(select(classes.c.question).select_from(joined).where(students.c.id == student.id))
            if question is None:
                raise ClassroomError("this class has no question to answer")
            if choice not in QUESTIONS[question].choices:
                raise ClassroomError("not one of the question's choices")
            if conn.scalar(select(runs.c.status).where(runs.c.student_id == student.id)) not in (None, "not started"):
                raise ClassroomError("predictions are made before the run starts")
            values = dict(question=question, choice=choice, answered_at=self.now())
            _upsert(conn, predictions, student.id, values)

    def record_run(self, student: Student, state: RunState) -> None:
        """Keep the state of the student's run, replacing the last one: rows thinned to MAX_RUN_ROWS."""
        state = bounded(state)
        values = dict(
            status=state.status,
            step=state.step,
            queue_place=state.queue_place,
            rows=list(state.rows),
            result=state.result,
            error=state.error,
            updated_at=self.now(),
        )
        with self.engine.begin() as conn:
            _upsert(conn, runs, student.id, values)

    # ---- lookups

    def _class(self, conn: Connection, code: str) -> Row:
        """The class with `code` that has not expired, else UnknownClass."""
        row = None
        if isinstance(code, str) and len(code) <= MAX_CODE_CHARS:
            row = conn.execute(select(classes).where(classes.c.code == code)).first()
        if row is None or row.expires_at <= self.now():
            raise UnknownClass("there is no class with this code: it may have ended")
        return row

    def _teacher(self, code: str, key: str) -> Row:
        """The class if `key` is its teacher key; WrongKey, counted, if not; TooManyAttempts, unchecked, after
        MAX_KEY_FAILURES wrong keys within KEY_FAILURE_WINDOW_S."""
        since = self.now() - timedelta(seconds=KEY_FAILURE_WINDOW_S)
        with self.engine.begin() as conn:
            row = self._class(conn, code)
            mine = key_failures.c.class_id == row.id
            failures = conn.scalar(
                select(func.count()).select_from(key_failures).where(mine, key_failures.c.at > since)
            )
        if failures >= MAX_KEY_FAILURES:
            raise TooManyAttempts("too many wrong teacher keys for this class: wait a few minutes")
        if isinstance(key, str) and len(key) <= 100 and key_matches(key, row.key_salt, row.key_hash):
            return row
        with self.engine.begin() as conn:
            conn.execute(delete(key_failures).where(mine, key_failures.c.at <= since))
            conn.execute(insert(key_failures).values(class_id=row.id, at=self.now()))
        raise WrongKey("this is not the class's teacher key")


def _sqlite_settings(dbapi_connection: Any, _record: Any) -> None:
    """SQLite enforces foreign keys, and lets the board read while a student's run is written (WAL)."""
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.close()


def _upsert(conn: Connection, table: Any, student_id: int, values: Mapping[str, Any]) -> None:
    """Update the table's row of `student_id`, or insert it."""
    if not conn.execute(update(table).where(table.c.student_id == student_id).values(**values)).rowcount:
        conn.execute(insert(table).values(student_id=student_id, **values))


def _delete_classes(conn: Connection, ids: list[int]) -> None:
    """Delete the classes with these ids and every row that belongs to them."""
    members = select(students.c.id).where(students.c.class_id.in_(ids))
    conn.execute(delete(predictions).where(predictions.c.student_id.in_(members)))
    conn.execute(delete(runs).where(runs.c.student_id.in_(members)))
    conn.execute(delete(students).where(students.c.class_id.in_(ids)))
    conn.execute(delete(key_failures).where(key_failures.c.class_id.in_(ids)))
    conn.execute(delete(classes).where(classes.c.id.in_(ids)))


def _assignment(row: Row) -> Assignment:
    """The class's assignment, or the empty one (the Train page's defaults, no groups)."""
    return Assignment() if row.assignment is None else Assignment.from_json(row.assignment)


def _info(row: Row) -> ClassInfo:
    """A class row as ClassInfo."""
    assignment = None if row.assignment is None else _assignment(row)
    return ClassInfo(row.code, row.title, row.created_at, row.expires_at, assignment, row.question)


def _student(row: Row, assignment: Assignment, name: str | None = None) -> Student:
    """A student row as Student, with the group and seed `assignment` gives their position."""
    group = assignment.group(row.position)
    label = None if group is None else group.label
    return Student(row.id, row.name if name is None else name, row.position, label, assignment.seed(row.position))


def _snapshot(conn: Connection, row: Row, names: bool) -> Snapshot:
    """The class in `row` with its students (names blank unless `names`), runs and predictions."""
    assignment = _assignment(row)
    members = conn.execute(select(students).where(students.c.class_id == row.id).order_by(students.c.position))
    roster = tuple(_student(s, assignment, None if names else "") for s in members)
    ids = [s.id for s in roster]
    states = {
        r.student_id: RunState(r.status, r.step, r.queue_place, tuple(r.rows), r.result, r.error)
        for r in conn.execute(select(runs).where(runs.c.student_id.in_(ids)))
    }
    answers = {
        p.student_id: Prediction(p.question, p.choice)
        for p in conn.execute(select(predictions).where(predictions.c.student_id.in_(ids)))
    }
    return Snapshot(_info(row), roster, states, answers)
