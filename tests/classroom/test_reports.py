"""The lab reports a class keeps: written with a class run's end, read back as they were made, the length test kept
beside them until the next run's report, shown to the teacher only beside the run the board shows ended, gone with
the class, and a table an older database gains; a student's place in the class as measured."""

from itertools import product

import pytest
from sqlalchemy import inspect, select

from transformer.classroom import Assignment, ClassStore, Group, RunState, schema
from transformer.classroom.board import difference_sentence
from transformer.classroom.recorder import ClassRecorder
from transformer.classroom.reports import (
    class_part,
    class_reports_html,
    kept_reports,
    record_lengths,
    record_run_report,
)
from transformer.classroom.store import UnknownClass
from transformer.i18n import translator
from transformer.lengths import score_lengths
from transformer.limits import MAX_LABEL_CHARS
from transformer.pairs import pairs_from_rows, task_name
from transformer.report_data import from_json, gather, length_rows, to_json
from transformer.serving import finished_run

ENGLISH = translator("en")
COPY = dict(task="copy", min_len=3, max_len=3)
PE_GROUPS = Assignment(
    {"task": "reverse", "steps": 600}, frozenset(), "positional", (Group("PE", "sinusoidal"), Group("no PE", "none"))
)


@pytest.fixture(scope="module")
def runs():
    """Two small runs a student of a class may have trained, one after the other."""
    with finished_run(**COPY, seed=0) as first, finished_run(**COPY, seed=1) as second:
        yield first, second


@pytest.fixture
def store(tmp_path):
    opened = ClassStore(f"sqlite:///{tmp_path / 'classes.sqlite3'}")
    yield opened
    opened.close()


def test_a_class_run_s_report_is_kept_as_it_ends_and_read_back_as_it_was_made(store, runs):
    code, key = store.create_class("Lab 1")
    ada = store.join(code, "browser-a", "Ada")
    run, _ = runs
    recorder = ClassRecorder(store, lambda run: None, every_s=0.1)
    recorder.follow(ada, run)  # an ended run: its report and final state are written at once
    recorder.close()
    assert store.open_board(code, key).runs[ada.id].status == "finished"
    kept = kept_reports(store, [ada.id])
    assert kept == {ada.id: from_json(to_json(gather(run)))}
    assert kept[ada.id].step == store.open_board(code, key).runs[ada.id].step


def test_a_removed_student_s_run_reports_into_nobody_s_place(store, runs):
    code, key = store.create_class("Lab 1")
    ada = store.join(code, "browser-a", "Ada")
    first, second = runs
    record_run_report(store, ada, first)
    store.remove_student(code, key, "Ada")
    bea = store.join(code, "browser-b", "Bea")  # SQLite gives her Ada's id
    record_run_report(store, bea, second)
    with pytest.raises(UnknownClass):
        record_run_report(store, ada, first)  # Ada's page trained on after her teacher removed her
    record_lengths(store, ada, [{"length": 1}])
    assert kept_reports(store, [bea.id]) == {bea.id: from_json(to_json(gather(second)))}


def test_a_length_test_joins_the_report_until_another_run_s_report_replaces_both(store, runs):
    code, _ = store.create_class("Lab 1")
    ada = store.join(code, "browser-a", "Ada")
    first, second = runs
    record_lengths(store, ada, [])  # no report kept yet: nothing to join
    record_run_report(store, ada, first)
    scores = score_lengths(first.model(), first.data().vocab, first.data_config, range(1, 6), 10).scores
    record_lengths(store, ada, length_rows(scores))
    kept = kept_reports(store, [ada.id])[ada.id]
    assert [row["length"] for row in kept.lengths] == [1, 2, 3, 4, 5]
    assert [row["exact_match"] for row in kept.lengths] == pytest.approx(scores["exact_match"].tolist(), rel=1e-5)
    record_run_report(store, ada, first)  # Start again on the same settings: it joins the same run, whose model it is
    assert kept_reports(store, [ada.id])[ada.id] == kept
    record_run_report(store, ada, second)
    kept = kept_reports(store, [ada.id])[ada.id]
    assert kept.lengths is None and kept.settings["seed"] == 1


