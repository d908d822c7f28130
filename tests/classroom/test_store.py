"""The class database: joining, bounds, teacher keys and rate limits, assignments, predictions, runs, restarts,
retention and the schema's versions. On SQLite in a temporary folder, and on PostgreSQL (`postgres_url`: the one
LAB_TEST_DATABASE_URL names, or Debian's cluster started by the tests)."""

import hashlib
import math
import re
import sqlite3
import threading
import time
import unicodedata
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest
from sqlalchemy import Column, DateTime, Index, MetaData, Table, create_engine, func, inspect, select
from sqlalchemy.engine import make_url

import transformer.classroom.database as database
import transformer.classroom.rows as rows
import transformer.classroom.schema as schema
import transformer.classroom.store as store_module
import transformer.classroom.throttle as throttle
from transformer.classroom import (
    Assignment,
    Caller,
    ClassroomError,
    ClassStore,
    Group,
    RunState,
    TooManyAttempts,
    WrongKey,
)
from transformer.classroom.assignment import OWN_SEEDS, class_seed_offset, split_groups
from transformer.classroom.codes import ADJECTIVES, ANIMALS, CODE_COUNT, key_hash
from transformer.classroom.database import database_url, engine_for
from transformer.classroom.store import UnknownClass
from transformer.classroom.throttle import Turns
from transformer.i18n import N_, translator
from transformer.limits import (
    CLASS_CREATIONS,
    FREE_MISSES,
    LOST_AFTER_S,
    MAX_NAME_CHARS,
    MAX_RUN_ROWS,
    MAX_STUDENTS,
    MISS_SPACING_S,
    WRONG_KEYS_PER_BROWSER,
)
from transformer.pairs import TaskPairs, pairs_from_rows

PE_GROUPS = Assignment(
    {"task": "reverse", "steps": 600},
    frozenset({"lr"}),
    "positional",
    (Group("PE", "sinusoidal"), Group("no PE", "none")),
)
SOLVED = {"steps": 300, "seconds": 3.0, "exact_match": 1.0, "token_acc": 1.0, "reason": "solved"}


