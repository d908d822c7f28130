"""The session's language through AppTest: English with no link and no browser language, Chinese from `?lang=zh-CN`,
from the browser's language on a first visit or from the sidebar's picker; kept in the address and in every link
the app writes; one session's choice never reaches another's; and a switch in the middle of a run loses nothing."""

import ast
import json
import re
import time

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

import ui.classes
import ui.common
import ui.forms
import ui.language
from tests.helpers import array, keyword_name, wait_until, widget_calls
from tests.helpers.apptest import class_links
from transformer.serving import Run

PICKER = "language_picker"


def open_page(page: str | None = None, **query: str) -> AppTest:
    """A fresh session opening `page` (Home for None) with these query parameters."""
    at = AppTest.from_file("../../streamlit_app.py", default_timeout=60)
    for key, value in query.items():
        at.query_params[key] = value
    if page is not None:
        at.switch_page(page)
    at.run()
    assert not at.exception
    return at


def pick(at: AppTest, language: str) -> None:
    at.selectbox(key=PICKER).set_value(language).run()
    assert not at.exception


def headers(at: AppTest) -> list[str]:
    return [element.value for element in at.main if element.type == "header"]


@pytest.fixture(autouse=True)
def class_database(tmp_path, monkeypatch):
    """Each test on a class database and a server of its own."""
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("LAB_DATABASE_URL", raising=False)
    ui.classes.class_store.clear()
    ui.common.run_registry.clear()
    yield
    ui.classes.class_store.clear()
    ui.common.run_registry.clear()  # closes it: nothing trains on behind the test


def test_with_no_link_and_no_browser_language_the_lab_is_english():
    at = open_page()
    assert headers(at)[:2] == ["Try a trained model now", "A first lesson, about 20 minutes"]
    assert at.selectbox(key=PICKER).value == "en" and "lang" not in at.query_params


def test_a_link_with_lang_opens_the_lab_in_chinese_and_the_address_keeps_it():
    at = open_page(lang="zh-CN")
    assert headers(at)[:2] == ["先试一个训练好的模型", "第一课，约 20 分钟"]
    assert [link.proto.label for link in at.get("page_link")][:2] == ["**训练**", "**结构剖析**"]
    assert at.selectbox(key=PICKER).value == "zh-CN" and at.query_params["lang"] == "zh-CN"
    at.switch_page("pages/checkpoints.py").run()  # another page: still Chinese, the link too
    assert not at.exception and at.title[0].value == "检查点"
    (link,) = at.code
    assert link.value == "?lang=zh-CN"  # relative: AppTest has no browser URL


def test_the_browser_language_counts_on_a_first_visit_and_a_link_counts_over_it(monkeypatch):
    monkeypatch.setattr(ui.language, "_browser_locale", lambda: "zh-Hans-CN")
    assert headers(open_page())[0] == "先试一个训练好的模型"
    assert headers(open_page(lang="en"))[0] == "Try a trained model now"
    monkeypatch.setattr(ui.language, "_browser_locale", lambda: "fr-FR")  # no interface in French: English
    assert headers(open_page())[0] == "Try a trained model now"


def test_english_picked_in_a_chinese_browser_stays_in_the_address(monkeypatch):
    """Without `lang=en` in the address a reload of a Chinese browser's page opens in Chinese again."""
    monkeypatch.setattr(ui.language, "_browser_locale", lambda: "zh-CN")
    at = open_page("pages/checkpoints.py")
    assert at.title[0].value == "检查点" and at.query_params["lang"] == "zh-CN"
    pick(at, "en")
    assert at.title[0].value == "Checkpoints" and at.query_params["lang"] == "en"
    (link,) = at.code  # the page's link to share says English too
    assert link.value == "?lang=en"


def test_a_language_the_lab_does_not_have_in_a_link_is_named_in_a_notice():
    at = open_page(lang="tlh")
    assert [w.value for w in at.warning] == [
        "The link's lang is not one of en, zh-CN, so the page's default is used. Check the link you opened."
    ]
    assert headers(at)[0] == "Try a trained model now" and "lang" not in at.query_params


