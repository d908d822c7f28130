"""How often one person may act on the classes: attempts counted in the class database, and turns that space out the
checks a burst of attempts would make.

A count is kept per kind of attempt and per subject (a network address, a browser, or the whole server), as a hash,
so the database holds no address. It is read within its window (`transformer.limits`): past a bound the store either
refuses the attempt unchecked (a browser's wrong keys, class creations) or makes it wait its turn (`Turns`): a
person trying many class codes or keys from one address gets one answer a second, while a teacher's right code and
key are never refused because someone else tried wrong ones.
"""

import hashlib
import threading
import time
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta

from sqlalchemy import Connection, delete, func, insert, select

from ..i18n import N_, Message
from ..limits import CLASS_CREATIONS
from .records import Caller
from .schema import attempts

MAX_TURNS_KEPT = 10_000  # subjects whose next turn one server remembers; older turns are forgotten first


def subject(kind: str, value: str | None) -> str:
    """The key an attempt is counted under: a hash of what identifies who made it (`kind`: "address", "browser"
    or "server")."""
    return hashlib.sha256(f"{kind}:{value}".encode()).hexdigest()[:32]


def count(conn: Connection, kind: str, who: str, since: datetime) -> int:
    """How many attempts of `kind` were made by `who` (a `subject`) after `since`."""
    mine = attempts.c.kind == kind, attempts.c.subject == who, attempts.c.at > since
    return conn.scalar(select(func.count()).select_from(attempts).where(*mine))


def note(conn: Connection, kind: str, subjects: Iterable[str], at: datetime) -> None:
    """Count one attempt of `kind` for each of `subjects`."""
    conn.execute(insert(attempts), [dict(kind=kind, subject=who, at=at) for who in subjects])


def over(conn: Connection, kind: str, who: str, bound: tuple[int, int], now: datetime) -> bool:
    """Whether `who` has made `bound[0]` or more attempts of `kind` in the last `bound[1]` seconds."""
    most, window_s = bound
    return count(conn, kind, who, now - timedelta(seconds=window_s)) >= most


def forget_before(conn: Connection, when: datetime) -> int:
    """Delete the attempts made before `when` (past every window); returns how many."""
    return conn.execute(delete(attempts).where(attempts.c.at < when)).rowcount


class Turns:
    """Turns `spacing_s` apart for each subject, in one server: `wait` returns at the subject's next turn, so a
    burst from one subject is served one turn at a time and nobody else waits for it."""

    def __init__(
        self,
        spacing_s: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.spacing_s, self.clock, self.sleep = spacing_s, clock, sleep
        self._next: dict[str, float] = {}
        self._lock = threading.Lock()

    def wait(self, who: str) -> float:
        """Wait for `who`'s next turn; returns how long it waited."""
        with self._lock:
            now = self.clock()
            turn = max(now, self._next.get(who, now))
            self._next[who] = turn + self.spacing_s
            if len(self._next) > MAX_TURNS_KEPT:
                self._next = {s: t for s, t in self._next.items() if t > now} or {who: turn + self.spacing_s}
        if turn > now:
            self.sleep(turn - now)
        return turn - now


TOO_MANY_CREATIONS = {  # CLASS_CREATIONS' kind -> the refusal past its bound
    "browser": N_(
        "{most} classes were created from this browser in the last {minutes} minutes, the most this server takes: "
        "try again later"
    ),
    "address": N_(
        "{most} classes were created from your network in the last {minutes} minutes, the most this server takes: "
        "try again later"
    ),
    "server": N_(
        "{most} classes were created on this server in the last {minutes} minutes, the most this server takes: "
        "try again later"
    ),
}


def creation_refused(conn: Connection, caller: Caller, now: datetime) -> Message | None:
    """Count a class creation by `caller` (their browser, their address when known, and the server); or, uncounted,
    the refusal of the first of CLASS_CREATIONS it would pass."""
    who = {kind: subject(kind, getattr(caller, kind, None)) for kind in ("browser", "address", "server")}
    if caller.address is None:  # unknown: every such caller would count as one address
        del who["address"]
    for kind, key in who.items():
        if over(conn, "create", key, CLASS_CREATIONS[kind], now):
            most, window_s = CLASS_CREATIONS[kind]
            return Message(TOO_MANY_CREATIONS[kind], most=most, minutes=window_s // 60)
    note(conn, "create", who.values(), now)
    return None
