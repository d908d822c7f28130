"""The class database's tables (SQLAlchemy Core) and their versions.

`schema_version` holds one row per migration applied. A new database gets the tables below whole and every version
recorded; an older one runs, in order and once each, the migrations past its last version. A change to the tables
below comes with a migration appended to MIGRATIONS that brings an older database to the same tables. Alembic would
do this too, at the price of a dependency and its script layout for six tables; this is 20 lines.

Times are naive UTC datetimes, the same on SQLite (which has no time zones) and PostgreSQL.
"""

from collections.abc import Callable
from datetime import datetime

from sqlalchemy import (
    JSON,
    Column,
    Connection,
    DateTime,
    Engine,
    ForeignKey,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    UniqueConstraint,
    func,
    insert,
    inspect,
    select,
)

from ..limits import MAX_BROWSER_CHARS, MAX_ERROR_CHARS, MAX_NAME_CHARS, MAX_TITLE_CHARS
from .codes import MAX_CODE_CHARS

MAX_KEY_CHARS = 40  # a question's key, a choice's text, a status

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
)

students = Table(
    "students",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("class_id", ForeignKey("classes.id"), nullable=False),
    Column("browser", String(MAX_BROWSER_CHARS), nullable=False),
    Column("name", String(MAX_NAME_CHARS), nullable=False),
    Column("name_key", String(3 * MAX_NAME_CHARS), nullable=False),  # casefolded: names are unique regardless of case
    Column("position", Integer, nullable=False),  # join order from 0, below MAX_STUDENTS: gives group and seed
    Column("joined_at", DateTime, nullable=False),
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
    Column("updated_at", DateTime, nullable=False),
)

predictions = Table(
    "predictions",
    metadata,
    Column("student_id", ForeignKey("students.id"), primary_key=True),
    Column("question", String(MAX_KEY_CHARS), nullable=False),
    Column("choice", String(MAX_KEY_CHARS), nullable=False),
    Column("answered_at", DateTime, nullable=False),
)

key_failures = Table(  # wrong teacher keys, kept for KEY_FAILURE_WINDOW_S: the rate limit holds across replicas
    "key_failures",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("class_id", ForeignKey("classes.id"), nullable=False, index=True),
    Column("at", DateTime, nullable=False),
)

Migration = Callable[[Connection], None]
# Version n is MIGRATIONS[n - 1]. Version 1 is the tables above as first released.
MIGRATIONS: list[Migration] = [lambda conn: metadata.create_all(conn)]
_LOCK_ID = 7_351_000  # PostgreSQL advisory lock held while migrating, so replicas starting together take turns


def migrate(engine: Engine, now: datetime) -> int:
    """Bring the database to the latest version, in one transaction; returns that version."""
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(select(func.pg_advisory_xact_lock(_LOCK_ID)))
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