def test_the_picker_changes_the_language_and_the_address_and_nothing_else():
    at = open_page("pages/checkpoints.py")
    at.button(key="load_reverse").click().run()
    assert at.session_state["in_hand_name"] == "shipped: reverse"
    pick(at, "zh-CN")
    assert at.title[0].value == "检查点" and at.query_params["lang"] == "zh-CN"
    assert at.session_state["in_hand_name"] == "shipped: reverse"  # the model in hand stays
    assert "**当前模型**：内置模型 reverse" in [m.value for m in at.sidebar.markdown]
    assert at.query_params["model"] == "reverse"
    pick(at, "en")
    assert at.title[0].value == "Checkpoints" and "lang" not in at.query_params


def test_the_pickers_label_says_language_in_each_language_the_lab_has(monkeypatch):
    assert ui.language.picker_label() == "Language / 语言"
    monkeypatch.setattr(ui.language, "LANGUAGES", {"en": "English"})
    assert ui.language.picker_label() == "Language"


def test_two_sessions_never_share_a_language():
    chinese, english = open_page(lang="zh-CN"), open_page()
    pick(english, "en")
    chinese.run()
    assert headers(chinese)[0] == "先试一个训练好的模型" and headers(english)[0] == "Try a trained model now"
    pick(chinese, "en")
    pick(english, "zh-CN")
    english.run()
    assert headers(chinese)[0] == "Try a trained model now" and headers(english)[0] == "先试一个训练好的模型"


def test_the_class_link_carries_the_teachers_language():
    at = open_page("pages/teacher.py", lang="zh-CN")
    assert at.title[0].value == "教师：把全班当作一次实验"
    at.text_input(key="teacher_title").set_value("三班")
    at.button(key="teacher_create_button").click().run()
    at.button(key="teacher_key_saved").click().run()
    assert not at.exception
    code = at.session_state["teacher_class"][0]
    assert class_links(at) == [f"/train?class={code}&lang=zh-CN"]


def test_an_english_class_link_leaves_each_student_s_browser_to_pick(monkeypatch):
    """A teacher who picked English in a Chinese browser keeps lang=en in their own address, not in the class link."""
    monkeypatch.setattr(ui.language, "_browser_locale", lambda: "zh-CN")
    at = open_page("pages/teacher.py")
    pick(at, "en")
    at.text_input(key="teacher_title").set_value("Period 3")
    at.button(key="teacher_create_button").click().run()
    at.button(key="teacher_key_saved").click().run()
    assert not at.exception and at.query_params["lang"] == "en"
    code = at.session_state["teacher_class"][0]
    assert class_links(at) == [f"/train?class={code}"]


def loss_curve(at: AppTest) -> np.ndarray:
    """The steps of the Train page's loss curve (its first chart's first trace)."""
    return array(json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]["x"])


def test_switching_language_in_the_middle_of_a_run_loses_nothing():
    at = open_page("pages/train.py")
    torch.set_num_threads(1)
    at.get_by_key("train_positional").set_value("none")  # reverse without positions is never solved: it goes on
    at.get_by_key("train_steps").set_value(5000)
    at.button(key="start_training").click().run()
    run: Run = at.session_state["run"]
    try:
        wait_until(lambda: len(run.rows) >= 2, timeout=60)
        at.run()
        curve_before = loss_curve(at)
        pick(at, "zh-CN")
        assert at.session_state["run"] is run and run.status == "training"  # the same run, going on
        assert at.selectbox(key=PICKER).value == "zh-CN"
        rows = len(run.rows)
        wait_until(lambda: len(run.rows) > rows, timeout=60)
        time.sleep(0.1)
        at.run()
        assert not at.exception and at.session_state["run"] is run and not run.done
        curve_after = loss_curve(at)
        assert len(curve_after) > len(curve_before)  # the curve kept its points and gained new ones
        assert (curve_after[: len(curve_before)] == curve_before).all()
    finally:
        run.stop(wait_s=30)


