"""A student in a class, on the Train page: the link's class asks for a name, then shows the student's group and
the settings their teacher locked, asks the class's question before Start, trains with the class's settings and the
student's seed, records the run in the class database, and grades the prediction once runs are measured."""

import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

import ui.classes
import ui.common
import ui.state
from tests.helpers import wait_until
from tests.helpers.apptest import join_class as join
from tests.helpers.apptest import open_class_link as open_link
from tests.helpers.apptest import poll_until_done
from transformer.classroom import Assignment, Caller, ClassStore, Group, RunState
from transformer.pairs import pairs_from_rows
from transformer.report_data import gather
from ui.classes import UNANSWERED
from ui.train_controls import ASSIGNMENT_CHANGED, CLASS_SAME_RUN, SAME_RUN
from ui.train_form import ALL_LOCKED, CHOSEN, CLASS_DEFAULTS, LOCKED

ROOT = Path(__file__).resolve().parents[2]
TINY = {"task": "reverse", "min_len": 3, "max_len": 3, "steps": 30}
GROUPS = Assignment(TINY, frozenset({"lr"}), "positional", (Group("with PE", "sinusoidal"), Group("no PE", "none")))
TEACHER = Caller(None, "the-teacher's-browser")


pytestmark = pytest.mark.usefixtures("class_server")  # tests/pages/conftest.py


def shown(markdown: str) -> str:
    return re.sub(r"\\(.)", r"\1", markdown)


def a_class(question: str | None = None) -> tuple[str, str]:
    store = ui.classes.class_store()
    code, key = store.create_class("Period 3", 14, TEACHER)
    store.set_assignment(code, key, GROUPS, TEACHER)
    store.set_question(code, key, question, TEACHER)
    return code, key


def test_a_student_joins_by_name_and_sees_their_group_and_locked_settings():
    code, _ = a_class()
    at = open_link(code)
    assert "start_training" not in [b.key for b in at.button] and at.text_input(key="class_name")
    join(at, "")  # no name: refused, still on the form
    assert at.error and at.text_input(key="class_name")
    join(at, "Ada *bold*")
    banner = shown(at.info[0].value)
    assert "you are **Ada *bold***" in banner and "group **with PE**" in banner
    seed = ui.classes.class_store().student(code, at.session_state["watcher"]).seed
    assert at.number_input(key="train_seed").value == seed and at.number_input(key="train_seed").disabled
    assert at.selectbox(key="train_task").value == "reverse" and at.selectbox(key="train_task").disabled
    assert at.radio(key="train_positional").value == "sinusoidal" and at.radio(key="train_positional").disabled
    assert not at.number_input(key="train_lr").disabled  # the teacher left it open
    captions = [caption.value for caption in at.caption]
    assert LOCKED in captions and CHOSEN not in captions  # never "change any setting"


def test_a_student_whose_teacher_set_every_setting_is_told_so():
    store = ui.classes.class_store()
    code, key = store.create_class("Period 3", 14, TEACHER)
    store.set_assignment(code, key, Assignment(TINY, frozenset()), TEACHER)  # nothing left open
    at = open_link(code)
    join(at, "Ada")
    captions = [caption.value for caption in at.caption]
    assert ALL_LOCKED in captions and LOCKED not in captions  # not "change any other"
    assert "Your teacher locked the settings" in at.info[0].value


def test_a_student_of_a_class_with_no_assignment_yet_is_not_told_the_teacher_set_it():
    code, _ = ui.classes.class_store().create_class("Period 3", 14, TEACHER)  # no assignment saved: the defaults
    at = open_link(code)
    join(at, "Ada")
    captions = [caption.value for caption in at.caption]
    assert CLASS_DEFAULTS in captions and ALL_LOCKED not in captions
    assert "are your class's" in at.info[0].value and "Your teacher" not in at.info[0].value
    assert at.selectbox(key="train_task").disabled  # still the class's run: every setting locked


