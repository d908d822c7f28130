"""The lab report on the pages: Train offers a finished run's report, made at the click with the student's place in
their class and the length test they ran on the run's model (kept with their class report too); Teacher offers every
student's report in one file, and a file that says why when the class has ended."""

import pytest
from streamlit.testing.v1 import AppTest

import pages.classes
import pages.common
from pages.report_view import class_reports
from tests.pages.test_train import poll_until_done
from transformer.classroom import Assignment, Caller, Group
from transformer.classroom.reports import kept_reports
from transformer.i18n import translator

TINY = {"task": "reverse", "min_len": 3, "max_len": 3, "steps": 30}
GROUPS = Assignment(TINY, frozenset(), "positional", (Group("with PE", "sinusoidal"), Group("no PE", "none")))
TEACHER = Caller(None, "the-teacher's-browser")


pytestmark = pytest.mark.usefixtures("class_server")  # tests/pages/conftest.py


def buttons(at: AppTest) -> dict:
    return {b.proto.label: b.proto for b in at.get("download_button")}


def a_student_s_finished_run() -> tuple[AppTest, str, str]:
    """A class with a question; Ada joins, predicts and trains to the end. Returns her page, the class's code and
    key."""
    store = pages.classes.class_store()
    code, key = store.create_class("Period 3", 14, TEACHER)
    store.set_assignment(code, key, GROUPS, TEACHER)
    store.set_question(code, key, "positional-none", TEACHER)
    at = AppTest.from_file("../../streamlit_app.py", default_timeout=60)
    at.query_params["class"] = code
    at.run()
    at.switch_page("pages/train.py").run()
    at.text_input(key="class_name").set_value("Ada <b>")
    at.button(key="class_join_button").click().run()
    at.radio(key="class_prediction").set_value("later")
    at.button(key="start_training").click().run()
    poll_until_done(at)
    assert not at.exception
    return at, code, key


def test_a_class_student_s_report_holds_their_place_and_the_length_test_of_their_run(media):
    at, code, key = a_student_s_finished_run()
    button = buttons(at)["Download the lab report (HTML)"]
    assert button.ignore_rerun and not button.url  # made at the click; the page stays as it is
    page = media[button.deferred_file_id]()
    assert page.startswith("<!DOCTYPE html>") and "<h3>In the class</h3>" in page
    for text in ("Period 3", "Ada &lt;b&gt;", "with PE", "Without positional encoding", "later"):
        assert text in page
    assert "No length test was run on this model" in page

    at.switch_page("pages/lengths.py").run()  # the length test of the model in hand: the run's
    assert not at.exception
    (ada,) = pages.classes.class_store().open_board(code, key, TEACHER).students
    kept = kept_reports(pages.classes.class_store(), [ada.id])[ada.id]
    assert kept.lengths and {row["length"] for row in kept.lengths} >= {3}
    at.switch_page("pages/train.py").run()
    page = media[buttons(at)["Download the lab report (HTML)"].deferred_file_id]()
    assert "At lengths it trained on (3)" in page and "No length test was run" not in page


def test_the_teacher_downloads_every_student_s_report_in_one_file(media):
    _, code, key = a_student_s_finished_run()
    pages.classes.class_store().join(code, "browser-b", "Bo")
    teacher = AppTest.from_file("../../streamlit_app.py", default_timeout=60)
    teacher.run()
    teacher.switch_page("pages/teacher.py")
    teacher.session_state["teacher_class"] = (code, key)
    teacher.run()
    assert not teacher.exception
    button = buttons(teacher)["Download every student's lab report (HTML)"]
    assert button.ignore_rerun and not button.url
    page = media[button.deferred_file_id]()
    assert "Lab reports of the class Period 3" in page and page.count('<section class="report"') == 2
    assert "Ada &lt;b&gt; · with PE" in page and "No report yet: the run is not started." in page
    pages.classes.class_store().delete_class(code, key, TEACHER)
    gone = class_reports(pages.classes.class_store(), code, translator("zh-CN"))
    assert "无法读取班级的报告" in gone and "<script" not in gone
