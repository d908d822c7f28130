"""`ClassStore`: a teacher's classes, their students, assignments, own tasks, predictions and runs, kept in a
database that outlives the server (`database`: SQLite in a file by default, PostgreSQL when the URL names it).

Every method is one short transaction on a pooled engine, so many Streamlit sessions can share one store, and every
write is idempotent: written twice, it leaves what it leaves written once. Every write is checked against the bounds
of `transformer.limits` ("classes") before it is made. The teacher key is checked against its scrypt hash in
constant time, a bounded number of checks at once; what one person may try is bounded by `throttle`.

A run's row says which server holds it and when that server last reported on it: a queued or training run unheard of
for LOST_AFTER_S reads "lost", and a server that opens its store marks the runs it held before as lost at once.
"""

import hmac
import threading
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Connection, Row, and_, insert, or_, select, update
from sqlalchemy.exc import IntegrityError

from ..i18n import N_, Message
from ..limits import (
    CLASS_CREATIONS,
    DEFAULT_RETENTION_DAYS,
    FREE_MISSES,
    KEY_CHECKS_AT_ONCE,
    LOST_AFTER_S,
    MAX_BROWSER_CHARS,
    MAX_CLASSES,
    MAX_NAME_CHARS,
    MAX_NAME_KEY_CHARS,
    MAX_REJOIN_CHARS,
    MAX_STUDENTS,
    MAX_TITLE_CHARS,
    MISS_SPACING_S,
    RETENTION_DAYS,
    WRONG_KEYS_PER_BROWSER,
)
from ..pairs import TaskPairs
from ..settings import Value
from . import throttle
from .assignment import Assignment, seeds_meet
from .codes import (
    MAX_CODE_CHARS,
    key_hash,
    key_matches,
    new_class_code,
    new_rejoin_code,
    new_salt,
    new_teacher_key,
    rejoin_digest,
)
from .database import engine_for
from .errors import ClassroomError, TooManyAttempts, UnknownClass, WrongKey, WrongRejoin
from .questions import QUESTIONS
from .records import IN_FLIGHT, Caller, ClassInfo, Prediction, RunState, Snapshot, Student, bounded
from .rows import (
    CLASS_COLUMNS,
    assignment_of,
    class_info_of,
    delete_classes,
    delete_students,
    run_state_of,
    seated,
    snapshot_of,
    student_of,
    upsert,
)
from .schema import (
    MAX_SERVER_CHARS,
    classes,
    migrate,
    name_key,
    predictions,
    removals,
    runs,
    students,
    task_digest,
)
from .typed_text import check_text

Clock = Callable[[], datetime]
ATTEMPTS = 5  # tries at a write that a concurrent one may collide with (a code, a slot, a join position)
CODE_DRAWS = 50  # class codes drawn for one whose seeds no other class's meet
KEEP = object()  # `set_assignment`'s question when it keeps the class's own


TAKEN = N_(
    "someone in this class already has this name; pick another, or, if it is you in another browser, ask your teacher "
    "for a rejoin code"
)
WRONG_REJOIN = N_("this is not the rejoin code for this name: ask your teacher for a new one")
WRONG_CODE_OR_KEY = N_("no class has this code, or this is not its teacher key")
NO_SUCH_NAME = N_("no student in this class has this name")
CLOSED_TO_JOINS = N_(
    "your teacher has closed this class to new students; if you belong in it, ask them to open it again"
)
NOT_SEATED = N_("you are not in this class any more: it has ended, or your teacher removed your name")


KEEPS_ITS_TASK = N_(
    "students of this class have already answered or trained on its task, and one class is one experiment: to teach "
    "another task, create a new class"
)
KEEPS_ITS_GROUPS = N_(
    "students of this class have already answered or trained in its groups, and one class is one experiment: to "
    "compare other groups, create a new class"
)