def test_a_student_takes_their_name_to_another_browser_with_their_teacher_s_rejoin_code():
    code, key = a_class()
    store = ui.classes.class_store()
    laptop, tablet = open_link(code), open_link(code)  # two browsers (each AppTest session is one)
    join(laptop, "Ada")
    ada = store.student(code, laptop.session_state["watcher"])
    join(tablet, "Ada")
    assert "ask your teacher for a rejoin code" in tablet.error[0].value
    rejoin = store.let_rejoin(code, key, "Ada", TEACHER)
    tablet.text_input(key="class_rejoin").set_value(rejoin.lower())
    join(tablet, "Ada")
    assert "you are **Ada**" in shown(tablet.info[0].value)
    assert store.student(code, tablet.session_state["watcher"]) == ada
    laptop.run()  # the browser she joined from is told why its seat went
    assert "your teacher let you take your name to another browser" in laptop.info[0].value
    assert laptop.text_input(key="class_name")


def test_the_browser_a_student_rejoined_from_says_so_after_a_reload_too(browser):
    """A reload is a new session, maybe long after: the class remembers which browser a student left."""
    browser["id"] = "laptop"
    code, key = a_class()
    store = ui.classes.class_store()
    join(open_link(code), "Ada")
    browser["id"] = "tablet"
    tablet = open_link(code)
    tablet.text_input(key="class_rejoin").set_value(store.let_rejoin(code, key, "Ada", TEACHER))
    join(tablet, "Ada")
    assert "you are **Ada**" in shown(tablet.info[0].value)
    browser["id"] = "laptop"
    ui.common.models_by_browser().clear()  # long after: the server has let go of what it kept of the laptop
    reloaded = open_link(code)  # the laptop's page, reloaded: a new session
    assert "your teacher let you take your name to another browser" in reloaded.info[0].value
    assert reloaded.text_input(key="class_name")
    browser["id"] = "a-classmate"
    assert not any("another browser" in i.value for i in open_link(code).info)  # never joined: the form alone


def test_a_student_their_teacher_removed_is_told_so_after_a_reload_too(browser):
    browser["id"] = "phone"
    code, key = a_class()
    join(open_link(code), "**troll**")
    ui.classes.class_store().remove_student(code, key, "**troll**", TEACHER)
    ui.common.models_by_browser().clear()
    reloaded = open_link(code)  # the same browser, a new session
    assert any("Your teacher removed your name" in w.value for w in reloaded.warning)
    assert reloaded.text_input(key="class_name")
    join(reloaded, "Tom")
    assert "you are **Tom**" in shown(reloaded.info[0].value) and not reloaded.warning  # joined again: said no more
    browser["id"] = "a-classmate"
    assert not open_link(code).warning  # another browser, never removed


def test_a_student_removed_from_a_closed_class_is_told_to_ask_their_teacher_not_to_join_again(browser):
    browser["id"] = "phone"
    code, key = a_class()
    join(open_link(code), "Tom")
    store = ui.classes.class_store()
    store.set_joining(code, key, False, TEACHER)
    store.remove_student(code, key, "Tom", TEACHER)
    ui.common.models_by_browser().clear()
    (warning,) = [w.value for w in open_link(code).warning if "removed your name" in w.value]
    assert "ask your teacher to open it" in warning and "join under a name" not in warning


