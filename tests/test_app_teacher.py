"""Teacher page: create a class (its link carries no key, the key is shown once), set the assignment, watch the
board, open a class again with its key (a wrong one refused, then rate-limited), export, and delete."""

import re

import pytest
from streamlit.testing.v1 import AppTest

import pages.classes
from transformer.classroom import RunState
from transformer.limits import MAX_KEY_FAILURES


@pytest.fixture(autouse=True)
def class_database(tmp_path, monkeypatch):
    """Each test on a class database of its own."""
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("LAB_DATABASE_URL", raising=False)
    pages.classes.class_store.clear()
    yield
    pages.classes.class_store.clear()


def shown(markdown: str) -> str:
    """Markdown as it reads on the page: text from the store is backslash-escaped to read literally."""
    return re.sub(r"\\(.)", r"\1", markdown)


def open_teacher() -> AppTest:
    at = AppTest.from_file("../streamlit_app.py", default_timeout=30)
    at.run()
    at.switch_page("pages/teacher.py").run()
    assert not at.exception
    return at


def create(at: AppTest, title: str = "Period 3") -> tuple[str, str]:
    at.text_input(key="teacher_title").set_value(title)
    at.button(key="teacher_create_button").click().run()
    assert not at.exception
    link, key = (c.value for c in at.code)
    return link.rsplit("?class=", 1)[1], key


def test_a_new_class_shows_its_link_without_the_key_and_the_key_only_once():
    at = open_teacher()
    code, key = create(at)
    link = at.code[0].value
    assert link.endswith(f"/train?class={code}") and key not in link
    assert "shown only now" in at.warning[0].value
    at.run()
    assert [c.value for c in at.code] == [link]  # the key is gone from the page
    assert "No student has joined yet" in at.markdown[1].value


def test_the_assignment_is_saved_with_its_groups_and_question():
    at = open_teacher()
    code, _ = create(at)
    at.selectbox(key="teacher_split").set_value("positional")
    at.selectbox(key="teacher_question").set_value("positional-none")
    at.button(key="teacher_save").click().run()
    assert not at.exception and at.success
    info = pages.classes.class_store().class_info(code)
    assert [g.label for g in info.assignment.groups] == ["with PE", "no PE"] and info.question == "positional-none"


def test_a_question_that_does_not_fit_the_groups_is_refused():
    at = open_teacher()
    code, _ = create(at)
    at.selectbox(key="teacher_question").set_value("positional-none")  # no groups
    at.button(key="teacher_save").click().run()
    assert "Not saved" in at.error[0].value and pages.classes.class_store().class_info(code).question is None


def test_the_board_shows_each_student_and_their_run():
    at = open_teacher()
    code, _ = create(at)
    store = pages.classes.class_store()
    ada, _ = store.join(code, "browser-a", "Ada <b>"), store.join(code, "browser-b", "Bob")
    store.record_run(ada, RunState("training", 120, None, ({"step": 100, "train_loss": 1.5},)))
    at.run()
    table = at.dataframe[0].value
    assert table["name"].tolist() == ["Ada <b>", "Bob"]  # literal text, in a table
    assert table["state"].tolist() == ["training at step 120", "not started"]
    assert at.markdown[1].value.startswith("**2 students**")


def test_a_class_opens_again_with_its_key_and_a_wrong_key_is_refused_then_rate_limited():
    code, key = create(open_teacher())
    at = open_teacher()
    at.text_input(key="teacher_code").set_value(code)
    for _ in range(MAX_KEY_FAILURES):
        at.text_input(key="teacher_key").set_value("not-the-key")
        at.button(key="teacher_open_button").click().run()
        assert "not the class's teacher key" in shown(at.error[0].value) and "teacher_class" not in at.session_state
    at.text_input(key="teacher_key").set_value(key)  # the right key, too late: refused unchecked for a while
    at.button(key="teacher_open_button").click().run()
    assert "too many wrong teacher keys" in shown(at.error[0].value) and "teacher_class" not in at.session_state


def test_the_right_key_opens_the_board_and_delete_removes_the_class():
    code, key = create(open_teacher())
    at = open_teacher()
    at.text_input(key="teacher_code").set_value(code.upper())
    at.text_input(key="teacher_key").set_value(key)
    at.button(key="teacher_open_button").click().run()
    assert not at.exception and at.session_state["teacher_class"] == (code, key)
    at.checkbox(key="teacher_delete_sure").check().run()
    at.button(key="teacher_delete").click().run()
    assert not at.exception and "teacher_class" not in at.session_state
    with pytest.raises(Exception, match="no class"):
        pages.classes.class_store().class_info(code)
