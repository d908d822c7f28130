"""The class database's rows as the records pages read (`records`), and the writes several of the store's methods
share. `ClassStore` (store.py) holds the transactions; this module, what one row means.

A class's own task (up to MAX_TASK_FILE_BYTES of pairs) is parsed once per process, not on every read of the class:
a read selects `CLASS_COLUMNS` (the task's digest, not the task) and finds the task parsed in `PARSED_TASKS`."""

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, Row, and_, delete, select
from sqlalchemy.dialects import postgresql, sqlite

from ..pairs import TaskPairs
from .assignment import Assignment, class_seed_offset
from .records import IN_FLIGHT, ClassInfo, Prediction, RunState, Snapshot, Student
from .schema import classes, predictions, removals, runs, students

TASKS_KEPT = 32  # the classes' own tasks a process keeps parsed, the most recently read (each at most 1 MB of pairs)
CLASS_COLUMNS = [column for column in classes.c if column.name != "task"]  # what a read of a class selects


class ParsedTasks:
    """The classes' own tasks as parsed, by `schema.task_digest`: the `most` recently read, shared by every store of
    the process, so that reading a class parses its task only the first time (and after its teacher changes it)."""

    def __init__(self, most: int):
        self.most = most
        self._tasks: OrderedDict[str, TaskPairs] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, digest: str, load: Callable[[], Mapping[str, Any]]) -> TaskPairs:
        """The task whose digest is `digest`: the one kept, else the one parsed from what `load()` reads, kept."""
        with self._lock:
            task = self._tasks.get(digest)
        if task is None:
            task = TaskPairs.from_dict(load())
        self.keep(digest, task)
        return task

    def keep(self, digest: str, task: TaskPairs) -> None:
        """Keep `task` under `digest` as the most recently read, forgetting the least recent past `most`."""
        with self._lock:
            self._tasks[digest] = task
            self._tasks.move_to_end(digest)
            while len(self._tasks) > self.most:
                self._tasks.popitem(last=False)


PARSED_TASKS = ParsedTasks(TASKS_KEPT)


def upsert(conn: Connection, table: Any, values: Mapping[str, Any]) -> None:
    """Insert the table's row of `values["student_id"]`, or replace it by `values`: one statement, so two writers
    at once leave one row."""
    dialect = {"sqlite": sqlite, "postgresql": postgresql}[conn.dialect.name]
    statement = dialect.insert(table).values(**values)
    conn.execute(statement.on_conflict_do_update(index_elements=[table.c.student_id], set_=dict(values)))


def delete_classes(conn: Connection, ids: list[int]) -> None:
    """Delete the classes with these ids and every row that belongs to them."""
    delete_students(conn, students.c.class_id.in_(ids))
    conn.execute(delete(removals).where(removals.c.class_id.in_(ids)))
    conn.execute(delete(classes).where(classes.c.id.in_(ids)))


def delete_students(conn: Connection, which: ColumnElement[bool]) -> None:
    """Delete the students `which` selects, with their predictions, runs and (by cascade) reports."""
    members = select(students.c.id).where(which)
    conn.execute(delete(predictions).where(predictions.c.student_id.in_(members)))
    conn.execute(delete(runs).where(runs.c.student_id.in_(members)))
    conn.execute(delete(students).where(which))


def assignment_of(row: Row) -> Assignment:
    """The class's assignment, or the empty one (the Train page's defaults, no groups)."""
    return Assignment() if row.assignment is None else Assignment.from_json(row.assignment)


def class_info_of(conn: Connection, row: Row) -> ClassInfo:
    """A class row of `CLASS_COLUMNS` as ClassInfo, its task read from `conn` only if it is not parsed yet."""
    assignment = None if row.assignment is None else assignment_of(row)
    task = None
    if row.task_hash is not None:
        stored = select(classes.c.task).where(classes.c.id == row.id)
        task = PARSED_TASKS.get(row.task_hash, lambda: conn.scalar(stored))
    closed = row.joins_closed_at is not None
    return ClassInfo(row.code, row.title, row.created_at, row.expires_at, assignment, row.question, task, closed)


def student_of(row: Row, assignment: Assignment, code: str, name: str | None = None) -> Student:
    """A student row of the class `code` as Student, with the group and seed `assignment` gives their position."""
    group = assignment.group(row.position)
    label = None if group is None else group.label
    seed = assignment.seed(row.position, class_seed_offset(code))
    return Student(row.id, row.name if name is None else name, row.position, label, seed, row.joined_at)


def seated(student: Student) -> ColumnElement[bool]:
    """Where the students table's row is `student`'s: their id, and no later student's given the same id."""
    return and_(students.c.id == student.id, students.c.joined_at == student.joined_at)


def run_state_of(run: Row, lost_before: datetime) -> RunState:
    """A run's row as RunState: "lost" if it is queued or training but no server has reported on it since
    `lost_before`."""
    lost = run.status in IN_FLIGHT and (run.heard_at or run.updated_at) < lost_before
    status = "lost" if lost else run.status
    return RunState(status, run.step, None if lost else run.queue_place, tuple(run.rows), run.result, run.error)


def snapshot_of(conn: Connection, row: Row, names: bool, lost_before: datetime) -> Snapshot:
    """The class in `row` with its students (names blank unless `names`), runs and predictions; runs unheard of
    since `lost_before` are lost."""
    assignment = assignment_of(row)
    members = conn.execute(select(students).where(students.c.class_id == row.id).order_by(students.c.position))
    roster = tuple(student_of(s, assignment, row.code, None if names else "") for s in members)
    ids = [s.id for s in roster]
    states = {
        r.student_id: run_state_of(r, lost_before) for r in conn.execute(select(runs).where(runs.c.student_id.in_(ids)))
    }
    answers = {
        p.student_id: Prediction(p.question, p.choice)
        for p in conn.execute(select(predictions).where(predictions.c.student_id.in_(ids)))
    }
    return Snapshot(class_info_of(conn, row), roster, states, answers)