def test_a_join_form_refused_by_a_closed_class_waits_for_it_to_open_and_then_drops_its_notice(fragments, monkeypatch):
    """A student at a closed class's join form, refused, saw "closed" and "Not joined" until they pressed Join again,
    after the teacher had opened it: the notice is read again every CLASS_POLL_S, and redraws the page once open."""
    code, key = a_class()
    store = ui.classes.class_store()
    store.set_joining(code, key, False, TEACHER)
    at = open_link(code)
    at.text_input(key="class_name").set_value("Tom")
    at.button(key="class_join_button").click().run()
    assert any("closed this class to new students" in i.value for i in at.info) and at.error
    assert fragments["closed_notice"] == ui.classes.CLASS_POLL_S  # read again on its own
    reruns, rerun = [], st.rerun
    monkeypatch.setattr(st, "rerun", lambda: reruns.append(code))
    ui.classes.closed_notice(code)
    assert reruns == []  # still closed: the notice stays
    store.set_joining(code, key, True, TEACHER)
    ui.classes.closed_notice(code)
    assert reruns == [code]  # its next read finds the class open: the page is drawn again
    monkeypatch.setattr(st, "rerun", rerun)
    fragments.clear()
    at.run()
    assert not any("closed" in i.value for i in at.info) and not at.error and "closed_notice" not in fragments


def test_a_second_tab_s_join_under_another_name_says_which_name_the_browser_has(browser):
    """Two tabs of one browser show the join form; the first joins as TabOne, then the second's Join, typed TabTwo,
    made it TabOne with nothing said. A browser is one student: the second tab says so, and under which name."""
    browser["id"] = "laptop"
    code, _ = a_class()
    first, second = open_link(code), open_link(code)
    join(first, "TabOne")
    join(second, "TabTwo")
    said = [shown(info.value) for info in second.info]
    assert "you are **TabOne**" in said[0] and any("in another tab" in s and "**TabOne**" in s for s in said), said
    second.run()
    assert not any("in another tab" in info.value for info in second.info)  # said once


def test_a_student_who_rejoins_elsewhere_is_told_where_their_run_is():
    code, key = a_class()
    store = ui.classes.class_store()
    laptop, tablet = open_link(code), open_link(code)
    join(laptop, "Ada")
    store.record_run(store.student(code, laptop.session_state["watcher"]), RunState("finished", step=120))
    tablet.text_input(key="class_rejoin").set_value(store.let_rejoin(code, key, "Ada", TEACHER))
    join(tablet, "Ada")
    assert not tablet.exception and "run" not in tablet.session_state
    assert any(i.value.startswith("Your class has a run of yours") for i in tablet.info)  # not a blank page
    assert not any(i.value.startswith("Your class has a run of yours") for i in open_link(code).info)  # not joined


def test_a_removed_student_who_joins_again_under_their_name_has_a_seat_of_their_own_not_their_old_run():
    """SQLite gives the next student a removed one's id: joined again as herself, Ada's page took the removed seat's
    run, still training, as hers, though the class no longer recorded it."""
    code, key = a_class()
    at = open_link(code)
    join(at, "Ada")
    at.button(key="start_training").click().run()
    poll_until_done(at)
    assert at.success[0].value.startswith("Finished after 30 steps")
    store = ui.classes.class_store()
    removed = store.student(code, at.session_state["watcher"])
    store.remove_student(code, key, "Ada", TEACHER)
    at.run()
    assert any("Your teacher removed your name" in w.value for w in at.warning)
    join(at, "Ada")
    assert store.student(code, at.session_state["watcher"]).id == removed.id  # SQLite's reuse: the case at hand
    assert not at.exception and not at.success and not at.get("download_button")  # the removed seat's run: not hers
    assert store.standing(store.student(code, at.session_state["watcher"])) == (None, None)


def test_who_takes_a_removed_student_s_place_and_seed_trains_a_run_of_their_own():
    """A newcomer takes the lowest free place, and so the seed of the student removed from it: Start joined the
    removed student's finished run ("Your settings ... match a run the server already trained") and the board showed
    it under the newcomer's name, who saw no model learn."""
    code, key = a_class()
    at = open_link(code)
    join(at, "Troll")
    at.button(key="start_training").click().run()
    poll_until_done(at)
    removed_run, store = at.session_state["run"], ui.classes.class_store()
    removed = store.student(code, at.session_state["watcher"])
    store.remove_student(code, key, "Troll", TEACHER)
    newcomer = join(open_link(code), "Bea")
    assert store.student(code, newcomer.session_state["watcher"]).seed == removed.seed  # the case at hand
    newcomer.button(key="start_training").click().run()
    assert newcomer.session_state["run"] is not removed_run
    assert not any(i.value == CLASS_SAME_RUN for i in newcomer.info)
    poll_until_done(newcomer)
    assert newcomer.success[0].value.startswith("Finished after 30 steps")
    assert newcomer.session_state["run"].losses == removed_run.losses  # the same seed: the same run, trained anew


