"""A class's rows as records: its own task is parsed once per process, however often the class is read."""

import uuid

import pytest

import transformer.classroom.rows as rows
from transformer.classroom import ClassStore
from transformer.pairs import TaskPairs, pairs_from_rows


def a_task() -> TaskPairs:
    """A task no other test has given a class (so no digest of it is kept yet)."""
    pairs = [(f"row {i}", f"{a} {b}", f"{b} {a}") for i, (a, b) in enumerate(zip("abcdefgh", "hgfedcba"), 1)]
    return pairs_from_rows(pairs, f"task {uuid.uuid4().hex[:8]}")


@pytest.fixture
def parses(monkeypatch) -> list[str]:
    """The names of the tasks parsed from the class database (`TaskPairs.from_dict`), on a server started afresh."""
    parsed, parse = [], TaskPairs.from_dict.__func__
    monkeypatch.setattr(TaskPairs, "from_dict", classmethod(lambda cls, d: parsed.append(d["name"]) or parse(cls, d)))
    monkeypatch.setattr(rows, "PARSED_TASKS", rows.ParsedTasks(rows.TASKS_KEPT))
    return parsed


def test_a_class_s_own_task_is_parsed_once_however_often_the_class_is_read(tmp_path, parses, monkeypatch):
    store = ClassStore(f"sqlite:///{tmp_path}/classes.sqlite3")
    code, key = store.create_class("Own task")
    first, second = a_task(), a_task()
    store.set_task(code, key, first)
    for _ in range(5):
        assert store.class_info(code).task == first
        assert store.snapshot(code, names=True).info.task == first
    assert store.open_board(code, key).info.task == first
    assert parses == [first.name]
    store.set_task(code, key, second)
    assert store.class_info(code).task == second and store.snapshot(code).info.task == second
    assert parses == [first.name, second.name]  # a changed task is parsed again, once
    monkeypatch.setattr(rows, "PARSED_TASKS", rows.ParsedTasks(rows.TASKS_KEPT))  # the server restarted
    assert store.class_info(code).task == second and store.class_info(code).task == second
    assert parses == [first.name, second.name, second.name]
    store.set_task(code, key, None)
    assert store.class_info(code).task is None
    store.close()


def test_the_parsed_tasks_kept_are_the_most_recently_read(parses):
    kept = rows.ParsedTasks(2)
    tasks = {name: a_task() for name in "abc"}
    for name, task in tasks.items():
        kept.keep(name, task)
    assert kept.get("b", lambda: pytest.fail("b is kept")) == tasks["b"]
    kept.keep("d", a_task())  # past two: the least recently read, c, goes
    assert kept.get("b", lambda: pytest.fail("b is kept")) == tasks["b"]
    assert kept.get("c", lambda: tasks["c"].to_dict()) == tasks["c"] and parses == [tasks["c"].name]
