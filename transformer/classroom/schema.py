"""The class database's tables (SQLAlchemy Core) and their versions.

`schema_version` holds one row per migration applied. A new database gets the tables below whole and every version
recorded; an older one runs, in order and once each, the migrations past its last version. A change to the tables
below comes with a migration appended to MIGRATIONS that brings an older database to the same tables. Alembic would
do this too, at the price of a dependency and its script layout for six tables; this is a few dozen lines.

Replicas that start together take turns: `migrate` holds a lock for its whole transaction, PostgreSQL's advisory
lock or SQLite's write lock (`BEGIN IMMEDIATE`), so the second finds the tables the first made.

Times are naive UTC datetimes, the same on SQLite (which has no time zones) and PostgreSQL.
"""

import hashlib
import json
import re
import unicodedata
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Column,
    Connection,
    DateTime,
    Engine,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    func,
    insert,
    inspect,
    select,
    update,
)
from sqlalchemy.schema import CreateColumn

from ..limits import MAX_BROWSER_CHARS, MAX_ERROR_CHARS, MAX_NAME_CHARS, MAX_NAME_KEY_CHARS, MAX_TITLE_CHARS
from .codes import MAX_CODE_CHARS

MAX_KEY_CHARS = 40  # a question's key, a choice's text, a status
MAX_SERVER_CHARS = 100  # a server's name

metadata = MetaData()

schema_version = Table(
    "schema_version",
    metadata,
    Column("version", Integer, primary_key=True),
    Column("applied_at", DateTime, nullable=False),
)

classes = Table(
    "classes",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("code", String(MAX_CODE_CHARS), nullable=False, unique=True),
    Column("slot", Integer, nullable=False, unique=True),  # 0..MAX_CLASSES-1: bounds the classes held
    Column("title", String(MAX_TITLE_CHARS), nullable=False),
    Column("key_salt", LargeBinary(16), nullable=False),
    Column("key_hash", LargeBinary(64), nullable=False),
    Column("created_at", DateTime, nullable=False),
    Column("expires_at", DateTime, nullable=False, index=True),
    Column("assignment", JSON),  # Assignment.to_json()
    Column("question", String(MAX_KEY_CHARS)),
    Column("task", JSON),  # its own task from examples, TaskPairs.to_dict(): MAX_TASK_FILE_BYTES of text at most
    Column("task_hash", String(64)),  # `task_digest` of its task: a read of the class finds the task parsed by it
    Column("joins_closed_at", DateTime),  # when its teacher closed it to new students (`ClassStore.set_joining`)
)

students = Table(
    "students",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("class_id", ForeignKey("classes.id"), nullable=False),
    Column("browser", String(MAX_BROWSER_CHARS), nullable=False),
    Column("name", String(MAX_NAME_CHARS), nullable=False),
    Column("name_key", String(MAX_NAME_KEY_CHARS), nullable=False),  # `name_key`: names unique as people read them
    Column("position", Integer, nullable=False),  # join order from 0, below MAX_STUDENTS: gives group and seed
    Column("joined_at", DateTime, nullable=False),
    Column("rejoin", String(64)),  # the digest of the rejoin code their teacher gave them (`codes.rejoin_digest`)
    Column("left_browser", String(MAX_BROWSER_CHARS)),  # the browser they last rejoined from: its page says so
    UniqueConstraint("class_id", "browser"),
    UniqueConstraint("class_id", "name_key"),
    UniqueConstraint("class_id", "position"),
)

runs = Table(
    "runs",
    metadata,
    Column("student_id", ForeignKey("students.id"), primary_key=True),
    Column("status", String(MAX_KEY_CHARS), nullable=False),
    Column("step", Integer, nullable=False),
    Column("queue_place", Integer),
    Column("rows", JSON, nullable=False),  # metric rows, at most MAX_RUN_ROWS
    Column("result", JSON),
    Column("error", String(MAX_ERROR_CHARS)),
    Column("updated_at", DateTime, nullable=False),  # when its state last changed
    Column("heard_at", DateTime),  # when a server last reported on it: an in-flight run unheard of is lost
    Column("server", String(MAX_SERVER_CHARS)),  # the server that holds it (`ClassRecorder`'s name)
)

predictions = Table(
    "predictions",
    metadata,
    Column("student_id", ForeignKey("students.id"), primary_key=True),
    Column("question", String(MAX_KEY_CHARS), nullable=False),
    Column("choice", String(MAX_KEY_CHARS), nullable=False),
    Column("answered_at", DateTime, nullable=False),
)

reports = Table(  # each student's latest lab report (`classroom.reports`), deleted with the student
    "reports",
    metadata,
    Column("student_id", ForeignKey("students.id", ondelete="CASCADE"), primary_key=True),
    Column("report", Text, nullable=False),  # report_data.to_json of their latest ended run: MAX_REPORT_CHARS at most
    Column("lengths", Text),  # the length test run on that run's model: JSON score rows, at most MAX_SEQ_LEN
    Column("updated_at", DateTime, nullable=False),
)

removals = Table(  # the browsers whose student their teacher removed (`ClassStore.remove_student`): their page says so
    "removals",
    metadata,
    Column("class_id", ForeignKey("classes.id", ondelete="CASCADE"), primary_key=True),
    Column("browser", String(MAX_BROWSER_CHARS), primary_key=True),
)

attempts = Table(  # what the rate limits count (`throttle`), kept for their window: they hold across replicas
    "attempts",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("kind", String(MAX_KEY_CHARS), nullable=False),  # "create", "miss" or "wrong key"
    Column("subject", String(64), nullable=False),  # who: a hash of an address, a browser, or "server"
    Column("at", DateTime, nullable=False),
    Index("attempts_by_subject", "kind", "subject", "at"),
)