def test_a_class_page_shows_and_reports_only_a_run_of_that_class(browser):
    """One browser in two classes (a teacher made a second for another task): each class's Train page shows, and its
    report button hands in, only the run trained in it, after the link of the other is opened (a new session)."""
    first, second = a_class()[0], a_class()[0]
    at = open_link(first)
    join(at, "Ada")
    at.button(key="start_training").click().run()
    poll_until_done(at)
    assert at.success[0].value.startswith("Finished after 30 steps") and at.get("download_button")
    other = open_link(second)
    join(other, "Ada")
    assert not other.exception and not other.success and not other.get("download_button")  # first's run: not here
    assert not any("run of yours" in i.value for i in other.info)  # and nothing recorded in this class
    at = open_link(first)
    assert at.success and at.get("download_button")  # its own class's run is still there
    other = open_link(second)
    other.number_input(key="train_lr").set_value(0.004)  # another run than the first class's
    other.button(key="start_training").click().run()
    poll_until_done(other)
    assert other.success and other.get("download_button")
    at = open_link(first)  # the second class's run is the browser's last now
    assert not at.exception and not at.success and not at.get("download_button")
    assert any(i.value.startswith("Your class has a run of yours, not solved in 30 steps") for i in at.info)


def test_after_a_server_restart_a_student_is_told_their_run_was_lost_or_where_it_is():
    code, _ = a_class()
    store = ui.classes.class_store()
    page = open_link(code)
    join(page, "Ada")
    ada = store.student(code, page.session_state["watcher"])
    store.record_run(ada, RunState("training", step=167))
    page.run()  # a page of Ada's with no run, while another of hers trains it
    assert shown(page.info[-1].value).startswith("Your run is training at step 167 on another page of yours")
    store.mark_lost(store.server)  # the server that held it starts again
    page.run()
    assert not page.exception and [shown(w.value) for w in page.warning] == [
        "Your run was lost at step 167: the server restarted or lost it; press Start again."
    ]
    assert not any("run of yours" in i.value for i in page.info)  # no word of curves kept elsewhere
    store.record_run(ada, RunState("stopped", step=40))
    page.run()
    assert shown(page.info[-1].value).startswith("Your class has a run of yours, stopped at step 40: it is on")


def test_the_question_comes_before_start_and_the_run_is_recorded_for_the_board():
    code, key = a_class("positional-none")
    at = open_link(code)
    join(at, "Ada")
    at.button(key="start_training").click().run()
    assert "answer the question" in at.warning[0].value and "run" not in at.session_state
    at.radio(key="class_prediction").set_value("later")
    at.number_input(key="train_lr").set_value(0.004)  # an open setting: the student's own value counts
    at.button(key="start_training").click().run()
    job = at.session_state["run"]
    assert job.train_config.lr == 0.004 and job.model_config.positional == "sinusoidal"
    assert (job.data_config.task, job.train_config.steps) == ("reverse", 30)
    poll_until_done(at)
    board = ui.classes.class_store().open_board(code, key, TEACHER)
    (student,) = board.students
    assert board.predictions[student.id].choice == "later"
    assert board.runs[student.id].status == "finished" and board.runs[student.id].result["steps"] == 30
    assert any("Your prediction:" in m.value for m in at.markdown) and at.table  # the class's tally