def test_the_board_and_a_students_class_line_speak_chinese():
    teacher = open_page("pages/teacher.py", lang="zh-CN")
    teacher.text_input(key="teacher_title").set_value("三班")
    teacher.button(key="teacher_create_button").click().run()
    teacher.button(key="teacher_key_saved").click().run()
    teacher.selectbox(key="teacher_split").select_index(1)  # positional encoding: sinusoidal / none
    teacher.selectbox(key="teacher_question").select_index(1)
    teacher.button(key="teacher_save").click().run()
    assert not teacher.exception and teacher.success[0].value.startswith("已保存")
    student = open_page("pages/train.py", lang="zh-CN", **{"class": teacher.session_state["teacher_class"][0]})
    student.text_input(key="class_name").set_value("小明")
    student.button(key="class_join_button").click().run()
    assert not student.exception
    assert student.info[0].value.startswith("班级 **三班** · 你是 **小明** · 分组 **正弦位置编码** · 种子 ")
    question = student.radio(key="class_prediction")
    assert any(m.value.startswith("**先预测**：没有位置编码时") for m in student.markdown)  # shown above the choices
    assert question.label.startswith("先预测：没有位置编码时") and question.options == [  # their name: plain text
        "更快解出",
        "更慢解出",
        "在步数上限内解不出",
    ]
    teacher.run()
    assert not teacher.exception and "**1 名学生** · 未开始：1 人" in [m.value for m in teacher.markdown]
    (students, _flags) = teacher.dataframe[:2]  # the board's tables (the Assignment tab holds a table of pairs)
    assert students.value["state"].tolist() == ["未开始"] and students.value["group"].tolist() == ["正弦位置编码"]


def test_a_bad_link_is_named_in_the_sessions_language():
    at = open_page(lang="zh-CN", model="nope")
    assert [w.value for w in at.warning] == [
        "链接中的 model 不是 copy, reverse, reverse-early, sort 之一，因此页面使用默认值。请检查你打开的链接。"
    ]


def declared(at: AppTest) -> tuple[str, str | None, str | None]:
    """The page's `<html lang>` as the sidebar's script sets it, the uploader's button word its style gives, and the
    words the script gives Streamlit's skip link."""
    (html,) = [h for h in at.sidebar.get("html") if "documentElement.lang" in h.proto.body]
    lang = re.search(r'documentElement\.lang = "([^"]+)"', html.proto.body)
    word = re.search(r"content: \"([^\"]+)\"", html.proto.body)
    skip = re.search(r'replaceChildren\("([^"]+)"\)', html.proto.body)
    return lang.group(1) if lang else "", word.group(1) if word else None, skip.group(1) if skip else None


def test_the_page_declares_the_sessions_language_also_after_a_switch_and_the_uploader_speaks_it():
    at = open_page("pages/checkpoints.py", lang="zh-CN")
    assert declared(at) == ("zh-CN", "上传", "跳到主要内容")
    pick(at, "en")
    assert declared(at) == ("en", None, "Skip to main content")  # the uploader's own English stays; the link's back
    at.switch_page("pages/anatomy.py").run()  # every page: the sidebar declares it
    pick(at, "zh-CN")
    assert declared(at) == ("zh-CN", "上传", "跳到主要内容")


def test_no_multiselect_offers_streamlit_s_english_select_all():
    calls = widget_calls("multiselect")
    assert len(calls) >= 4  # the teacher's open settings, Knockout's heads, Anatomy's dimensions, Compare's values
    assert [place for place, call in calls if keyword_name(call, "select_all") != "SELECT_ALL"] == []
    assert ui.language.SELECT_ALL is False


def test_no_text_field_has_max_chars_whose_browser_code_drops_a_longer_paste_whole():
    """Streamlit's browser code drops a paste that would pass max_chars, and says nothing: a teacher's 88-character
    title left the field empty. The page or the store checks the length instead, and says how long the text is."""
    calls = widget_calls("text_input") + widget_calls("text_area")
    assert len(calls) >= 8
    assert [place for place, call in calls if any(k.arg == "max_chars" for k in call.keywords)] == []


def test_every_expander_is_keyed_so_a_switch_that_rewords_it_leaves_it_open():
    """Chromium closes an expander without a key when its label changes; one inside a form a switch draws again
    (`forms.form_id`) closes with its form whatever its key."""
    calls = widget_calls("expander")
    assert len(calls) >= 12
    assert [place for place, call in calls if not any(k.arg == "key" for k in call.keywords)] == []


def _translates(node: ast.expr) -> bool:
    """Whether a widget's format_func words its options in the session's language: `said(...)`, `_`, or a lambda
    that calls `_`."""
    names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    return bool(names & {"said", "_"})


