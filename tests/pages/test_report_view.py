"""The lab report on the pages: Train offers a finished run's report, made at the click with the student's place in
their class and the length test they ran on the run's model (kept with their class report too), and their name and
the time, under a file name of their own; Teacher offers every student's report in one file, and a file that says why
when the class has ended."""

import re
from datetime import UTC, datetime, timedelta

import pytest
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.testing.v1 import AppTest

import ui.classes
import ui.common
import ui.report_view
import ui.state
from tests.helpers.apptest import join_class, open_class_link, open_train, poll_until_done, start
from transformer.classroom import Assignment, Caller, Group
from transformer.classroom.reports import kept_reports
from transformer.i18n import translator
from transformer.limits import MAX_NAME_CHARS
from transformer.naming import run_name
from ui.report_view import REPORT_NAME, class_reports

TINY = {"task": "reverse", "min_len": 3, "max_len": 3, "steps": 30}
GROUPS = Assignment(TINY, frozenset(), "positional", (Group("with PE", "sinusoidal"), Group("no PE", "none")))
TEACHER = Caller(None, "the-teacher's-browser")


pytestmark = pytest.mark.usefixtures("class_server")  # tests/pages/conftest.py


def buttons(at: AppTest) -> dict:
    return {b.proto.label: b.proto for b in at.get("download_button")}


@pytest.fixture
def file_names(media, monkeypatch) -> dict:
    """Each download button's file name, by its deferred file id."""
    names, add_deferred = {}, MediaFileManager.add_deferred  # `media`'s, which keeps the callable

    def keep_name(self, data_callable, mimetype, coordinates, file_name=None, **kwargs):
        file_id = add_deferred(self, data_callable, mimetype, coordinates, file_name, **kwargs)
        names[file_id] = file_name
        return file_id

    monkeypatch.setattr(MediaFileManager, "add_deferred", keep_name)
    return names


def a_student_s_finished_run() -> tuple[AppTest, str, str]:
    """A class with a question; Ada joins, predicts and trains to the end. Returns her page, the class's code and
    key."""
    store = ui.classes.class_store()
    code, key = store.create_class("Period 3", 14, TEACHER)
    store.set_assignment(code, key, GROUPS, TEACHER)
    store.set_question(code, key, "positional-none", TEACHER)
    at = join_class(open_class_link(code), "Ada <b>")
    at.radio(key="class_prediction").set_value("later")
    at.button(key="start_training").click().run()
    poll_until_done(at)
    assert not at.exception
    return at, code, key


def test_a_class_student_s_report_holds_their_place_and_the_length_test_of_their_run(media, file_names):
    at, code, key = a_student_s_finished_run()
    button = buttons(at)["Download the lab report (HTML)"]
    assert button.ignore_rerun and not button.url  # made at the click; the page stays as it is
    assert "-Ada-b-" in file_names[button.deferred_file_id]  # the name they joined with: no other asked for
    assert REPORT_NAME not in {text.key for text in at.text_input}
    page = media[button.deferred_file_id]()
    assert page.startswith("<!DOCTYPE html>") and "<h3>In the class</h3>" in page
    for text in (
        "Period 3",
        "Ada &lt;b&gt;",
        "with PE",
        "Without positional encoding",
        "later",
        "Made by Ada &lt;b&gt;",
    ):
        assert text in page
    assert "No length test was run on this model" in page

    at.switch_page("pages/lengths.py").run()  # the length test of the model in hand: the run's
    assert not at.exception
    (ada,) = ui.classes.class_store().open_board(code, key, TEACHER).students
    kept = kept_reports(ui.classes.class_store(), [ada.id])[ada.id]
    assert kept.lengths and {row["length"] for row in kept.lengths} >= {3}
    at.switch_page("pages/train.py").run()
    page = media[buttons(at)["Download the lab report (HTML)"].deferred_file_id]()
    assert "At lengths it trained on (3)" in page and "No length test was run" not in page


def test_a_length_test_of_another_class_s_run_is_not_kept_with_this_class_s_report(browser):
    """Ada trains in one class, then in a second (a teacher made it for another task), then opens the first class's
    link again (each a new session) with the second class's run in hand: a length test of that run is not the first
    class's, and its report keeps none."""

    def open_class(code: str) -> AppTest:
        at = AppTest.from_file("../../streamlit_app.py", default_timeout=60)
        at.query_params["class"] = code
        at.run()
        return at.switch_page("pages/train.py").run()

    _, first, first_key = a_student_s_finished_run()
    store = ui.classes.class_store()
    second, key = store.create_class("Period 4", 14, TEACHER)
    store.set_assignment(second, key, GROUPS, TEACHER)
    at = open_class(second)
    at.text_input(key="class_name").set_value("Ada")
    at.button(key="class_join_button").click().run()
    at.button(key="start_training").click().run()
    poll_until_done(at)
    at = open_class(first)
    at.switch_page("pages/lengths.py").run()
    assert not at.exception and "lengths" in at.session_state["results"]  # the model in hand: the second's run
    (ada,) = store.open_board(first, first_key, TEACHER).students
    assert kept_reports(store, [ada.id])[ada.id].lengths is None