def form_fields(at: AppTest) -> list[tuple]:
    """The Train form's settings as drawn: (key, value, locked), in drawing order."""
    kinds = ("selectbox", "number_input", "radio", "toggle")
    return [(e.key, e.value, e.disabled) for e in at.main if e.type in kinds and e.key.startswith("train_")]


@pytest.mark.parametrize("own_task", [False, True], ids=["lab task", "own task"])
def test_start_before_the_question_is_answered_keeps_the_form_and_says_why_under_the_question(own_task):
    store = ui.classes.class_store()
    code, key = store.create_class("Period 3", 14, TEACHER)
    store.set_assignment(code, key, replace(GROUPS, open=frozenset()), TEACHER)  # every setting locked
    store.set_question(code, key, "positional-none", TEACHER)
    if own_task:
        rows = [(f"row {i}", f"{a} {b}", f"{b} {a}") for i, (a, b) in enumerate(zip("abcdefgh", "hgfedcba"), 1)]
        store.set_task(code, key, pairs_from_rows(rows, "our pairs"), TEACHER)
    at = open_link(code)
    join(at, "Ada")
    fields = form_fields(at)
    assert fields and all(locked for *_, locked in fields) and ALL_LOCKED in [c.value for c in at.caption]
    at.button(key="start_training").click().run()
    assert "run" not in at.session_state and form_fields(at) == fields  # the same locked fields, before and after
    drawn = [(e.type, getattr(e, "key", None)) for e in at.main]
    said = drawn.index(("warning", None))
    assert drawn.index(("radio", "class_prediction")) < said < drawn.index(("button", "start_training"))
    assert drawn.index(("flex_container", "into_view_class_prediction")) < drawn.index(("radio", "class_prediction"))
    assert at.warning[0].value == f"Not yet: {UNANSWERED}."  # under the question's choices, brought into view
    at.radio(key="class_prediction").set_value("later")
    at.button(key="start_training").click().run()
    assert at.session_state["run"] and not at.warning


def test_a_reload_keeps_the_student_and_a_class_that_ended_says_so():
    code, key = a_class()
    at = open_link(code)
    join(at, "Ada")
    at.run()
    assert "you are **Ada**" in shown(at.info[0].value)  # the same browser (session) is the same student
    assert at.query_params["class"] == code  # the address keeps the class: a reload opens it again
    home = AppTest.from_file("../../streamlit_app.py", default_timeout=30)
    home.query_params["class"] = code
    home.run()
    home.query_params.clear()  # the address on the way to Home: a page link drops the page's parameters
    home.run()
    assert not home.exception and home.query_params["class"] == code  # Home keeps the class too
    ui.classes.class_store().delete_class(code, key, TEACHER)
    again = AppTest.from_file("../../streamlit_app.py", default_timeout=30)
    again.query_params["class"] = code
    again.run()  # said on the first page the link opens
    assert "class link does not work" in again.warning[0].value
    assert "class" not in again.query_params  # a reload does not open the dead class again
    again.switch_page("pages/train.py").run()
    assert again.button(key="start_training") and not again.warning  # the lab without a class, said once


@pytest.mark.parametrize("gone", ["class deleted", "name moved", "removed"])
def test_start_on_a_page_whose_class_seat_is_gone_starts_nothing(gone):
    """A page drawn while the student was in the class, its form holding the class's locked settings: Start there
    once the class is deleted, or once the student's name moved to another browser, trained reverse outside the
    class and held a training slot. A student their teacher removed is told so, and joins again to train."""
    code, key = a_class()
    at = open_link(code)
    join(at, "Ada")
    store = ui.classes.class_store()
    if gone == "class deleted":
        store.delete_class(code, key, TEACHER)
    elif gone == "name moved":
        store.join(code, "another-browser", "Ada", store.let_rejoin(code, key, "Ada", TEACHER))
    else:
        store.remove_student(code, key, "Ada", TEACHER)
    at.button(key="start_training").click().run()
    assert not at.exception and "run" not in at.session_state  # no run started
    said = {
        "class deleted": "class link does not work",
        "name moved": "This browser has left the class",
        "removed": "Your teacher removed your name from this class",
    }[gone]
    assert any(said in shown(m.value) for m in [*at.warning, *at.info]), [m.value for m in [*at.warning, *at.info]]