def _groups_of(assignment: Assignment | None) -> tuple[str | None, tuple[Value, ...]]:
    """What an assignment's groups differ in, and each group's value in join order (a student's position gives it)."""
    assignment = assignment or Assignment()
    return assignment.setting, tuple(group.value for group in assignment.groups)


def _task_of(assignment: Assignment | None) -> Value | None:
    """The task an assignment has the class train: None when students choose it (an open setting)."""
    assignment = assignment or Assignment()
    return None if "task" in assignment.open else assignment.settings(None)["task"]


def _code_of_its_own_seeds(codes: list[str]) -> str:
    """A new class code whose students' seeds meet none of the classes `codes` (`seeds_meet`), if one of CODE_DRAWS
    drawn has them; else the last drawn (a server nearly full of classes)."""
    for _ in range(CODE_DRAWS):
        code = new_class_code()
        if not any(seeds_meet(code, other) for other in codes):
            break
    return code


def _check_question(question: str | None, assignment: Assignment | None) -> None:
    """ClassroomError unless `question` is None or a key of QUESTIONS that fits `assignment`."""
    if question is None:
        return
    if not isinstance(question, str) or question not in QUESTIONS:
        raise ClassroomError(N_("not a built-in question"))
    if why := QUESTIONS[question].unfit(assignment):
        raise ClassroomError(Message(N_("this question does not fit the assignment: {why}"), why=why))


def _named(class_id: int, name: str) -> ColumnElement[bool]:
    """Where a students row is the one called `name` in the class `class_id`, names compared as `name_key` does."""
    return and_(students.c.class_id == class_id, students.c.name_key == name_key(str(name)))


def utc_now() -> datetime:
    """The current time, time-zone aware."""
    return datetime.now(UTC)