def _keyed_by(call: ast.Call) -> str | None:
    """The name of the function that makes `call`'s key (`key=worded("x")`: "worded"), else None."""
    key = next((k.value for k in call.keywords if k.arg == "key"), None)
    return getattr(getattr(key, "func", None), "id", None)


def test_every_choice_worded_in_the_session_s_language_is_set_again_after_a_switch():
    calls = [
        (place, call)
        for method in ("selectbox", "radio", "multiselect", "select_slider", "pills", "segmented_control")
        for place, call in widget_calls(method)
        if any(k.arg == "format_func" and _translates(k.value) for k in call.keywords)
    ]
    assert len(calls) >= 12
    assert [place for place, call in calls if _keyed_by(call) != "worded"] == []


def test_after_a_switch_every_worded_choice_on_the_page_is_set_again_in_the_new_words():
    at = open_page("pages/compare.py")
    at.selectbox(key="compare_experiment").set_value("custom").run()
    at.radio(key="compare_norm_first").set_value(True).run()  # a setting of the builder, drawn by draw_setting
    pick(at, "zh-CN")
    assert not at.exception
    for widget in (at.selectbox(key="compare_experiment"), at.selectbox(key="compare_switch")):
        assert widget.proto.set_value, widget.key  # the browser is sent the choice again, in the new words
    assert at.radio(key="compare_norm_first").proto.set_value and at.radio(key="compare_norm_first").value is True
    at.run()  # no switch: the choices are the student's again
    assert not at.selectbox(key="compare_experiment").proto.set_value


def test_a_form_s_choice_sent_in_the_words_of_another_language_is_read_as_its_option():
    """A form sends a choice it had not sent before a language switch as the words the browser showed then: the
    setting, the teacher's split and question, and a prediction are read back as their options."""
    from transformer import settings as spec
    from ui.setting_widgets import setting_value

    positional, norm = spec.setting("positional"), spec.setting("norm_first")
    assert [setting_value(positional, said) for said in ("no PE", "无位置编码", "none")] == ["none"] * 3
    assert setting_value(norm, "pre-norm") is True and setting_value(norm, False) is False
    assert setting_value(positional, "not an option") == "not an option"  # refused later, as any bad value
    question = ["", "positional-none"], lambda key: "none" if not key else f"Without PE, {key}?"
    assert ui.language.option_for("Without PE, positional-none?", *question) == "positional-none"
    assert ui.language.option_for("", *question) == ""  # an option is itself, whatever its words


DROPPED = "切换语言后，这个表单显示的是它的按钮将要使用的设置"


def test_a_switch_tells_under_the_form_it_draws_again_that_what_was_typed_and_not_used_was_dropped():
    at = open_page("pages/train.py")
    assert not any(DROPPED in i.value for i in at.info)
    pick(at, "zh-CN")
    assert [i.value for i in at.info if DROPPED in i.value]  # the form drawn again by the switch says so
    at.run()
    assert not any(DROPPED in i.value for i in at.info)  # for that one redraw only
    home = open_page()
    pick(home, "zh-CN")  # a switch on a page with no form ...
    home.switch_page("pages/train.py").run()
    assert not any(DROPPED in i.value for i in home.info)  # ... tells nothing on the next page's form


def test_a_switch_is_acted_on_once_when_streamlit_calls_the_picker_s_callback_again(monkeypatch):
    """Streamlit calls a widget's callback again in the next run when the run its change started was cut short (a
    fragment's timer on a page that takes its time): the next page then said a switch had dropped its form's
    typing."""
    state = {ui.language.LANGUAGE: "en", PICKER: "zh-CN", ui.forms.SETS: {"train_settings": 0}}
    state[ui.forms.WORDED] = {"train_settings"}
    monkeypatch.setattr(ui.language.st, "session_state", state)
    ui.language._picked()
    assert state[ui.language.LANGUAGE] == "zh-CN" and state[ui.forms.SETS] == {"train_settings": 1}
    ui.language.switch_told()  # the run the switch started ends, cut short
    ui.language._picked()  # called again by the next run
    assert ui.language.SWITCHED not in state and state[ui.forms.SETS] == {"train_settings": 1}