@pytest.mark.parametrize("code", ["no-such-class-1234", "not a code!"])
def test_home_says_a_class_link_does_not_work_and_drops_it_from_the_address(code):
    home = AppTest.from_file("../../streamlit_app.py", default_timeout=30)
    home.query_params["class"] = code
    home.run()
    assert not home.exception and "class" not in home.query_params
    assert [w.value for w in home.warning if "class" in w.value.lower()]  # said, not silent
    home.run()  # the next run of the page says it no more
    assert not home.warning


@pytest.fixture
def fragments(monkeypatch) -> dict:
    """The `run_every` each fragment was last declared with, by its function's name."""
    declared, fragment = {}, st.fragment

    def declare(func=None, *, run_every=None, **options):
        if func is None:
            return lambda func: declare(func, run_every=run_every, **options)
        declared[func.__name__] = run_every
        return fragment(func, run_every=run_every, **options)

    monkeypatch.setattr(st, "fragment", declare)
    return declared


def test_a_prediction_not_measured_yet_is_graded_once_the_other_group_has_run(fragments):
    code, _ = a_class("positional-none")
    at = open_link(code)
    join(at, "Ada")  # the first to join: group "with PE"
    at.radio(key="class_prediction").set_value("later")
    at.button(key="start_training").click().run()
    poll_until_done(at)
    assert "So far not measured: it needs finished runs" in verdict(at)
    assert fragments["prediction_verdict"] == ui.classes.CLASS_POLL_S  # read again on its own until measured
    store = ui.classes.class_store()
    bo = store.join(code, "browser-b", "Bo")  # group "no PE": trains without positional encoding, out of its steps
    result = {"reason": "step budget", "steps": 30, "exact_match": 0.0}
    store.record_run(bo, RunState("finished", 30, None, ({"step": 30, "train_loss": 2.0},), result))
    at.run()  # what the verdict's fragment does on its own every few seconds
    assert "the runs say" in verdict(at) and "not measured" not in verdict(at)
    assert fragments["prediction_verdict"] == ui.classes.CLASS_POLL_S  # the class is open: a later run may turn it


def test_a_graded_prediction_is_read_again_while_the_class_is_open(fragments):
    """A verdict rests on the groups' medians so far: a run that ends later can turn it, and the student's page,
    whose own run has ended, must show that without a reload, a classmate's who joins after every run ended too."""
    code, _ = a_class("positional-none")
    at = open_link(code)
    join(at, "Ada")  # group "with PE"
    at.radio(key="class_prediction").set_value("later")
    at.button(key="start_training").click().run()
    poll_until_done(at)
    store = ui.classes.class_store()
    bo, cy = store.join(code, "browser-b", "Bo"), store.join(code, "browser-c", "Cy")  # "no PE", then "with PE"
    solved = {"reason": "solved", "steps": 20, "exact_match": 1.0}
    store.record_run(bo, RunState("finished", 20, None, ({"step": 20, "train_loss": 0.1},), solved))
    store.record_run(cy, RunState("training", 5, None, ({"step": 5, "train_loss": 2.0},)))
    at.run()
    first = verdict(at)
    assert "the runs say" in first and fragments["prediction_verdict"] == ui.classes.CLASS_POLL_S
    store.record_run(cy, RunState("finished", 30, None, ({"step": 30, "train_loss": 2.0},), {**solved, "steps": 30}))
    at.run()  # what the verdict's fragment does on its own: every run has ended, and a classmate may still join
    assert fragments["prediction_verdict"] == ui.classes.CLASS_POLL_S and "the runs say" in verdict(at)