class Clock:
    """A clock the test moves by hand."""

    def __init__(self):
        self.now = datetime(2026, 11, 25, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta) -> None:
        self.now += timedelta(**delta)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def url(request, tmp_path):
    """An empty database: a new SQLite file (in a folder that does not exist yet), or the tests' PostgreSQL
    database (`postgres_url`) with every table dropped."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'data' / 'classes.sqlite3'}"
    pg_url = request.getfixturevalue("postgres_url")
    engine = create_engine(pg_url)
    schema.metadata.drop_all(engine)
    with engine.begin() as conn:
        conn.exec_driver_sql("DROP TABLE IF EXISTS key_failures")
    engine.dispose()
    return pg_url


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def store(url, clock):
    opened = ClassStore(url, clock)
    yield opened
    opened.close()


def row_counts(store: ClassStore) -> dict[str, int]:
    """Rows of every table but schema_version."""
    with store.engine.connect() as conn:
        return {
            t.name: conn.scalar(select(func.count()).select_from(t))
            for t in schema.metadata.sorted_tables
            if t is not schema.schema_version
        }


# ---- joining


def test_students_join_by_name_and_a_reload_keeps_them_in(store):
    code, _ = store.create_class("Period 3")
    ann = store.join(code, "browser-a", "Ann")
    assert (ann.name, ann.position) == ("Ann", 0)
    assert store.join(code, "browser-a", "Ann") == ann  # a reload
    assert store.join(code, "browser-a", "Someone else") == ann  # a second tab, whatever it types
    assert store.student(code, "browser-a") == ann
    assert store.student(code, "browser-b") is None
    bob = store.join(code, "browser-b", "Bob")
    assert bob.id != ann.id and bob.position == 1


def test_names_are_unique_in_a_class_whatever_their_case_and_not_across_classes(store):
    code, _ = store.create_class("A")
    other, _ = store.create_class("B")
    store.join(code, "b1", "Ann")
    with pytest.raises(ClassroomError, match="already has this name"):
        store.join(code, "b2", " ANN ")
    assert store.join(other, "b2", "Ann").name == "Ann"


def test_a_student_their_teacher_lets_rejoin_takes_their_name_and_record_to_another_browser(store):
    code, key = store.create_class("A")
    ann = store.join(code, "laptop", "Ann")
    store.record_run(ann, RunState("training", step=40))
    with pytest.raises(ClassroomError, match="ask your teacher for a rejoin code"):
        store.join(code, "tablet", "ann")  # a name stays with the browser that joined under it
    with pytest.raises(WrongKey):
        store.let_rejoin(code, "not the key", "Ann")
    with pytest.raises(ClassroomError, match="no student in this class has this name"):
        store.let_rejoin(code, key, "Bob")
    replaced = store.let_rejoin(code, key, "ANN")
    rejoin = store.let_rejoin(code, key, "Ann")  # asked twice: the last code is the one that works
    assert re.fullmatch(r"[A-HJKMNP-Z2-9]{6}", rejoin) and rejoin != replaced
    assert store.student(code, "laptop") == ann  # her browser keeps its seat until the code is used
    for wrong in ("", replaced, "ZZZZZZ"):
        with pytest.raises(ClassroomError, match="already has this name|not the rejoin code"):
            store.join(code, "classmate", "Ann", wrong)  # only the code takes the name
    assert store.student(code, "classmate") is None
    typed = f" {rejoin[:3].lower()}-{rejoin[3:]} "  # as a student may type it
    assert store.join(code, "tablet", "Ann", typed) == ann  # her place, group, seed and name
    assert store.standing(ann)[1].status == "training"  # and what she recorded
    assert store.student(code, "tablet") == ann and store.student(code, "laptop") is None  # the laptop left
    assert store.left(code, "laptop") and not store.left(code, "tablet") and not store.left(code, "classmate")
    with pytest.raises(ClassroomError, match="already has this name|not the rejoin code"):
        store.join(code, "laptop", "Ann", rejoin)  # once: the name is the tablet's now
    assert [s.name for s in store.snapshot(code, names=True).students] == ["Ann"]


def test_a_teacher_removes_a_student_with_what_they_recorded_and_the_next_to_join_takes_their_place(store, clock):
    code, key = store.create_class("A")
    store.set_assignment(code, key, PE_GROUPS)
    store.set_question(code, key, "positional-none")
    ann, bob = store.join(code, "laptop", "Ann"), store.join(code, "phone", "Bob")  # Bob joined last: the highest id
    store.answer(bob, "sooner")
    store.record_run(bob, RunState("training", step=40))
    with pytest.raises(WrongKey):
        store.remove_student(code, "not the key", "Bob")
    with pytest.raises(ClassroomError, match="no student in this class has this name"):
        store.remove_student(code, key, "Cy")
    store.remove_student(code, key, "BOB")  # names compare as they do on joining
    board = store.open_board(code, key)
    assert [s.name for s in board.students] == ["Ann"] and set(board.runs) == set() and board.predictions == {}
    assert store.student(code, "phone") is None and not store.left(code, "phone")
    assert store.removed(code, "phone") and not store.removed(code, "laptop")  # its page says why it has no seat
    clock.advance(seconds=1)
    dee = store.join(code, "tablet", "Dee")
    assert (dee.position, dee.group, dee.seed) == (bob.position, bob.group, bob.seed)  # the groups stay balanced
    assert dee.id == bob.id or store.engine.dialect.name != "sqlite"  # SQLite gives the next student Bob's id
    with pytest.raises(UnknownClass, match="not in this class any more"):
        store.record_run(bob, RunState("training", step=80))  # Bob's run trains on: it is not Dee's
    with pytest.raises(UnknownClass, match="not in this class any more"):
        store.answer(bob, "sooner")
    assert store.standing(dee) == (None, None)
    assert store.join(code, "phone", "Bob again").position == 2  # his browser may join again
    assert [s.name for s in store.open_board(code, key).students] == ["Ann", "Dee", "Bob again"]
    assert store.standing(ann) == (None, None)
    store.remove_student(code, key, "Bob again")  # and be removed again
    assert store.removed(code, "phone")


def test_a_class_closed_to_new_students_takes_back_only_those_who_joined_until_it_opens_again(store, clock):
    code, key = store.create_class("A")
    ann = store.join(code, "laptop", "Ann")
    bob = store.join(code, "phone", "Bob")
    store.remove_student(code, key, "Bob")
    assert not store.class_info(code).joins_closed
    store.set_joining(code, key, False)
    assert store.class_info(code).joins_closed and store.open_board(code, key).info.joins_closed
    with pytest.raises(ClassroomError, match="closed this class to new students"):
        store.join(code, "troll", "Mallory")  # a free seat, Bob's: not taken while closed
    with pytest.raises(ClassroomError, match="closed this class to new students"):
        store.join(code, "phone", "Bob")  # a removed student's browser is a new student's now
    assert store.join(code, "laptop", "anything") == ann  # a browser that joined comes back as itself
    rejoin = store.let_rejoin(code, key, "Ann")
    assert store.join(code, "desktop", "Ann", rejoin).id == ann.id  # a student who changed browser moves
    with pytest.raises(WrongKey):
        store.set_joining(code, "not the key", True)
    store.set_joining(code, key, True)
    assert not store.class_info(code).joins_closed
    assert store.join(code, "phone", "Bob").position == bob.position


def test_a_full_class_takes_a_student_again_once_one_is_removed(store, monkeypatch):
    monkeypatch.setattr(store_module, "MAX_STUDENTS", 3)
    code, key = store.create_class("A")
    for i in range(3):
        store.join(code, f"b{i}", f"S{i}")
    store.remove_student(code, key, "S0")
    assert store.join(code, "b3", "S3").position == 0
    with pytest.raises(ClassroomError, match="this class is full"):
        store.join(code, "b4", "S4")


@pytest.mark.parametrize(
    "first, second",
    [
        ("Zo\u00eb", "Zoe\u0308"),  # composed and decomposed
        ("Alice", "\uff21\uff4c\uff49\uff43\uff45"),  # fullwidth
        ("Stra\u00dfe", "STRASSE"),  # casefolding
        ("\u2460", "1"),  # compatibility forms
        ("Alice", "Alice\u200d"),  # a joiner, a combining grapheme joiner, a variation selector: drawn as nothing
        ("Alice", "A\u034flice"),
        ("Alice", "Alice\ufe0f"),
        ("Al ice", "Al  ice"),  # two spaces read as one
    ],
)
def test_names_that_read_the_same_are_one_name(store, first, second):
    code, _ = store.create_class("A")
    joined = store.join(code, "b1", first)
    with pytest.raises(ClassroomError, match="already has this name"):
        store.join(code, "b2", second)
    assert store.student(code, "b1").name == joined.name
    decomposed = store.join(code, "b3", "Rene\u0301")
    assert decomposed.name == "Ren\u00e9"  # kept composed: one spelling on the board and in the exports


@pytest.mark.parametrize(
    "name",
    [
        *("", "   ", "x" * (MAX_NAME_CHARS + 1), "two\nlines", "tab\there", "nul\x00", 42, "\u202eevil", "Ada\u200b"),
        "\u0958" * MAX_NAME_CHARS,  # composed, each letter is two: 80 characters
        "\ufdfa" * MAX_NAME_CHARS,  # one ligature each, spelled out in 18 letters by NFKC: a name_key of 720
        "Alice\u2800",  # a blank braille cell: reads as "Alice"
        "\u3164",  # a Hangul filler: reads as no name
        "Al\u20281+1",  # a line separator
        *("\u200d", "\u200c\u200d\u200d", "\u034f", "\ufe0f", "\u200d \u200d", "\u0301"),  # nothing that shows
    ],
)
def test_names_out_of_bounds_are_refused(store, name):
    code, _ = store.create_class("A")
    with pytest.raises(ClassroomError, match="a name"):
        store.join(code, "b1", name)
    assert row_counts(store)["students"] == 0


def test_a_name_may_carry_the_marks_a_script_stacks_but_not_a_tower_of_them(store):
    code, _ = store.create_class("A")
    for name in (
        "Nguy\u00ea\u0303n",
        "\u0e19\u0e49\u0e33",
        "T\u1ec7 Ph\u1ea1m",
        "e\u0323\u0302\u0301",
    ):  # Vietnamese, Thai
        assert store.join(code, f"b-{name}", name).name == unicodedata.normalize("NFC", name)
    with pytest.raises(ClassroomError, match="one of its letters carries 12 marks, more than 4") as refused:
        store.join(code, "b-zalgo", "Z" + "\u0336\u0317" * 6 + "algo")
    assert "12 个附加符号" in translator("zh-CN").gettext(refused.value)


@pytest.mark.parametrize(
    "name, character, zh",
    [
        ("\u202eevil", "U+202E, an invisible formatting character", "U+202E，这是不可见的格式字符"),
        ("Ada\u200f", "U+200F, an invisible formatting character", "U+200F，这是不可见的格式字符"),
        ("nul\x00", "U+0000, a control character", "U+0000，这是控制字符"),
        ("\ue000", "U+E000, a character that does not show", "U+E000，这是不显示的字符"),  # private use
    ],
)
def test_a_name_refused_for_a_character_that_does_not_show_names_it_in_the_page_s_words(store, name, character, zh):
    code, _ = store.create_class("A")
    with pytest.raises(ClassroomError, match=re.escape(f"holds {character}")) as refused:
        store.join(code, "b1", name)
    assert zh in translator("zh-CN").gettext(refused.value) and "RIGHT-TO-LEFT" not in str(refused.value)


def test_a_name_too_long_is_refused_with_its_length(store):
    code, _ = store.create_class("A")
    with pytest.raises(ClassroomError, match="a name must be 1 to 40 characters; it has 120"):
        store.join(code, "b1", "x" * 120)


@pytest.mark.parametrize(
    "name",
    ["\U0001f98a Zo\u00eb \U0001f469\u200d\U0001f52c", "\u0645\u0647\u0633\u0627\u200c\u0631\u0636\u0627\u06cc\u06cc"],
)
def test_names_written_with_a_joiner_are_names(store, name):
    code, _ = store.create_class("A")
    assert store.join(code, "b1", name).name == name  # an emoji of three joined, a Persian name with a non-joiner


def test_names_are_kept_as_literal_text(store):
    code, _ = store.create_class("A")
    name = "<b>**Zoë**</b> [x](y)"[:MAX_NAME_CHARS]
    store.join(code, "b1", name)
    assert store.join(code, "b1", "ignored").name == name
    assert store.student(code, "b1").name == name


def test_a_full_class_refuses_the_next_student_clearly(store, monkeypatch):
    monkeypatch.setattr(store_module, "MAX_STUDENTS", 3)
    code, _ = store.create_class("A")
    for i in range(3):
        store.join(code, f"b{i}", f"S{i}")
    with pytest.raises(ClassroomError, match="this class is full: it holds 3 students"):
        store.join(code, "b3", "S3")
    assert store.join(code, "b0", "S0").position == 0  # those in it still get back in


def test_the_server_holds_a_bounded_number_of_classes(store, monkeypatch):
    monkeypatch.setattr(store_module, "MAX_CLASSES", 2)
    first, key = store.create_class("A")
    store.create_class("B")
    with pytest.raises(ClassroomError, match="holds 2 classes"):
        store.create_class("C")
    store.delete_class(first, key)
    store.create_class("C")
    assert row_counts(store)["classes"] == 2


def test_unknown_and_malformed_codes_are_refused(store):
    for code in ["amber-otter-0000", "x" * 1000, None]:
        with pytest.raises(UnknownClass):
            store.class_info(code)
        with pytest.raises(UnknownClass):
            store.join(code, "b1", "Ann")


# ---- the teacher key


def test_codes_and_keys_are_drawn_from_large_spaces():
    assert len(set(ADJECTIVES)) == len(ADJECTIVES) == 100 and len(set(ANIMALS)) == len(ANIMALS) == 100
    assert CODE_COUNT == 10**8


def test_the_key_is_stored_only_as_its_salted_hash(store):
    code, key = store.create_class("A")
    assert re.fullmatch(r"[a-z]+-[a-z]+-\d{4}", code) and key not in code
    with store.engine.connect() as conn:
        row = conn.execute(select(schema.classes)).one()
    stored = [str(v) for v in row] + [bytes(v).decode("latin-1") for v in row if isinstance(v, bytes)]
    assert not any(key in value for value in stored)
    assert bytes(row.key_hash) == key_hash(key, bytes(row.key_salt))
    other_code, other_key = store.create_class("B")
    with store.engine.connect() as conn:
        salts = set(conn.scalars(select(schema.classes.c.key_salt)))
    assert len(salts) == 2 and other_key != key


STUDENT, TEACHER = Caller("10.0.0.7", "student-browser"), Caller("10.0.0.7", "teacher-browser")  # one school's NAT


def test_wrong_keys_lock_out_the_browser_that_sent_them_never_the_real_teacher(store, clock, url):
    code, key = store.create_class("A")
    most, window_s = WRONG_KEYS_PER_BROWSER
    for _ in range(most):
        with pytest.raises(WrongKey):
            store.open_board(code, "guess", STUDENT)
    with pytest.raises(TooManyAttempts, match="from this browser"):
        store.open_board(code, key, STUDENT)  # refused unchecked, right key or not
    replica = ClassStore(url, clock)  # another server process on the same database
    with pytest.raises(TooManyAttempts):
        replica.set_question(code, key, None, STUDENT)
    assert replica.open_board(code, key, TEACHER).info.title == "A"  # same network, another browser
    store.set_question(code, key, None, TEACHER)
    clock.advance(seconds=window_s + 1)
    assert replica.open_board(code, key, STUDENT).info.title == "A"
    replica.close()


def test_wrong_rejoin_codes_lock_out_the_browser_that_sent_them(store, clock):
    """A rejoin code is one of 31^6; still, guesses are bounded per browser as teacher keys are."""
    code, key = store.create_class("A")
    store.join(code, "laptop", "Ann")
    rejoin = store.let_rejoin(code, key, "Ann")
    most, window_s = WRONG_KEYS_PER_BROWSER
    for _ in range(most):
        with pytest.raises(ClassroomError, match="not the rejoin code"):
            store.join(code, "guesser", "Ann", "ZZZZZZ")
    with pytest.raises(TooManyAttempts, match="too many wrong rejoin codes from this browser"):
        store.join(code, "guesser", "Ann", rejoin)  # refused unchecked, right code or not
    assert "输错重新加入码" in translator("zh-CN").gettext(
        N_("too many wrong rejoin codes from this browser: wait a few minutes")
    )
    assert store.join(code, "tablet", "Ann", rejoin).name == "Ann"  # another browser: Ann herself
    clock.advance(seconds=window_s + 1)
    with pytest.raises(ClassroomError, match="already has this name"):  # checked again: the code was used
        store.join(code, "guesser", "Ann")


def test_an_unknown_code_and_a_wrong_key_get_one_message(store):
    code, _ = store.create_class("A")
    answers = set()
    for guess_code, guess_key in [("amber-otter-0000", "guess"), (code, "guess"), ("x" * 1000, None)]:
        with pytest.raises(WrongKey) as err:
            store.open_board(guess_code, guess_key, TEACHER)
        answers.add(str(err.value))
    assert answers == {"no class has this code, or this is not its teacher key"}


def test_a_burst_of_wrong_keys_runs_a_bounded_number_of_key_checks(store, monkeypatch):
    code, key = store.create_class("A")
    checks, running, most_at_once = [], [0], [0]
    real = store_module.key_matches

    def counted(*args):
        running[0] += 1
        most_at_once[0] = max(most_at_once[0], running[0])
        checks.append(1)
        try:
            return real(*args)
        finally:
            running[0] -= 1

    monkeypatch.setattr(store_module, "key_matches", counted)
    hashing_threads, callers, real_scrypt = set(), set(), hashlib.scrypt

    def scrypt(*args, **kwargs):
        hashing_threads.add(threading.get_ident())
        return real_scrypt(*args, **kwargs)

    monkeypatch.setattr(hashlib, "scrypt", scrypt)

    def guess(_: int) -> str:
        callers.add(threading.get_ident())
        try:
            store.open_board(code, "guess", STUDENT)
        except ClassroomError as err:
            return type(err).__name__
        return "opened"

    with ThreadPoolExecutor(40) as pool:
        answers = list(pool.map(guess, range(40)))
    most, _ = WRONG_KEYS_PER_BROWSER
    assert len(checks) == most and most_at_once[0] == 1  # 40 at once: 5 scrypt checks, one at a time
    assert len(hashing_threads) == 1 and not hashing_threads & callers  # all on one thread: one malloc arena
    assert answers.count("WrongKey") == most and answers.count("TooManyAttempts") == 40 - most
    assert store.open_board(code, key, TEACHER).info.title == "A"


def test_past_its_free_misses_an_address_gets_one_answer_per_turn_and_right_codes_never_wait(store):
    waits = []  # a burst: every request comes at the same moment, and sleeping moves no clock
    store.turns = Turns(MISS_SPACING_S, clock=lambda: 0.0, sleep=waits.append)
    code, key = store.create_class("A")
    free, _ = FREE_MISSES
    guesser = Caller("203.0.113.9", "guesser")
    for i in range(free + 3):
        with pytest.raises(UnknownClass):
            store.class_info(f"amber-otter-{i:04d}", guesser)  # a class link with a guessed code
    assert waits == [MISS_SPACING_S, 2 * MISS_SPACING_S]  # past the free ones: one answer per turn
    assert store.class_info(code, guesser).title == "A"  # a real code answers at once
    with pytest.raises(WrongKey):
        store.open_board("amber-otter-9999", "k", Caller("203.0.113.9", "another window"))  # the form counts too
    assert waits[2:] == [3 * MISS_SPACING_S]
    assert store.open_board(code, key, Caller("203.0.113.9", "the teacher")).info.title == "A"
    with pytest.raises(UnknownClass):
        store.class_info("amber-otter-9999", Caller("198.51.100.1", "a student elsewhere"))
    assert len(waits) == 3  # other addresses keep their free misses
    assert len(waits) == 3


def test_creating_classes_is_rate_limited_per_browser_address_and_server(store, clock, monkeypatch):
    monkeypatch.setattr(throttle, "CLASS_CREATIONS", {"browser": (2, 3600), "address": (3, 3600), "server": (5, 3600)})
    store.create_class("A", caller=Caller("10.0.0.1", "b1"))
    store.create_class("B", caller=Caller("10.0.0.1", "b1"))
    with pytest.raises(TooManyAttempts, match="from this browser"):
        store.create_class("C", caller=Caller("10.0.0.1", "b1"))
    store.create_class("C", caller=Caller("10.0.0.1", "b2"))  # another private window, same network
    with pytest.raises(TooManyAttempts, match="from your network"):
        store.create_class("D", caller=Caller("10.0.0.1", "b3"))
    store.create_class("D", caller=Caller("10.0.0.2", "b4"))
    store.create_class("E", caller=Caller("10.0.0.3", "b5"))
    with pytest.raises(TooManyAttempts, match="on this server"):
        store.create_class("F", caller=Caller("10.0.0.4", "b6"))
    assert row_counts(store)["classes"] == 5
    clock.advance(seconds=3601)
    store.create_class("F", caller=Caller("10.0.0.1", "b1"))


def test_the_bounds_on_creating_classes_stop_a_flood_well_before_the_server_is_full():
    assert CLASS_CREATIONS["server"][0] < store_module.MAX_CLASSES // 4
    assert CLASS_CREATIONS["browser"][0] <= CLASS_CREATIONS["address"][0] <= CLASS_CREATIONS["server"][0]


def test_teacher_actions_need_the_key(store):
    code, key = store.create_class("A")
    for action in [
        lambda k: store.set_assignment(code, k, PE_GROUPS),
        lambda k: store.set_question(code, k, None),
        lambda k: store.delete_class(code, k),
    ]:
        with pytest.raises(WrongKey):
            action("wrong")
    assert store.class_info(code).assignment is None


# ---- assignments and groups


def test_an_out_of_range_assignment_is_refused_before_anything_is_stored(store):
    code, key = store.create_class("A")
    store.set_assignment(code, key, PE_GROUPS)
    with pytest.raises(ValueError, match="steps must be a whole number in 10..5000"):
        store.set_assignment(code, key, Assignment({"steps": 10**6}))
    assert store.class_info(code).assignment == PE_GROUPS


def test_groups_alternate_by_join_order_and_seeds_are_distinct(store):
    code, key = store.create_class("A")
    store.set_assignment(code, key, PE_GROUPS)
    roster = [store.join(code, f"b{i}", f"S{i}") for i in range(15)]
    groups = [s.group for s in roster]
    assert groups.count("PE") == 8 and groups.count("no PE") == 7
    assert groups[:4] == ["PE", "no PE", "PE", "no PE"]
    assert len({s.seed for s in roster}) == 15
    three = Assignment({}, frozenset(), "n_heads", (Group("1", 1), Group("2", 2), Group("4", 4)))
    store.set_assignment(code, key, three)  # a later assignment deals the groups again
    assert [s.group for s in store.open_board(code, key).students][:4] == ["1", "2", "4", "1"]


def test_each_class_s_seeds_start_where_its_code_says_so_two_classes_train_their_own_runs(store):
    """Two periods with the same assignment: seeds 0, 1, 2... in both would have the second class join the first's
    finished runs, which its students would never watch learn."""
    first, second = store.create_class("Period 1")[0], store.create_class("Period 2")[0]
    for code in (first, second):
        ada, bo = store.join(code, "b-ada", "Ada"), store.join(code, "b-bo", "Bo")
        assert [ada.seed, bo.seed] == [Assignment().seed(p, class_seed_offset(code)) for p in (0, 1)]
    offsets = [class_seed_offset(code) for code in ("amber-otter-7351", "amber-otter-7352", "amber-otter-7351")]
    assert offsets[0] != offsets[1] and offsets[0] == offsets[2]  # from the code alone
    offsets = {class_seed_offset(f"c-{i}") for i in range(2000)}
    assert min(offsets) >= OWN_SEEDS and max(offsets) + MAX_STUDENTS - 1 <= 10_000  # clear of 0, 1, 2... unwrapped


def test_a_new_class_s_seeds_meet_no_other_class_s(store):
    """Forty periods on one server, each a class of MAX_STUDENTS: no two students of two classes are given the
    same seed (by chance of the codes alone, about one pair of classes in a hundred would be)."""
    codes = [store.create_class(f"Period {i}")[0] for i in range(40)]
    seeds = [{Assignment().seed(p, class_seed_offset(code)) for p in range(MAX_STUDENTS)} for code in codes]
    assert sum(map(len, seeds)) == len(set().union(*seeds)) == 40 * MAX_STUDENTS
    assert min(min(s) for s in seeds) >= OWN_SEEDS


def test_a_class_keeps_its_task_once_a_student_has_answered_or_trained(store):
    code, key = store.create_class("A")
    ann = store.join(code, "b1", "Ann")
    store.set_assignment(code, key, Assignment({"task": "copy"}))  # nobody has trained: the teacher may change it
    store.set_assignment(code, key, Assignment({"task": "copy", "steps": 100}))
    store.record_run(ann, RunState("not started"))  # a student on the Train page, not yet started
    store.set_assignment(code, key, Assignment({"task": "sort", "steps": 100}))
    store.record_run(ann, RunState("training", step=25))
    with pytest.raises(ClassroomError, match="one class is one experiment"):
        store.set_assignment(code, key, Assignment({"task": "copy", "steps": 100}))
    with pytest.raises(ClassroomError, match="one class is one experiment"):
        store.set_assignment(code, key, None)  # the Train form's task, reverse
    with pytest.raises(ClassroomError, match="one class is one experiment"):
        store.set_task(code, key, pairs_from_rows([(f"row {i}", str(i), str(i)) for i in range(10)], "own.csv"))
    store.set_assignment(code, key, Assignment({"task": "sort", "steps": 300}))  # the same task: any setting
    with pytest.raises(ClassroomError, match="one class is one experiment"):  # each student's own task from now on
        store.set_assignment(code, key, Assignment({"task": "sort", "steps": 300}, frozenset({"task"})))
    assert store.class_info(code).assignment.preset == {"task": "sort", "steps": 300}


def test_an_answer_alone_also_keeps_the_class_s_task(store):
    code, key = store.create_class("A")
    store.set_assignment(code, key, PE_GROUPS)
    store.set_question(code, key, "positional-none")
    store.answer(store.join(code, "b1", "Ann"), "sooner")
    with pytest.raises(ClassroomError, match="create a new class"):
        store.set_assignment(code, key, replace(PE_GROUPS, preset={"task": "copy", "steps": 600}))


# ---- questions and predictions


def test_a_question_must_fit_the_assignment(store):
    code, key = store.create_class("A")
    with pytest.raises(ClassroomError, match="needs groups that differ in “Positional encoding”, one of them “no PE”"):
        store.set_question(code, key, "positional-none")
    for hostile in ("what do you think?", ["positional-none"], {"positional-none": 1}, b"positional-none"):
        with pytest.raises(ClassroomError, match="not a built-in question"):
            store.set_question(code, key, hostile)
    store.set_assignment(code, key, PE_GROUPS)
    store.set_question(code, key, "positional-none")
    with pytest.raises(ClassroomError, match="no longer fits"):
        store.set_assignment(code, key, Assignment())
    assert store.class_info(code).question == "positional-none"


def test_an_assignment_and_its_question_change_together(store):
    """Groups in another setting and the question about it, saved at once: the question the class had no longer fits
    the new groups, which once refused the Save asking for the very change it held."""
    code, key = store.create_class("A")
    store.set_assignment(code, key, PE_GROUPS, question="positional-none")
    ann = store.join(code, "b1", "Ann")
    norm = Assignment({"task": "reverse"}, frozenset(), "norm_first", split_groups("norm_first"))
    with pytest.raises(ClassroomError, match="does not fit the assignment"):
        store.set_assignment(code, key, norm, question="causal-mask-off")  # neither is saved
    assert (store.class_info(code).assignment, store.class_info(code).question) == (PE_GROUPS, "positional-none")
    store.set_assignment(code, key, norm, question="pre-norm")
    assert (store.class_info(code).assignment, store.class_info(code).question) == (norm, "pre-norm")
    store.set_assignment(code, key, None, question=None)
    assert (store.class_info(code).assignment, store.class_info(code).question) == (None, None)
    store.set_assignment(code, key, PE_GROUPS, question="positional-none")
    store.answer(ann, "sooner")
    with pytest.raises(ClassroomError, match="to compare other groups, create a new class"):
        store.set_assignment(code, key, norm, question="pre-norm")


@pytest.mark.parametrize("started", ["answered", "trained"])
def test_a_class_keeps_its_groups_once_a_student_answered_or_trained(store, started):
    """Groups come from a student's place in the class: other groups saved after runs would relabel those runs
    ('pre-norm' on the board for a run trained without PE and with post-norm)."""
    code, key = store.create_class("A")
    store.set_assignment(code, key, PE_GROUPS, question="positional-none")
    ann = store.join(code, "b1", "Ann")
    swapped = replace(PE_GROUPS, groups=PE_GROUPS.groups[::-1])
    store.set_assignment(code, key, swapped)  # no one has started: anything goes
    store.set_assignment(code, key, PE_GROUPS)
    if started == "answered":
        store.answer(ann, "sooner")
    else:
        store.record_run(ann, RunState("training", step=10))
    for other in (swapped, replace(PE_GROUPS, setting=None, groups=()), None):
        with pytest.raises(ClassroomError, match="to compare other groups, create a new class"):
            store.set_assignment(code, key, other, question=None)
    masked = Assignment({"task": "reverse"}, frozenset(), "causal_mask", split_groups("causal_mask"))
    with pytest.raises(ClassroomError, match="to compare other groups"):  # said first: no question fits it then
        store.set_assignment(code, key, masked)
    relabelled = replace(PE_GROUPS, groups=tuple(Group(g.label + "!", g.value) for g in PE_GROUPS.groups))
    store.set_assignment(code, key, replace(relabelled, preset={**PE_GROUPS.preset, "steps": 300}))  # other words
    assert store.class_info(code).assignment.groups == relabelled.groups  # and budgets may still change


def test_predictions_are_made_before_the_run_starts(store):
    code, key = store.create_class("A")
    ann = store.join(code, "b1", "Ann")
    with pytest.raises(ClassroomError, match="no question"):
        store.answer(ann, "sooner")
    store.set_assignment(code, key, PE_GROUPS)
    store.set_question(code, key, "positional-none")
    with pytest.raises(ClassroomError, match="not one of"):
        store.answer(ann, "x" * 10_000)
    store.answer(ann, "sooner")
    store.answer(ann, "later")  # a change of mind, still before Start
    store.record_run(ann, RunState("training", step=25))
    with pytest.raises(ClassroomError, match="before the run starts"):
        store.answer(ann, "sooner")
    assert store.open_board(code, key).predictions[ann.id].choice == "later"
    assert row_counts(store)["predictions"] == 1


# ---- runs


def test_record_run_replaces_the_last_state_and_keeps_its_size_bounded(store):
    code, key = store.create_class("A")
    ann = store.join(code, "b1", "Ann")
    store.record_run(ann, RunState("queued", queue_place=3))
    rows = tuple({"step": 25 * (i + 1), "train_loss": 1 / (i + 1), "junk": "x" * 100} for i in range(3 * MAX_RUN_ROWS))
    rows = ({"step": 0, "train_loss": math.nan},) + rows
    store.record_run(ann, RunState("finished", 7500, None, rows, {**SOLVED, "extra": 1}, "e" * 10_000))
    run = store.open_board(code, key).runs[ann.id]
    assert row_counts(store)["runs"] == 1
    assert len(run.rows) == MAX_RUN_ROWS
    assert run.rows[0]["train_loss"] is None and run.rows[-1]["step"] == 25 * 3 * MAX_RUN_ROWS
    assert "junk" not in run.rows[1] and "extra" not in run.result
    assert len(run.error) <= 300
    for bad in [RunState("exploded"), RunState("training", step=-1), RunState("queued", queue_place=10**9)]:
        with pytest.raises(ValueError):
            store.record_run(ann, bad)


def test_a_class_survives_a_restart(url, clock):
    first = ClassStore(url, clock)
    code, key = first.create_class("Period 3")
    first.set_assignment(code, key, PE_GROUPS)
    first.set_question(code, key, "positional-none")
    ann = first.join(code, "b1", "Ann")
    first.answer(ann, "later")
    first.record_run(ann, RunState("finished", 300, None, ({"step": 300, "train_loss": 0.01},), SOLVED))
    before = first.open_board(code, key)
    first.close()
    second = ClassStore(url, clock)
    assert second.open_board(code, key) == before
    assert second.join(code, "b1", "Ann") == ann
    second.close()


# ---- retention


def test_a_class_is_purged_with_all_its_data_after_its_retention(store, clock):
    code, key = store.create_class("A", retention_days=3)
    kept, _ = store.create_class("B")
    store.set_assignment(code, key, PE_GROUPS)
    store.set_question(code, key, "positional-none")
    ann = store.join(code, "b1", "Ann")
    store.answer(ann, "sooner")
    store.record_run(ann, RunState("training", step=50))
    store.join(code, "b2", "Bob")
    store.remove_student(code, key, "Bob")
    with pytest.raises(WrongKey):
        store.open_board(code, "wrong")
    clock.advance(days=2)
    assert store.purge_expired() == 0
    clock.advance(days=1)
    with pytest.raises(UnknownClass):  # gone for its students at once, before the purge runs
        store.class_info(code)
    assert store.purge_expired() == 1
    assert row_counts(store) == {
        "classes": 1,
        "students": 0,
        "runs": 0,
        "predictions": 0,
        "reports": 0,
        "removals": 0,
        "attempts": 0,
    }
    assert store.class_info(kept).title == "B"


def test_a_teacher_deletes_a_class_at_once(store):
    code, key = store.create_class("A")
    ann = store.join(code, "b1", "Ann")
    store.record_run(ann, RunState("training", step=50))
    store.delete_class(code, key)
    assert set(row_counts(store).values()) == {0}
    with pytest.raises(WrongKey, match="no class has this code"):
        store.open_board(code, key)


@pytest.mark.parametrize("days", [0, 91, 14.5, "14"])
def test_retention_is_bounded(store, days):
    with pytest.raises(ClassroomError, match="1 to 90 days"):
        store.create_class("A", retention_days=days)


# ---- the database and its schema


def test_the_sqlite_folder_is_created_and_the_schema_version_recorded(url, clock):
    opened = ClassStore(url, clock)
    assert opened.version == len(schema.MIGRATIONS)
    if url.startswith("sqlite"):
        assert Path(make_url(url).database).is_file()
    with opened.engine.connect() as conn:
        versions = list(conn.scalars(select(schema.schema_version.c.version)))
        assert versions == list(range(1, len(schema.MIGRATIONS) + 1))
        assert set(inspect(conn).get_table_names()) == {t.name for t in schema.metadata.sorted_tables}
    opened.close()


def test_a_new_migration_is_applied_once_to_an_older_database(url, clock, monkeypatch):
    ClassStore(url, clock).close()  # a database at the current version
    applied = []

    def add_index(conn):
        applied.append(1)
        detached = Table("students", MetaData(), Column("joined_at", DateTime))  # leaves schema.metadata as it is
        Index("students_joined_at", detached.c.joined_at).create(conn)

    monkeypatch.setattr(schema, "MIGRATIONS", [*schema.MIGRATIONS, add_index])
    for _ in range(2):
        reopened = ClassStore(url, clock)
        assert reopened.version == len(schema.MIGRATIONS)
        reopened.close()
    assert applied == [1]
    with reopened.engine.connect() as conn:
        assert "students_joined_at" in {i["name"] for i in inspect(conn).get_indexes("students")}
        assert conn.scalar(select(func.max(schema.schema_version.c.version))) == len(schema.MIGRATIONS)


def test_the_database_url_comes_from_the_environment_the_secrets_or_the_data_folder():
    pg = "postgresql+psycopg://lab:lab@db/lab"
    assert database_url({"LAB_DATABASE_URL": pg}, {"connections": {"classes": {"url": "other"}}}) == pg
    assert database_url({}, {"connections": {"classes": {"url": pg}}}) == pg
    assert database_url({"LAB_DATA_DIR": "/srv/lab"}) == "sqlite:////srv/lab/classes.sqlite3"
    assert database_url({}) == "sqlite:///data/classes.sqlite3"


def test_students_see_the_class_without_names_and_the_teacher_with_them(store):
    code, key = store.create_class("A")
    ann = store.join(code, "b1", "Ann")
    store.record_run(ann, RunState("training", step=50))
    seen = store.snapshot(code)
    assert [s.name for s in seen.students] == [""] and seen.runs[ann.id].step == 50
    assert [s.name for s in store.open_board(code, key).students] == ["Ann"]


def test_students_joining_at_once_get_distinct_places_and_the_bound_holds(store, monkeypatch):
    monkeypatch.setattr(store_module, "MAX_STUDENTS", 6)
    code, _ = store.create_class("A")

    def join(i: int) -> str:
        try:
            return str(store.join(code, f"b{i}", f"S{i}").position)
        except ClassroomError as err:
            return str(err)

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(join, range(12)))
    assert sorted(a for a in answers if a.isdigit()) == [str(p) for p in range(6)]
    assert sum("this class is full" in a for a in answers) == 6


# ---- runs the database can vouch for


def test_a_run_no_server_reports_on_reads_lost_and_one_that_is_reported_on_does_not(store, clock):
    code, key = store.create_class("A")
    ann, bob = store.join(code, "b1", "Ann"), store.join(code, "b2", "Bob")
    store.record_run(ann, RunState("training", step=261))
    store.record_run(bob, RunState("training", step=40))
    clock.advance(seconds=LOST_AFTER_S - 1)
    assert store.heard([bob]) == []  # the server still holds Bob's run, whose state has not changed
    clock.advance(seconds=2)
    board = store.open_board(code, key)
    assert (board.runs[ann.id].status, board.runs[ann.id].step) == ("lost", 261)
    assert board.runs[bob.id].status == "training"
    assert store.snapshot(code).runs[ann.id].status == "lost"  # the students' view and the exports alike


def test_a_server_that_starts_marks_the_runs_it_held_as_lost_at_once(url, clock):
    host, other = ClassStore(url, clock, server="host:8501"), ClassStore(url, clock, server="other:8501")
    code, key = host.create_class("A")
    ann, bob, cat, dan = (host.join(code, f"b{i}", name) for i, name in enumerate(["Ann", "Bob", "Cat", "Dan"]))
    host.record_run(ann, RunState("training", step=261))
    host.record_run(bob, RunState("queued", queue_place=2))
    other.record_run(cat, RunState("training", step=9))  # another replica's
    host.record_run(dan, RunState("finished", 300, None, ({"step": 300, "train_loss": 0.01},), SOLVED))
    host.close()
    restarted = ClassStore(url, clock, server="host:8501")
    runs = restarted.open_board(code, key).runs
    assert [runs[s.id].status for s in (ann, bob, cat, dan)] == ["lost", "lost", "training", "finished"]
    assert runs[ann.id].step == 261
    restarted.close()
    other.close()


def test_recording_a_run_twice_or_at_once_leaves_one_row(store):
    code, key = store.create_class("A")
    ann = store.join(code, "b1", "Ann")
    state = RunState("training", step=50, rows=({"step": 50, "train_loss": 1.0},))
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda _: store.record_run(ann, state), range(16)))
    assert row_counts(store)["runs"] == 1
    assert store.open_board(code, key).runs[ann.id] == store_module.bounded(state)


def test_a_run_of_a_deleted_class_is_refused_cleanly(store):
    code, key = store.create_class("A")
    ann = store.join(code, "b1", "Ann")
    store.delete_class(code, key)
    with pytest.raises(UnknownClass):
        store.record_run(ann, RunState("training", step=5))
    assert set(row_counts(store).values()) == {0}


def test_servers_opening_a_new_database_at_once_all_open_it(url):
    barrier, answers = threading.Barrier(16), []

    def open_store() -> None:  # each its own engine and connections, as a server process has
        barrier.wait()
        try:
            ClassStore(url).close()
        except Exception as err:  # the test counts every failure, whatever it is
            answers.append(f"{type(err).__name__}: {err}")
        else:
            answers.append("ok")

    servers = [threading.Thread(target=open_store) for _ in range(16)]
    for server in servers:
        server.start()
    for server in servers:
        server.join()
    assert answers == ["ok"] * 16
    with create_engine(url).connect() as conn:
        assert list(conn.scalars(select(schema.schema_version.c.version))) == list(range(1, len(schema.MIGRATIONS) + 1))
        if conn.dialect.name == "sqlite":
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"


def test_a_new_sqlite_database_another_connection_holds_is_put_in_wal_mode_once_it_is_free(tmp_path, monkeypatch):
    path = tmp_path / "classes.sqlite3"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # the write lock, as a server migrating in the rollback journal holds it
    waits = []

    def sleep(seconds: float) -> None:  # the first wait before asking again ends the holder's transaction
        waits.append(seconds)
        if len(waits) == 1:
            holder.execute("COMMIT")

    monkeypatch.setattr(database, "time", SimpleNamespace(monotonic=time.monotonic, sleep=sleep))
    engine = engine_for(f"sqlite:///{path}")
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    finally:
        engine.dispose()
        holder.close()
    assert waits == [database.WAL_RETRY_S]


def test_an_older_database_s_names_compare_without_invisible_characters_once_migrated(url, clock):
    """Names a class took before its names compared without joiners and extra spaces keep their rows; each takes its
    new key where no other name holds it, and a name like one of them is then refused."""
    opened = ClassStore(url, clock)
    code, _ = opened.create_class("A")
    opened.join(code, "b1", "Alice")
    opened.join(code, "b2", "Bob Li")
    with opened.engine.begin() as conn:  # the keys as made before: "Alice" and "Alice" + a joiner apart
        conn.exec_driver_sql("UPDATE students SET name_key = 'bob  li' WHERE name = 'Bob Li'")
        conn.execute(schema.students.insert().values(**student_row(conn, "Alice\u200d", "alice\u200d", "b3")))
        conn.execute(schema.schema_version.delete().where(schema.schema_version.c.version == 8))  # _name_keys
    opened.close()
    reopened = ClassStore(url, clock)
    with reopened.engine.connect() as conn:
        keys = dict(conn.execute(select(schema.students.c.name, schema.students.c.name_key)).all())
    assert keys == {"Alice": "alice", "Bob Li": "bob li", "Alice\u200d": "alice\u200d"}  # the second Alice: kept
    with pytest.raises(ClassroomError, match="already has this name"):
        reopened.join(code, "b4", "Bob  Li")
    reopened.close()


def student_row(conn, name: str, key: str, browser: str) -> dict:
    """A students row as an older server wrote it: the class's first student's, but for these, and joined last."""
    first = conn.execute(select(schema.students).limit(1)).mappings().one()
    last = conn.scalar(select(func.max(schema.students.c.position)))
    kept = {column: value for column, value in first.items() if column != "id"}
    return {**kept, "name": name, "name_key": key, "browser": browser, "position": last + 1}


def test_a_version_1_database_is_brought_to_version_2_with_its_data(url, clock):
    opened = ClassStore(url, clock)
    code, key = opened.create_class("A")
    ann = opened.join(code, "b1", "\uff21nn")
    opened.record_run(ann, RunState("finished", 300, None, (), SOLVED))
    with opened.engine.begin() as conn:  # back to version 1's tables
        for column in ("heard_at", "server"):
            conn.exec_driver_sql(f"ALTER TABLE runs DROP COLUMN {column}")
        conn.exec_driver_sql("DROP TABLE attempts")
        conn.exec_driver_sql("CREATE TABLE key_failures (id INTEGER PRIMARY KEY, class_id INTEGER, at TIMESTAMP)")
        conn.exec_driver_sql("UPDATE students SET name_key = 'Ａnn'")
        conn.execute(schema.schema_version.delete().where(schema.schema_version.c.version == 2))
    opened.close()
    reopened = ClassStore(url, clock)
    assert reopened.version == len(schema.MIGRATIONS)
    with pytest.raises(ClassroomError, match="already has this name"):
        reopened.join(code, "b2", "ann")
    assert reopened.open_board(code, key).runs[ann.id].status == "finished"
    assert "key_failures" not in inspect(reopened.engine).get_table_names()
    reopened.close()


def class_task(name: str = "swaps") -> TaskPairs:
    rows = [(f"row {i}", f"{a} {b}", f"{b} {a}") for i, (a, b) in enumerate(zip("abcdefgh", "hgfedcba"), 1)]
    return pairs_from_rows(rows, name)


def test_a_class_keeps_its_own_task_and_its_students_see_it(store):
    code, key = store.create_class("Own task")
    assert store.class_info(code).task is None
    store.set_task(code, key, class_task())
    assert store.class_info(code).task == class_task()
    assert store.open_board(code, key).info.task == store.snapshot(code).info.task == class_task()
    store.set_task(code, key, class_task("other"))
    assert store.class_info(code).task.name == "other"
    store.set_task(code, key, None)
    assert store.class_info(code).task is None
    with pytest.raises(WrongKey):
        store.set_task(code, "wrong key", class_task())
    with pytest.raises(ClassroomError, match="a task from examples"):
        store.set_task(code, key, class_task().to_dict())
    assert store.class_info(code).task is None


def taken_back(opened: ClassStore, version: int, *statements: str) -> None:
    """`opened`'s database taken back to `version`'s tables by `statements`, the next version unrecorded, and closed:
    as a server of that version left it."""
    with opened.engine.begin() as conn:
        for statement in statements:
            conn.exec_driver_sql(statement)
        conn.execute(schema.schema_version.delete().where(schema.schema_version.c.version == version + 1))
    opened.close()


def test_a_version_3_database_is_brought_to_version_4_and_keeps_its_classes(url, clock):
    opened = ClassStore(url, clock)
    code, key = opened.create_class("Before tasks")
    taken_back(opened, 3, "ALTER TABLE classes DROP COLUMN task")
    reopened = ClassStore(url, clock)
    assert reopened.version == len(schema.MIGRATIONS)
    assert reopened.class_info(code).title == "Before tasks" and reopened.class_info(code).task is None
    reopened.set_task(code, key, class_task())
    assert reopened.class_info(code).task == class_task()
    reopened.close()


def test_a_version_6_database_keeps_its_students_and_learns_which_browser_a_rejoin_left(url, clock):
    opened = ClassStore(url, clock)
    code, key = opened.create_class("Before")
    ann = opened.join(code, "laptop", "Ann")
    taken_back(opened, 6, "ALTER TABLE students DROP COLUMN left_browser")
    reopened = ClassStore(url, clock)
    assert reopened.version == len(schema.MIGRATIONS) and reopened.student(code, "laptop") == ann
    assert reopened.join(code, "tablet", "Ann", reopened.let_rejoin(code, key, "Ann")) == ann
    assert reopened.left(code, "laptop")
    reopened.close()


def test_a_version_8_database_learns_which_browsers_their_teacher_removed(url, clock):
    opened = ClassStore(url, clock)
    code, key = opened.create_class("Before")
    opened.join(code, "laptop", "Ann")
    taken_back(opened, 8, "DROP TABLE removals")
    reopened = ClassStore(url, clock)
    assert reopened.version == len(schema.MIGRATIONS) and not reopened.removed(code, "laptop")
    reopened.remove_student(code, key, "Ann")
    assert reopened.removed(code, "laptop")
    reopened.delete_class(code, key)  # and forgets them with the class
    with reopened.engine.begin() as conn:
        assert conn.scalar(select(func.count()).select_from(schema.removals)) == 0
    reopened.close()


def test_a_version_9_database_keeps_its_classes_open_and_learns_to_close_them(url, clock):
    opened = ClassStore(url, clock)
    code, key = opened.create_class("Before")
    taken_back(opened, 9, "ALTER TABLE classes DROP COLUMN joins_closed_at")
    reopened = ClassStore(url, clock)
    assert reopened.version == len(schema.MIGRATIONS) == 10 and not reopened.class_info(code).joins_closed
    reopened.set_joining(code, key, False)
    with pytest.raises(ClassroomError, match="closed"):
        reopened.join(code, "laptop", "Ann")
    reopened.close()


def test_a_version_4_database_keeps_its_classes_tasks_with_their_digest(url, clock, monkeypatch):
    opened = ClassStore(url, clock)
    (code, key), (plain, _) = opened.create_class("Own task"), opened.create_class("No task")
    opened.set_task(code, key, class_task("kept before digests"))
    taken_back(opened, 4, "ALTER TABLE classes DROP COLUMN task_hash")
    monkeypatch.setattr(rows, "PARSED_TASKS", rows.ParsedTasks(rows.TASKS_KEPT))  # a server started afresh
    reopened = ClassStore(url, clock)
    assert reopened.version == len(schema.MIGRATIONS)
    assert reopened.class_info(code).task == class_task("kept before digests")
    assert reopened.class_info(plain).task is None
    reopened.close()
