"""Where a teacher's classes are kept: the database's URL (`database_url`) and a pooled engine on it (`engine_for`),
SQLite in a file by default, PostgreSQL when the URL names it, the same code on both."""

import sqlite3
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url

from ..serving.settings import data_dir

SQLITE_BUSY_S = 30  # how long an SQLite connection waits for another's write lock (replicas migrating at once)
WAL_RETRY_S = 0.01  # how long a connection waits before it asks again for WAL mode, which SQLite does not wait for


def database_url(env: Mapping[str, str], secrets: Mapping[str, Any] | None = None) -> str:
    """Where classes are kept: `LAB_DATABASE_URL`, else the secrets' `[connections.classes] url`, else SQLite in
    `classes.sqlite3` under `LAB_DATA_DIR` (default `./data`)."""
    if env.get("LAB_DATABASE_URL"):
        return env["LAB_DATABASE_URL"]
    if url := ((secrets or {}).get("connections") or {}).get("classes", {}).get("url"):
        return url
    return f"sqlite:///{data_dir(env) / 'classes.sqlite3'}"


def engine_for(url: str) -> Engine:
    """A pooled engine on the database at `url` (`sqlite:///path`, whose folder is created, or
    `postgresql+psycopg://...`)."""
    parsed = make_url(url)
    options = {}
    if parsed.get_backend_name() == "sqlite":
        if parsed.database not in (None, "", ":memory:"):
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        options["connect_args"] = {"timeout": SQLITE_BUSY_S}
    engine = create_engine(parsed, pool_pre_ping=True, **options)
    if parsed.get_backend_name() == "sqlite":
        event.listen(engine, "connect", _sqlite_settings)
    return engine


def _sqlite_settings(dbapi_connection: Any, _record: Any) -> None:
    """SQLite enforces foreign keys, and lets the board read while a student's run is written (WAL)."""
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    _into_wal(cursor)
    cursor.close()


def _into_wal(cursor: sqlite3.Cursor) -> None:
    """Put the database in WAL mode, which its file keeps (once there, asking again changes nothing). The change
    needs the file to itself, and SQLite neither waits for it (its busy timeout does not cover this lock) nor always
    says it failed (it answers the mode it kept): servers opening a new database together ask again until the
    answer is WAL ("memory" for a database in memory), for at most SQLITE_BUSY_S."""
    deadline = time.monotonic() + SQLITE_BUSY_S
    while True:
        try:
            if cursor.execute("PRAGMA journal_mode=WAL").fetchone()[0] in ("wal", "memory"):
                return
        except sqlite3.OperationalError as err:
            if "locked" not in str(err) or time.monotonic() >= deadline:
                raise
        if time.monotonic() >= deadline:
            return  # the database works in its rollback journal, its writers waiting SQLITE_BUSY_S for each other
        time.sleep(WAL_RETRY_S)