def test_a_verdict_read_again_after_the_class_was_deleted_redraws_the_page_instead_of_failing(monkeypatch):
    """The verdict's fragment polls on its own, without the page's check of the class above it: when the teacher
    deletes the class meanwhile, it hands over to the whole page, which says the class has ended."""
    code, key = a_class("positional-none")
    store = ui.classes.class_store()
    seat = ui.classes.Seat(store.class_info(code), store.join(code, "browser-a", "Ada"))
    store.delete_class(code, key, TEACHER)

    class Rerun(Exception):
        pass

    def rerun(**_):
        raise Rerun

    monkeypatch.setattr(st, "rerun", rerun)
    with pytest.raises(Rerun):
        ui.classes.prediction_verdict(seat)


def verdict(at: AppTest) -> str:
    return shown(next(m.value for m in at.markdown if "Your prediction:" in m.value))


def test_a_class_student_whose_seed_is_locked_is_not_told_to_change_it():
    code, _ = a_class()
    at = open_link(code)
    join(at, "Ada")
    at.button(key="start_training").click().run()
    poll_until_done(at)
    job = at.session_state["run"]
    at.button(key="start_training").click().run()  # the same settings again: Start joins the run that finished
    assert at.session_state["run"] is job
    said = [info.value for info in at.info]
    assert CLASS_SAME_RUN in said and SAME_RUN not in said and not any("change the seed" in s for s in said)


def test_start_on_a_form_drawn_before_the_teacher_changed_the_settings_shows_them_and_trains_nothing():
    """The form showed 30 steps, the teacher saved 10 meanwhile: Start trained 10 steps, the page showing 30 until
    the run had ended. It now starts nothing and shows the saved settings; the next Start trains them."""
    code, key = a_class()
    at = open_link(code)
    join(at, "Ada")
    assert at.number_input(key="train_steps").value == 30
    ui.classes.class_store().set_assignment(code, key, replace(GROUPS, preset={**TINY, "steps": 10}), TEACHER)
    at.button(key="start_training").click().run()
    assert "run" not in at.session_state  # no run started
    assert ASSIGNMENT_CHANGED in [info.value for info in at.info]
    assert at.number_input(key="train_steps").value == 10
    at.button(key="start_training").click().run()
    assert at.session_state["run"].train_config.steps == 10


def test_a_class_with_its_own_task_trains_it_with_the_student_s_seed():
    code, key = a_class()
    rows = [(f"row {i}", f"{a} {b}", f"{b} {a}") for i, (a, b) in enumerate(zip("abcdefgh", "hgfedcba"), 1)]
    task = pairs_from_rows(rows, "our pairs")
    ui.classes.class_store().set_task(code, key, task, TEACHER)
    at = open_link(code)
    join(at, "Ada")
    assert any("Start trains your class's own task, **our pairs**" in i.value for i in at.info)
    assert not any(c.value.startswith("**reverse**:") for c in at.caption)  # not described beside it: not trained
    assert "train_task_file_0" not in [u.key for u in at.get("file_uploader")]  # the teacher chose the task
    at.button(key="start_training").click().run()
    job = at.session_state["run"]
    seat = ui.classes.class_store().student(code, at.session_state["watcher"])
    assert job.data_config.pairs == task and job.data_config.seed == seat.seed == job.train_config.seed
    poll_until_done(at)
    board = lambda: ui.classes.class_store().open_board(code, key, TEACHER)  # noqa: E731
    wait_until(lambda: board().runs[seat.id].status == "finished")  # the recorder writes from its own thread
    at.run()
    assert any("task our pairs, lengths 2 ·" in shown(c.value) for c in at.sidebar.caption)  # its name, not "pairs"
    assert gather(job).settings["task"] == "our pairs"  # and so in the lab report