def test_two_students_outside_a_class_with_the_same_run_download_their_own_named_files(media, file_names):
    ada, other = open_train(), open_train()
    for at in (ada, other):
        start(at, **TINY)  # the same settings: the same run
        poll_until_done(at)
    assert ada.session_state["run"] is other.session_state["run"]
    ada.text_input(key=REPORT_NAME).set_value(" 张伟 <b> ").run()
    ada.switch_page("pages/lengths.py").run()
    ada.switch_page("pages/train.py").run()  # the name is kept through the visit
    assert ada.text_input(key=REPORT_NAME).value == " 张伟 <b> " and not ada.exception
    theirs = {at: buttons(at)["Download the lab report (HTML)"].deferred_file_id for at in (ada, other)}
    name = run_name(ada.session_state["run"].model_config, ada.session_state["run"].data_config)
    assert file_names[theirs[ada]].startswith(f"{name}-张伟-b-") and file_names[theirs[other]].startswith(f"{name}-")
    assert file_names[theirs[ada]] != file_names[theirs[other]]
    assert "Made by 张伟 &lt;b&gt; on 20" in media[theirs[ada]]()
    assert "Made on 20" in media[theirs[other]]()


def test_a_second_run_s_report_carries_the_name_its_model_is_kept_under(media, file_names):
    """Two runs of one model and task: the second's model was kept as "...-2" and its metrics file so named, but its
    report was titled and named as the first's, so a student could not tell their two reports apart."""
    at = open_train()
    for seed in (0, 1):
        start(at, **TINY, seed=seed)
        poll_until_done(at)
    name = at.session_state["train_saved"]["name"]
    assert name == run_name(at.session_state["run"].model_config, at.session_state["run"].data_config) + "-2"
    button = buttons(at)["Download the lab report (HTML)"]
    assert file_names[button.deferred_file_id].startswith(f"{name}-")
    assert f"Lab report: {name}<" in media[button.deferred_file_id]()


def test_a_report_downloaded_minutes_after_the_page_offered_it_carries_its_file_name_s_time(media, file_names):
    """The file's name carries the time the page was drawn, and its report said the time of the click: a page left
    open for five minutes gave "...-20261202-004926-report.html" made "on 2026-12-02 00:54". Both say the first."""
    at = open_train()
    start(at, **TINY)
    poll_until_done(at)
    button = buttons(at)["Download the lab report (HTML)"]
    stamp = re.search(r"-(\d{8}-\d{4})\d\d-report\.html$", file_names[button.deferred_file_id])[1]
    drawn = datetime.strptime(stamp, "%Y%m%d-%H%M")
    later = drawn + timedelta(minutes=5)

    class Later(datetime):
        @classmethod
        def now(cls, tz=None):
            return later.replace(tzinfo=tz or UTC)

    with pytest.MonkeyPatch.context() as patch:  # the click, five minutes on
        patch.setattr(ui.report_view, "datetime", Later)
        report = media[button.deferred_file_id]()
    assert f"Made on {drawn:%Y-%m-%d %H:%M} UTC." in report, re.findall("Made on [^<]*", report)


def test_a_name_longer_than_a_report_holds_is_cut_and_the_page_says_so(media):
    at = open_train()
    start(at, **TINY)
    poll_until_done(at)
    at.text_input(key=REPORT_NAME).set_value("Ada " * 15).run()  # 59 characters once stripped
    assert not at.exception and f"at most {MAX_NAME_CHARS} characters; this one has 59" in at.warning[0].value
    report = media[buttons(at)["Download the lab report (HTML)"].deferred_file_id]()
    assert f"Made by {('Ada ' * 15)[:MAX_NAME_CHARS].strip()} on 20" in report


def test_the_teacher_downloads_every_student_s_report_in_one_file(media):
    _, code, key = a_student_s_finished_run()
    ui.classes.class_store().join(code, "browser-b", "Bo")
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
    assert re.search(r"Made on \d{4}-\d\d-\d\d \d\d:\d\d UTC\.", page)  # AppTest's browser gives no zone: UTC
    ui.classes.class_store().delete_class(code, key, TEACHER)
    gone = class_reports(ui.classes.class_store(), code, translator("zh-CN"), UTC)
    assert "无法读取班级的报告" in gone and "<script" not in gone


def test_a_length_test_survives_a_reload_into_the_report(media, browser):
    """Phones reload often, and a reload starts a new session: the report of the run taken back still has the length
    test run on its model before the reload, and the run's end is told once, not at every reload."""
    at = open_train()
    start(at, task="reverse", min_len=3, max_len=3, steps=30)
    poll_until_done(at)
    at.switch_page("pages/lengths.py").run()
    assert not at.exception and "lengths" in at.session_state["results"]
    reloaded = AppTest.from_file("../../streamlit_app.py", default_timeout=60).run()
    assert [t.value for t in reloaded.toast] == [
        "Your run ended before the reload: its outcome and model are back here."
    ]
    reloaded.switch_page("pages/train.py").run()
    assert not reloaded.exception
    again = AppTest.from_file("../../streamlit_app.py", default_timeout=60).run()
    assert not again.exception and not again.toast  # said once: a toast covers a phone's title
    page = media[buttons(reloaded)["Download the lab report (HTML)"].deferred_file_id]()
    assert "At lengths it trained on (3)" in page and "No length test was run" not in page