class ClassStore:
    """Classes kept in the database at `url` (`sqlite:///path`, whose folder is created, or
    `postgresql+psycopg://...`); `clock` gives the time, so tests can move it. `server` names the server whose
    store this is, the same across its restarts (its host and port): the runs it records carry the name, and opening
    the store marks the queued and training runs it held before as lost (None: a store that records no runs, or a
    test's).

    Methods a person's page calls take their `Caller`, whose attempts the rate limits count; None is the server's
    own code or a script, counted by none."""

    def __init__(self, url: str, clock: Clock = utc_now, server: str | None = None):
        self.engine = engine_for(url)
        self.clock = clock
        self.turns = throttle.Turns(MISS_SPACING_S)  # an address's misses past FREE_MISSES
        self._key_checks = threading.BoundedSemaphore(KEY_CHECKS_AT_ONCE)
        self.version = migrate(self.engine, self.now())
        self.server = None if server is None else server[:MAX_SERVER_CHARS]
        if self.server is not None:
            self.mark_lost(self.server)

    def now(self) -> datetime:
        """The clock's time as the database keeps it: naive UTC."""
        now = self.clock()
        return now.astimezone(UTC).replace(tzinfo=None) if now.tzinfo else now

    def _lost_before(self) -> datetime:
        """An in-flight run last heard of before this is lost."""
        return self.now() - timedelta(seconds=LOST_AFTER_S)

    def close(self) -> None:
        """Close the pooled connections."""
        self.engine.dispose()

    # ---- the teacher

    def create_class(
        self, title: str, retention_days: int = DEFAULT_RETENTION_DAYS, caller: Caller | None = None
    ) -> tuple[str, str]:
        """A new class: its code (for the students' link) and its teacher key (shown once, kept only as a hash).
        ClassroomError when the server already holds MAX_CLASSES classes; TooManyAttempts past CLASS_CREATIONS
        from `caller`'s browser, their address, or the whole server."""
        title = check_text(title, N_("a class's title"), MAX_TITLE_CHARS)
        low, high = RETENTION_DAYS
        if type(retention_days) is not int or not low <= retention_days <= high:
            raise ClassroomError(Message(N_("a class is kept for {low} to {high} days"), low=low, high=high))
        if caller is not None:
            self._creations(caller)
        key, salt, now = new_teacher_key(), new_salt(), self.now()
        values = dict(title=title, key_salt=salt, key_hash=key_hash(key, salt), created_at=now)
        values["expires_at"] = now + timedelta(days=retention_days)
        for _ in range(ATTEMPTS):
            try:
                with self.engine.begin() as conn:
                    used = set(conn.scalars(select(classes.c.slot)))
                    slot = next((s for s in range(MAX_CLASSES) if s not in used), None)
                    if slot is None:
                        full = N_("this server holds {most} classes, its most: delete a finished one first")
                        raise ClassroomError(Message(full, most=MAX_CLASSES))
                    code = _code_of_its_own_seeds(list(conn.scalars(select(classes.c.code))))
                    conn.execute(insert(classes).values(code=code, slot=slot, **values))
                return code, key
            except IntegrityError:  # the code, or the slot, was taken meanwhile
                continue
        raise ClassroomError(N_("the server is busy: try again"))

    def _creations(self, caller: Caller) -> None:
        """Count a class creation by `caller`; TooManyAttempts, uncounted, past any of CLASS_CREATIONS."""
        with self.engine.begin() as conn:
            refusal = throttle.creation_refused(conn, caller, self.now())
        if refusal is not None:
            raise TooManyAttempts(refusal)

    def open_board(self, code: str, key: str, caller: Caller | None = None) -> Snapshot:
        """The whole class, names included, for its teacher."""
        row = self._teacher(code, key, caller)
        with self.engine.begin() as conn:
            return snapshot_of(conn, row, names=True, lost_before=self._lost_before())

    def set_assignment(
        self, code: str, key: str, assignment: Assignment | None, caller: Caller | None = None, question: Any = KEEP
    ) -> None:
        """Set (or clear) the class's assignment, and with it the question when `question` is given (a key of
        QUESTIONS, or None for none; KEEP keeps the class's). ClassroomError if the question does not fit the
        assignment, or if the assignment trains another task or other groups once students have answered or trained
        (`_keep`)."""
        row = self._teacher(code, key, caller)
        if _task_of(assignment) != _task_of(assignment_of(row)):
            self._keep(row, KEEPS_ITS_TASK)
        if _groups_of(assignment) != _groups_of(assignment_of(row)):  # the runs trained would carry other groups
            self._keep(row, KEEPS_ITS_GROUPS)
        if question is KEEP:
            if row.question and (why := QUESTIONS[row.question].unfit(assignment)):
                no_longer = N_("the class's question no longer fits: {why}; change the question first")
                raise ClassroomError(Message(no_longer, why=why))
            question = row.question
        else:
            _check_question(question, assignment)
        data = None if assignment is None else assignment.to_json()
        with self.engine.begin() as conn:
            conn.execute(update(classes).where(classes.c.id == row.id).values(assignment=data, question=question))

    def set_question(self, code: str, key: str, question: str | None, caller: Caller | None = None) -> None:
        """Set (or clear) the class's question, a key of QUESTIONS that fits its assignment."""
        row = self._teacher(code, key, caller)
        _check_question(question, None if row.assignment is None else assignment_of(row))
        with self.engine.begin() as conn:
            conn.execute(update(classes).where(classes.c.id == row.id).values(question=question))

    def set_task(self, code: str, key: str, task: TaskPairs | None, caller: Caller | None = None) -> None:
        """Set (or clear) the class's own task from examples, which its students' runs then learn (a link cannot
        carry a file: the class keeps it). A TaskPairs was checked within its bounds when it was made."""
        if task is not None and not isinstance(task, TaskPairs):
            raise ClassroomError(N_("a class's task is a task from examples"))
        row = self._teacher(code, key, caller)
        data = None if task is None else task.to_dict()
        digest = None if data is None else task_digest(data)
        if digest != row.task_hash:
            self._keep(row, KEEPS_ITS_TASK)
        with self.engine.begin() as conn:
            conn.execute(update(classes).where(classes.c.id == row.id).values(task=data, task_hash=digest))

    def _keep(self, row: Row, why: str) -> None:
        """ClassroomError(`why`) once a student of the class has answered its question or started a run: their runs
        and answers are about its task and its groups, and one class is one experiment."""
        with self.engine.connect() as conn:
            ids = select(students.c.id).where(students.c.class_id == row.id)
            trained = or_(runs.c.step > 0, runs.c.status.in_(IN_FLIGHT))  # records.started
            started = select(runs.c.student_id).where(runs.c.student_id.in_(ids), trained)
            answered = select(predictions.c.student_id).where(predictions.c.student_id.in_(ids))
            if conn.execute(started.limit(1)).first() or conn.execute(answered.limit(1)).first():
                raise ClassroomError(why)

    def set_joining(self, code: str, key: str, open_: bool, caller: Caller | None = None) -> None:
        """Open the class to new students, or close it: once closed, only a browser that joined comes back, and a
        student their teacher let rejoin (`let_rejoin`) takes their name to another; a name typed to take a free
        seat is refused (`join`)."""
        row = self._teacher(code, key, caller)
        closed = None if open_ else (row.joins_closed_at or self.now())
        with self.engine.begin() as conn:
            conn.execute(update(classes).where(classes.c.id == row.id).values(joins_closed_at=closed))

    def delete_class(self, code: str, key: str, caller: Caller | None = None) -> None:
        """Delete the class and everything it recorded, now."""
        row = self._teacher(code, key, caller)
        with self.engine.begin() as conn:
            delete_classes(conn, [row.id])

    def purge_expired(self) -> int:
        """Delete every class past its retention, with all it recorded, and the attempts past every rate limit's
        window; returns how many classes."""
        longest = max(window for _, window in (*CLASS_CREATIONS.values(), WRONG_KEYS_PER_BROWSER, FREE_MISSES))
        with self.engine.begin() as conn:
            ids = list(conn.scalars(select(classes.c.id).where(classes.c.expires_at <= self.now())))
            delete_classes(conn, ids)
            throttle.forget_before(conn, self.now() - timedelta(seconds=longest))
        return len(ids)

    # ---- the students

    def class_info(self, code: str, caller: Caller | None = None) -> ClassInfo:
        """The class as its students see it; UnknownClass if there is none with this code, a miss of `caller`'s
        (a class link: see `_miss`)."""
        try:
            with self.engine.begin() as conn:
                return class_info_of(conn, self._class(conn, code))
        except UnknownClass:
            self._miss(caller)
            raise

    def snapshot(self, code: str, names: bool = False) -> Snapshot:
        """The whole class: without its students' names, what a student may see of the others; with them, what a
        board whose teacher key was checked (`open_board`) shows on each redraw, without checking it again."""
        with self.engine.begin() as conn:
            return snapshot_of(conn, self._class(conn, code), names=names, lost_before=self._lost_before())

    def student(self, code: str, browser: str) -> Student | None:
        """The student this browser joined the class as, if any."""
        with self.engine.begin() as conn:
            row = self._class(conn, code)
            found = conn.execute(
                select(students).where(students.c.class_id == row.id, students.c.browser == browser)
            ).first()
            return None if found is None else student_of(found, assignment_of(row), row.code)

    def left(self, code: str, browser: str) -> bool:
        """Whether a student of the class took their name from this browser to another, with a rejoin code (`join`):
        for a browser that has no seat in the class (`student`), why."""
        with self.engine.begin() as conn:
            row = self._class(conn, code)
            found = select(students.c.id).where(students.c.class_id == row.id, students.c.left_browser == browser)
            return conn.scalar(found) is not None

    def removed(self, code: str, browser: str) -> bool:
        """Whether the teacher removed the student who joined the class from this browser (`remove_student`): for a
        browser that has no seat in the class (`student`), why."""
        with self.engine.begin() as conn:
            row = self._class(conn, code)
            found = select(removals.c.browser).where(removals.c.class_id == row.id, removals.c.browser == browser)
            return conn.scalar(found) is not None

    def standing(self, student: Student) -> tuple[Prediction | None, RunState | None]:
        """The student's prediction and their recorded run, lost when no server has heard of it lately (None for
        either they have not got)."""
        with self.engine.begin() as conn:
            found = conn.execute(select(predictions).where(predictions.c.student_id == student.id)).first()
            run = conn.execute(select(runs).where(runs.c.student_id == student.id)).first()
        prediction = None if found is None else Prediction(found.question, found.choice)
        return prediction, None if run is None else run_state_of(run, self._lost_before())

    def let_rejoin(self, code: str, key: str, name: str, caller: Caller | None = None) -> str:
        """Let the student called `name` join again from another browser, as themselves, with the rejoin code this
        returns (`join`): once they do, the browser they joined from leaves the class; what they recorded stays
        theirs, and a later call's code replaces this one. ClassroomError if no student has the name."""
        row = self._teacher(code, key, caller)
        rejoin = new_rejoin_code()
        with self.engine.begin() as conn:
            student = conn.scalar(select(students.c.id).where(_named(row.id, name)))
            if student is None:
                raise ClassroomError(NO_SUCH_NAME)
            conn.execute(update(students).where(students.c.id == student).values(rejoin=rejoin_digest(student, rejoin)))
        return rejoin

    def remove_student(self, code: str, key: str, name: str, caller: Caller | None = None) -> None:
        """Remove the student called `name` from the class, with their prediction, run and report: their place goes
        to the next student to join, and their browser may join again. ClassroomError if no student has the name."""
        row = self._teacher(code, key, caller)
        with self.engine.begin() as conn:
            student = conn.execute(select(students.c.id, students.c.browser).where(_named(row.id, name))).first()
            if student is None:
                raise ClassroomError(NO_SUCH_NAME)
            delete_students(conn, students.c.id == student.id)
            gone = removals.c.class_id == row.id, removals.c.browser == student.browser
            if conn.scalar(select(removals.c.browser).where(*gone)) is None:
                conn.execute(insert(removals).values(class_id=row.id, browser=student.browser))

    def rejoin_waiting(self, code: str, name: str) -> bool:
        """Whether the student called `name` holds a rejoin code (`let_rejoin`) they have not used yet."""
        with self.engine.begin() as conn:
            row = self._class(conn, code)
            return conn.scalar(select(students.c.rejoin).where(_named(row.id, name))) is not None

    def join(self, code: str, browser: str, name: str, rejoin: str = "") -> Student:
        """Join the class as `name` (literal text in Unicode's composed form, unique in the class as `name_key`
        compares names) from `browser`; the same browser again gets the student it joined as, under their first
        name, and a student their teacher let rejoin gets their place back under their name with the `rejoin` code
        the teacher was given (`let_rejoin`). ClassroomError if the name is taken or the class holds MAX_STUDENTS;
        WrongRejoin for a wrong rejoin code, TooManyAttempts, unchecked, past WRONG_KEYS_PER_BROWSER of them."""
        name = check_text(name, N_("a name"), MAX_NAME_CHARS)
        if len(name_key(name)) > MAX_NAME_KEY_CHARS:  # NFKC spells out ligatures: "ﷺ" is 18 letters
            long = N_("a name must be at most {most} characters once its ligatures are spelled out; it has {n}")
            raise ClassroomError(Message(long, most=MAX_NAME_KEY_CHARS, n=len(name_key(name))))
        browser = check_text(browser, N_("a browser id"), MAX_BROWSER_CHARS)
        rejoin = check_text(rejoin, N_("a rejoin code"), MAX_REJOIN_CHARS) if rejoin else ""
        guesser = throttle.subject("browser", browser)
        if rejoin:
            with self.engine.begin() as conn:
                if throttle.over(conn, "wrong rejoin", guesser, WRONG_KEYS_PER_BROWSER, self.now()):
                    raise TooManyAttempts(N_("too many wrong rejoin codes from this browser: wait a few minutes"))
        # A collision on the position means another student took it: at most MAX_STUDENTS can before the class is
        # full, so a class joining at once never sees "busy" (ATTEMPTS more for a name or browser taken meanwhile).
        for _ in range(MAX_STUDENTS + ATTEMPTS):
            if found := self.student(code, browser):
                return found
            try:
                with self.engine.begin() as conn:
                    return self._add_student(conn, self._class(conn, code), browser, name, rejoin)
            except IntegrityError:  # another join took the position (or this name, or this browser) meanwhile
                continue
            except WrongRejoin:
                with self.engine.begin() as conn:
                    throttle.note(conn, "wrong rejoin", [guesser], self.now())
                raise
        raise ClassroomError(N_("the class is busy: try again"))

    def _add_student(self, conn: Connection, row: Row, browser: str, name: str, rejoin: str) -> Student:
        """Insert a student at the first free position of the class in `row`, or give their place back to the student of
        this name whose teacher gave them the `rejoin` code."""
        mine = students.c.class_id == row.id
        named = conn.execute(select(students).where(_named(row.id, name))).first()
        given = named is not None and rejoin and named.rejoin
        if given and hmac.compare_digest(named.rejoin, rejoin_digest(named.id, rejoin)):
            moved = {"browser": browser, "rejoin": None, "left_browser": named.browser}
            conn.execute(update(students).where(students.c.id == named.id).values(**moved))
            return student_of(named, assignment_of(row), row.code)
        if named is not None and rejoin:
            raise WrongRejoin(WRONG_REJOIN)
        if named is not None:
            raise ClassroomError(TAKEN)
        if row.joins_closed_at is not None:
            raise ClassroomError(CLOSED_TO_JOINS)
        taken = set(conn.scalars(select(students.c.position).where(mine)))
        position = next((p for p in range(MAX_STUDENTS) if p not in taken), None)  # a removed student's, first
        if position is None:
            raise ClassroomError(Message(N_("this class is full: it holds {most} students"), most=MAX_STUDENTS))
        values = dict(class_id=row.id, browser=browser, name=name, name_key=name_key(name), position=position)
        new = conn.execute(insert(students).values(**values, joined_at=self.now()).returning(students)).one()
        return student_of(new, assignment_of(row), row.code)

    def answer(self, student: Student, choice: str) -> None:
        """Record the student's prediction for the class's question; only before their run starts."""
        with self.engine.begin() as conn:
            joined = classes.join(students, students.c.class_id == classes.c.id)
            found = conn.execute(select(classes.c.question).select_from(joined).where(seated(student))).first()
            if found is None:
                raise UnknownClass(NOT_SEATED)
            question = found.question
            if question is None:
                raise ClassroomError(N_("this class has no question to answer"))
            if choice not in QUESTIONS[question].choices:
                raise ClassroomError(N_("not one of the question's choices"))
            if conn.scalar(select(runs.c.status).where(runs.c.student_id == student.id)) not in (None, "not started"):
                raise ClassroomError(N_("predictions are made before the run starts"))
            values = dict(question=question, choice=choice, answered_at=self.now())
            upsert(conn, predictions, dict(student_id=student.id, **values))

    def record_run(self, student: Student, state: RunState) -> None:
        """Keep the state of the student's run, replacing the last one (rows thinned to MAX_RUN_ROWS), as reported
        now by this server; UnknownClass once the student's class has been deleted or purged."""
        state = bounded(state)
        now = self.now()
        values = dict(
            student_id=student.id,
            status=state.status,
            step=state.step,
            queue_place=state.queue_place,
            rows=list(state.rows),
            result=state.result,
            error=state.error,
            updated_at=now,
            heard_at=now,
            server=self.server,
        )
        gone = UnknownClass(NOT_SEATED)
        try:
            with self.engine.begin() as conn:
                if conn.scalar(select(students.c.id).where(seated(student))) is None:  # removed, or its class
                    raise gone
                upsert(conn, runs, values)
        except IntegrityError as err:  # the class was deleted between the check and the write
            raise gone from err

    def heard(self, followed: Iterable[Student]) -> list[Student]:
        """Note that this server still holds the runs of these students, whose states have not changed; returns those
        of them no longer in their class (removed by their teacher, or the class deleted)."""
        followed = list(followed)
        if not followed:
            return []
        ids = [student.id for student in followed]
        with self.engine.begin() as conn:
            mine = runs.c.student_id.in_(ids), runs.c.status.in_(IN_FLIGHT)
            conn.execute(update(runs).where(*mine).values(heard_at=self.now(), server=self.server))
            found = conn.execute(select(students.c.id, students.c.joined_at).where(students.c.id.in_(ids)))
            seated_now = {tuple(row) for row in found}
        return [student for student in followed if (student.id, student.joined_at) not in seated_now]

    def mark_lost(self, server: str) -> int:
        """Mark the queued and training runs `server` held as lost (it has just started, so it holds none of them
        now); returns how many."""
        with self.engine.begin() as conn:
            mine = runs.c.server == server, runs.c.status.in_(IN_FLIGHT)
            return conn.execute(update(runs).where(*mine).values(status="lost", updated_at=self.now())).rowcount

    # ---- lookups

    def _class(self, conn: Connection, code: str) -> Row:
        """The class with `code` that has not expired, else UnknownClass."""
        row = None
        if isinstance(code, str) and len(code) <= MAX_CODE_CHARS:
            row = conn.execute(select(*CLASS_COLUMNS).where(classes.c.code == code)).first()
        if row is None or row.expires_at <= self.now():
            raise UnknownClass(N_("there is no class with this code: it may have ended"))
        return row

    def _miss(self, caller: Caller | None) -> None:
        """Count an unknown code or a wrong key as a miss of `caller`'s address; past FREE_MISSES, return only at
        the address's next turn, so one address gets one such answer per MISS_SPACING_S (the right code and key
        never wait)."""
        if caller is None:
            return
        address = throttle.subject("address", caller.address)  # an unknown address is one: misses only slow misses
        with self.engine.begin() as conn:
            busy = throttle.over(conn, "miss", address, FREE_MISSES, self.now())
            throttle.note(conn, "miss", [address], self.now())
        if busy:
            self.turns.wait(address)

    def _teacher(self, code: str, key: str, caller: Caller | None) -> Row:
        """The class if `key` is its teacher key, else WrongKey (for an unknown code too), counted as a miss of
        `caller`'s (`_miss`) and a wrong key of their browser's; TooManyAttempts, unchecked, past
        WRONG_KEYS_PER_BROWSER. Checks run KEY_CHECKS_AT_ONCE at a time, so a burst costs bounded memory and a
        browser's burst is counted as it is checked."""
        browser = None if caller is None else throttle.subject("browser", caller.browser)
        with self._key_checks, self.engine.begin() as conn:
            if browser and throttle.over(conn, "wrong key", browser, WRONG_KEYS_PER_BROWSER, self.now()):
                raise TooManyAttempts(N_("too many wrong teacher keys from this browser: wait a few minutes"))
            try:
                row = self._class(conn, code)
            except UnknownClass:
                row = None
            if row is not None and isinstance(key, str) and len(key) <= 100:
                if key_matches(key, row.key_salt, row.key_hash):
                    return row
            if browser:
                throttle.note(conn, "wrong key", [browser], self.now())
        self._miss(caller)
        raise WrongKey(WRONG_CODE_OR_KEY)