def test_the_question_names_the_class_s_own_task_not_the_one_the_assignment_names():
    code, key = a_class("positional-none")  # the assignment names reverse
    rows = [(f"row {i}", f"{a} {b}", f"{a} {a} {b} {b}") for i, (a, b) in enumerate(zip("abcdefgh", "hgfedcba"), 1)]
    ui.classes.class_store().set_task(code, key, pairs_from_rows(rows, "doubled_zh.csv"), TEACHER)
    at = open_link(code)
    join(at, "Ada")
    label = at.radio(key="class_prediction").label  # a screen reader's name for the choices: plain text
    assert label.startswith("Predict first: Without positional encoding, doubled_zh.csv will be solved:")
    assert "reverse" not in label and "**" not in label and "\\" not in label
    assert any("**Predict first:**" in m.value for m in at.markdown)  # shown in bold above them


def test_a_prediction_on_runs_that_ran_out_of_time_is_not_graded_until_a_late_classmate_s_run_measures_it(fragments):
    code, _ = a_class("positional-none")
    at = open_link(code)
    join(at, "Ada")  # group "with PE": graded on the no-PE group's runs
    at.radio(key="class_prediction").set_value("later")
    at.button(key="start_training").click().run()
    poll_until_done(at)
    store = ui.classes.class_store()
    bo = store.join(code, "browser-b", "Bo")  # group "no PE": stopped by the time budget on a busy server
    result = {"reason": "time budget", "steps": 12, "exact_match": 0.0}
    store.record_run(bo, RunState("finished", 12, None, ({"step": 10, "train_loss": 2.0},), result))
    at.run()
    assert "not graded: the runs it rests on ran out of time" in verdict(at)
    assert "not so" not in verdict(at) and "you were right" not in verdict(at)
    assert fragments["prediction_verdict"] == ui.classes.CLASS_POLL_S  # no run in flight, yet one may come
    late = [store.join(code, f"browser-{name}", name) for name in ("Cy", "Di")]  # one of them in Bo's group
    (di,) = [student for student in late if student.group == bo.group]
    out_of_steps = {"reason": "step budget", "steps": 30, "exact_match": 0.0}
    store.record_run(di, RunState("finished", 30, None, ({"step": 30, "train_loss": 2.0},), out_of_steps))
    at.run()  # what the verdict's fragment does on its own
    assert "the runs say" in verdict(at) and "not graded" not in verdict(at)


STOPPING_SERVER = """
import sys
from types import SimpleNamespace

from ui.classes import class_recorder, class_store

code = sys.argv[1]
run = SimpleNamespace(status="training", step=1, rows=[], done=False, error=None, result=None)
class_recorder().follow(class_store().student(code, "browser-a"), run)  # written at once: step 1
run.step = 500  # then the server stops within the recorder's round
"""


def test_a_server_that_stops_writes_the_step_each_class_run_reached(tmp_path):
    store = ClassStore(f"sqlite:///{tmp_path / 'classes.sqlite3'}")
    code, _ = store.create_class("Period 3")
    ada = store.join(code, "browser-a", "Ada")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LAB_DATA_DIR": str(tmp_path), "LAB_TRAINING_PROCESSES": "0"}
    env.pop("LAB_DATABASE_URL", None)
    subprocess.run([sys.executable, "-c", STOPPING_SERVER, code], cwd=ROOT, env=env, check=True, timeout=120)
    _, state = store.standing(ada)
    assert (state.status, state.step) == ("training", 500)  # read as lost, at that step, once a server restarts
    store.close()


def test_a_link_whose_class_is_no_class_code_says_the_page_opens_without_it():
    """A class has no default: "?class=../../x" was told "so the page's default is used"."""
    at = AppTest.from_file("../../streamlit_app.py", default_timeout=60)
    at.query_params["class"] = "../../x"
    at.run()
    (notice,) = [w.value for w in at.warning]
    assert notice.startswith("The link's class is not a class code like amber-otter-7351, so the page opens without it")
    assert "default" not in notice and "class" not in at.query_params  # no class: the address forgets it