def test_a_no_pe_student_on_the_class_s_own_task_from_a_long_file_name_is_in_the_teacher_s_file(store):
    """Her run's name ("<file name>-2to2-d32h4n1-noPE") is longer than a group's label: her report is kept whole."""
    rows = [(f"line {i}", f"{a} {b}", f"{a} {a} {b} {b}") for i, (a, b) in enumerate(product("abc", repeat=2), 1)]
    pairs = pairs_from_rows(rows, task_name("doubled words, lesson 7.csv"))
    code, _ = store.create_class("Lab 1")
    ada = store.join(code, "browser-a", "Ada")
    with finished_run(pairs, positional="none", steps=30) as run:
        recorder = ClassRecorder(store, lambda run: None, every_s=0.1)
        recorder.follow(ada, run)  # an ended run: its report and final state are written at once
        recorder.close()
        name = gather(run).name
    assert len(name) > MAX_LABEL_CHARS and name.endswith("-noPE") and kept_reports(store, [ada.id])[ada.id].name == name
    page = class_reports_html(store, code, ENGLISH)
    assert "No report yet" not in page and page.count("<h3>Settings</h3>") == 1


def test_the_teacher_s_file_shows_a_report_only_beside_the_run_the_board_shows_ended(store, runs):
    code, key = store.create_class("Lab <1>")
    ada, bob, cat = (store.join(code, f"browser-{n}", n) for n in ("Ada", "Bob", "Cat <b>"))
    run, _ = runs
    for student in (ada, cat):
        record_run_report(store, student, run)
    store.record_run(ada, RunState("finished", run.step, None, (), {"reason": "solved", "steps": run.step}))
    store.record_run(cat, RunState("training", 5))  # Cat started another run: the kept report is of the one before
    page = class_reports_html(store, code, ENGLISH)
    assert "Lab reports of the class Lab &lt;1&gt;" in page
    assert page.count('<section class="report"') == 3 and page.count("<h3>Settings</h3>") == 1
    assert "No report yet: the run is not started." in page and "No report yet: the run is training at step 5." in page
    assert "Cat &lt;b&gt;" in page and "Cat <b>" not in page
    chinese = class_reports_html(store, code, translator("zh-CN"))
    assert "班级 Lab &lt;1&gt; 的实验报告" in chinese and "<h3>设置</h3>" in chinese


def test_reports_go_with_their_class_and_a_deleted_class_takes_none(store, runs):
    code, key = store.create_class("Lab 1")
    ada = store.join(code, "browser-a", "Ada")
    run, _ = runs
    record_run_report(store, ada, run)
    store.delete_class(code, key)
    with store.engine.begin() as conn:
        assert conn.execute(select(schema.reports)).all() == []
    with pytest.raises(UnknownClass):
        record_run_report(store, ada, run)


def test_an_older_database_gains_the_reports_table_with_its_data_kept(tmp_path):
    url = f"sqlite:///{tmp_path / 'classes.sqlite3'}"
    opened = ClassStore(url)
    code, key = opened.create_class("Lab 1")
    ada = opened.join(code, "browser-a", "Ada")
    version = schema.MIGRATIONS.index(schema._reports_table) + 1
    with opened.engine.begin() as conn:  # back to the version before the reports
        schema.reports.drop(conn)
        conn.execute(schema.schema_version.delete().where(schema.schema_version.c.version >= version))
    opened.close()
    reopened = ClassStore(url)
    assert "reports" in inspect(reopened.engine).get_table_names()
    assert reopened.open_board(code, key).students == (ada,) and kept_reports(reopened, [ada.id]) == {}
    reopened.close()


def test_a_student_s_place_in_the_class_is_their_group_prediction_and_what_the_runs_measured(store):
    code, key = store.create_class("Lab 1")
    store.set_assignment(code, key, PE_GROUPS)
    store.set_question(code, key, "positional-none")
    ada, bob = store.join(code, "browser-a", "Ada"), store.join(code, "browser-b", "Bob")
    store.answer(bob, "sooner")
    snapshot = store.snapshot(code)
    assert class_part(snapshot, bob).measured is None  # no run has finished yet
    solved = {"reason": "solved", "steps": 300, "seconds": 3.0, "exact_match": 1.0, "token_acc": 1.0}
    unsolved = {"reason": "step budget", "steps": 600, "seconds": 6.0, "exact_match": 0.2, "token_acc": 0.7}
    store.record_run(ada, RunState("finished", 300, None, (), solved))
    store.record_run(bob, RunState("finished", 600, None, (), unsolved))
    snapshot = store.snapshot(code)
    part = class_part(snapshot, bob)
    assert (part.title, part.student, part.group, part.prediction) == ("Lab 1", "Bob", "no PE", "sooner")
    assert part.question == "Without positional encoding, reverse will be solved:"
    assert part.measured == "not within the step budget"  # Bob's run, without PE, did not solve it
    assert part.outcome == difference_sentence(snapshot) and "1 of 1 (PE) against 0 of 1 (no PE)" in part.outcome
    assert class_part(snapshot, ada).prediction is None and class_part(snapshot, ada).group == "PE"