Migration = Callable[[Connection], None]


# Unicode's default-ignorable code points (DerivedCoreProperties.txt, Unicode 15.1): drawn as nothing where they may
# stand in a name (joiners, variation selectors, the combining grapheme joiner), so "Alice" with one is "Alice".
_IGNORABLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164"
    "\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)


def name_key(name: str) -> str:
    """What two names must not share in one class: the name after NFKC and casefolding (Unicode's NFKC_Casefold, as
    for identifiers), without the characters that draw as nothing (`_IGNORABLE`) and with each run of spaces one
    space: "Zoë" composed or decomposed, "Ａｌｉｃｅ", "ALICE", "Alice" with a joiner and "Al  ice" with two spaces
    are "zoë"'s, "alice"'s and "al ice"'s."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())
    return " ".join(_IGNORABLE.sub("", folded).split())


def task_digest(task: Mapping[str, Any]) -> str:
    """The SHA-256 of a class's task (`TaskPairs.to_dict()`) as canonical JSON: the same task, the same digest."""
    text = json.dumps(task, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _add_column(conn: Connection, table: Table, name: str) -> None:
    """ALTER TABLE ... ADD COLUMN for the column `name` as `table` declares it, unless the table has it already (a
    migration run again over a database that was taken back to an older version keeps it)."""
    if name in {column["name"] for column in inspect(conn).get_columns(table.name)}:
        return
    column = CreateColumn(table.c[name]).compile(dialect=conn.dialect)
    conn.exec_driver_sql(f"ALTER TABLE {table.name} ADD COLUMN {column}")


def _version_2(conn: Connection) -> None:
    """Runs carry when and by which server they were last heard of; attempts replace key_failures; names compare
    after NFKC (a name that would now collide with another keeps its old key)."""
    _add_column(conn, runs, "heard_at")
    _add_column(conn, runs, "server")
    conn.execute(update(runs).values(heard_at=runs.c.updated_at))
    attempts.create(conn, checkfirst=True)
    conn.exec_driver_sql("DROP TABLE IF EXISTS key_failures")
    _name_keys(conn)


def _name_keys(conn: Connection) -> None:
    """Every student's name_key as `name_key` makes it now; a name that would then collide with another keeps its
    old key."""
    for student in conn.execute(select(students.c.id, students.c.class_id, students.c.name)).all():
        taken = select(students.c.id).where(
            students.c.class_id == student.class_id, students.c.name_key == name_key(student.name)
        )
        if conn.scalar(taken) is None:
            conn.execute(update(students).where(students.c.id == student.id).values(name_key=name_key(student.name)))


def _reports_table(conn: Connection) -> None:
    """Students' lab reports are kept."""
    reports.create(conn, checkfirst=True)


def _class_task(conn: Connection) -> None:
    """A class may keep a task of its own, from examples."""
    _add_column(conn, classes, "task")


def _task_hash(conn: Connection) -> None:
    """A class's task has its digest beside it."""
    _add_column(conn, classes, "task_hash")
    for row in conn.execute(select(classes.c.id, classes.c.task)).all():
        if row.task is not None:  # a cleared task may be kept as JSON null
            conn.execute(update(classes).where(classes.c.id == row.id).values(task_hash=task_digest(row.task)))


def _rejoin_code(conn: Connection) -> None:
    """A student may hold a rejoin code, to take their name to another browser."""
    _add_column(conn, students, "rejoin")


def _left_browser(conn: Connection) -> None:
    """A student who rejoined from another browser keeps which one they left, so that its page says why."""
    _add_column(conn, students, "left_browser")


def _removals_table(conn: Connection) -> None:
    """A class keeps the browsers whose student their teacher removed, so that their pages say why."""
    removals.create(conn, checkfirst=True)


def _joins_closed(conn: Connection) -> None:
    """A teacher may close a class to new students."""
    _add_column(conn, classes, "joins_closed_at")


# Version n is MIGRATIONS[n - 1]. Version 1 is the tables as first released.
MIGRATIONS: list[Migration] = [
    lambda conn: metadata.create_all(conn),
    _version_2,
    _reports_table,
    _class_task,
    _task_hash,
    _rejoin_code,
    _left_browser,
    _name_keys,  # names compare without the characters that draw as nothing, and with one space for many
    _removals_table,
    _joins_closed,
]
_LOCK_ID = 7_351_000  # PostgreSQL advisory lock held while migrating, so replicas starting together take turns


def migrate(engine: Engine, now: datetime) -> int:
    """Bring the database to the latest version, in one transaction under a lock; returns that version."""
    with _locked(engine) as conn:
        fresh = not inspect(conn).has_table(schema_version.name)
        if fresh:
            metadata.create_all(conn)
        done = set(conn.scalars(select(schema_version.c.version)))
        for version, migration in enumerate(MIGRATIONS, start=1):
            if version not in done:
                if not fresh:
                    migration(conn)
                conn.execute(insert(schema_version).values(version=version, applied_at=now))
    return len(MIGRATIONS)


@contextmanager
def _locked(engine: Engine) -> Iterator[Connection]:
    """A transaction that holds the database's migration lock until it ends (see the module docstring)."""
    if engine.dialect.name != "sqlite":
        with engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                conn.execute(select(func.pg_advisory_xact_lock(_LOCK_ID)))
            yield conn
        return
    # pysqlite begins transactions itself, and only before writes: take the write lock by hand from the start
    with engine.connect() as conn:
        conn = conn.execution_options(isolation_level="AUTOCOMMIT")
        conn.exec_driver_sql("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.exec_driver_sql("ROLLBACK")
            raise
        conn.exec_driver_sql("COMMIT")
