"""Every capability with every other (issue 46's matrix): each task source (a built-in task, a gallery task, a task
file, typed pairs), trained alone and in a class, in English and in Chinese. In each: a run starts and finishes,
Decoding decodes a held-out input, the student's report downloads, and in a class the teacher's exports (the CSVs
and the combined report) download; every student appears in each by name. A task from examples tested past its
own lengths says so on the Lengths page."""

import csv
import io
import re

import pytest
import torch
from streamlit.testing.v1 import AppTest

import ui.classes
from tests.helpers import wait_until
from tests.helpers.apptest import kept, poll_until_done
from transformer.classroom.recorder import ClassRecorder
from transformer.i18n import N_, translator
from transformer.task_file import read_task_file
from ui.report_view import REPORT_NAME

SOURCES = ("built-in", "gallery", "file", "typed")
LANGUAGES = ("en", "zh-CN")
STEPS = 20  # every run: a few seconds on a busy 2-core machine
BUILT_IN = {"task": "reverse", "min_len": 3, "max_len": 3}
GALLERY = {"task": "dedup", "min_len": 4, "max_len": 5}
# a task file of Chinese symbols whose name is long enough that a no-PE student's model name passes 30 characters
FILE_NAME = "doubled_zh.csv"
SYMBOLS = "一二三四"
FILE = "source,target\n" + "\n".join(
    f"{' '.join(s)},{' '.join(c + c for c in s)}"
    for s in [a + b for a in SYMBOLS for b in SYMBOLS] + [a + b + c for a in SYMBOLS for b in SYMBOLS for c in SYMBOLS]
)
NAMES = {"en": ("Ada Lovelace", "张伟"), "zh-CN": ("张伟", "Ada Lovelace")}  # a Chinese name in every class


@pytest.fixture(autouse=True)
def one_thread(class_server):  # tests/pages/conftest.py: a class database and run registry of the test's own
    """Train on one torch thread, as a busy 2-core machine does best, and restore the count after."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def open_page(page: str, language: str, **params: str) -> AppTest:
    """The app opened at `page` with the link's `params`, `?lang=` included for Chinese."""
    at = AppTest.from_file("../../streamlit_app.py", default_timeout=60)
    at.query_params.update(params)
    if language != "en":
        at.query_params["lang"] = language
    at.run()
    at.switch_page(page).run()
    assert not at.exception
    return at


def words(language: str, text: str, **values) -> str:
    """`text` as the page says it in `language`."""
    return translator(language).gettext(text, **values)


def unescaped(markdown: str) -> str:
    return re.sub(r"\\(.)", r"\1", markdown)


def download(at: AppTest, media: dict, key: str):
    """What the download button `key` hands the browser when clicked."""
    (button,) = [b.proto for b in at.get("download_button") if b.proto.id.endswith(f"-{key}")]
    data = media[button.deferred_file_id] if button.deferred_file_id else None
    return data() if callable(data) else data


def csv_rows(data: bytes) -> list[dict]:
    assert data.startswith(b"\xef\xbb\xbf")  # UTF-8 with a byte-order mark: Excel keeps Chinese names
    return list(csv.DictReader(io.StringIO(data.decode("utf-8-sig"))))


def give_task_of_examples(at: AppTest, prefix: str, source: str) -> None:
    """Read the task file, or the table's typed pairs, under the page's `prefix` ("train" or "teacher")."""
    if source == "file":
        at.file_uploader(key=f"{prefix}_task_file_0").set_value((FILE_NAME, FILE.encode(), "text/csv")).run()
    else:
        at.button(key=f"{prefix}_use_table").click().run()
    assert not at.exception and not at.error


def decode_a_held_out_input(at: AppTest) -> None:
    """On Decoding, the model just trained decodes its task's first held-out input to the end."""
    at.switch_page("pages/decoding.py").run()
    assert not at.exception and not at.error
    assert at.session_state["in_hand_name"].startswith("trained:")
    text, origin = at.session_state["decode_input_origin"]
    assert origin == N_("the first held-out example of its task") and at.text_input(key="decode_input").value == text
    at.button(key="decode_run_to_end").click().run()
    assert not at.exception and not at.error
    assert at.success and at.session_state["decode_step"] == len(kept(at, "decoding").value["steps"]) - 1


def report_of(at: AppTest, media: dict) -> str:
    at.switch_page("pages/train.py").run()
    assert not at.exception
    return download(at, media, "download_report")


# ---- alone


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("source", SOURCES)
def test_a_student_alone_trains_decodes_and_downloads_their_report(media, source, language):
    at = open_page("pages/train.py", language)
    name = NAMES[language][0]
    if source in ("built-in", "gallery"):
        preset = BUILT_IN if source == "built-in" else GALLERY
        at.selectbox(key="train_task").set_value(preset["task"]).run()  # its default run first, as in a browser
        for setting in ("min_len", "max_len"):
            at.number_input(key=f"train_{setting}").set_value(preset[setting])
    else:
        give_task_of_examples(at, "train", source)
    at.number_input(key="train_steps").set_value(STEPS)
    at.button(key="start_training").click().run()
    assert not at.exception and not at.error
    run = at.session_state["run"]
    poll_until_done(at)
    assert run.error is None and run.result.steps == STEPS
    if source in ("file", "typed"):
        assert run.data_config.pairs == at.session_state["train_own_task"]

    at.text_input(key=REPORT_NAME).set_value(name).run()  # asked beside the report's download, once a run ends
    decode_a_held_out_input(at)
    report = report_of(at, media)
    assert f'<html lang="{language}">' in report
    made_by = words(language, N_("Made by {name} on {date}."), name=name, date="\0").split("\0")[0]
    assert made_by in report  # the name given, in the report's language


# ---- in a class


def teacher_s_class(language: str, source: str) -> tuple[AppTest, str, str]:
    """A class created on the Teacher page in `language`: groups with and without positional encoding, the question
    about them, and the task from `source`, each run STEPS steps. Returns the teacher's page, the class's code and
    key."""
    at = open_page("pages/teacher.py", language)
    at.text_input(key="teacher_title").set_value("三班" if language == "zh-CN" else "Period 3")
    at.button(key="teacher_create_button").click().run()
    code, key = at.session_state["teacher_class"]
    at.button(key="teacher_key_saved").click().run()
    preset = dict(GALLERY if source == "gallery" else BUILT_IN)
    at.selectbox(key="teacher_task").set_value(preset.pop("task")).run()  # its default run first, as in a browser
    for setting, value in {**preset, "steps": STEPS}.items():
        at.get_by_key(f"teacher_{setting}").set_value(value)
    at.selectbox(key="teacher_split").set_value("positional")
    at.selectbox(key="teacher_question").set_value("positional-none")
    at.button(key="teacher_save").click().run()
    assert not at.exception and not at.error and at.success
    if source in ("file", "typed"):
        give_task_of_examples(at, "teacher", source)
        at.button(key="teacher_task_give").click().run()
        assert not at.exception and not at.error
    return at, code, key


def the_class_s_task(code: str) -> str:
    info = ui.classes.class_store().class_info(code)
    return info.task.name if info.task is not None else info.assignment.preset["task"]


def join(code: str, language: str, name: str) -> AppTest:
    """A student opens the class link, joins as `name`, answers the question (which names the class's task) and
    presses Start."""
    at = open_page("pages/train.py", language, **{"class": code})
    at.text_input(key="class_name").set_value(name)
    at.button(key="class_join_button").click().run()
    assert not at.exception and not at.error
    question = at.radio(key="class_prediction")
    assert the_class_s_task(code) in unescaped(question.label)
    question.set_value("later")
    at.button(key="start_training").click().run()
    assert not at.exception and not at.error
    return at


@pytest.mark.parametrize(
    "source, language",
    [  # every source and every language by default, in half the pairs; the other half with -m slow
        pytest.param(source, language, marks=[pytest.mark.slow] if (i + j) % 2 else [])
        for i, source in enumerate(SOURCES)
        for j, language in enumerate(LANGUAGES)
    ],
)
def test_a_class_trains_decodes_and_every_student_is_in_every_export(media, source, language):
    teacher, code, key = teacher_s_class(language, source)
    names = NAMES[language]
    students = [join(code, language, name) for name in names]  # both train at once
    store = ui.classes.class_store()
    for at in students:
        poll_until_done(at)
        run = at.session_state["run"]
        assert run.error is None and run.result.steps == STEPS
        assert run.data_config.pairs == store.class_info(code).task
    board = lambda: store.open_board(code, key)  # noqa: E731
    wait_until(lambda: all(r.status == "finished" for r in board().runs.values()) and len(board().runs) == 2)

    for at, name in zip(students, names):
        decode_a_held_out_input(at)
        report = report_of(at, media)
        assert f'<html lang="{language}">' in report and name in report

    teacher.run()
    assert not teacher.exception
    finished = words(language, N_("finished"))
    for export in ("results", "metric_rows", "predictions"):
        rows = csv_rows(download(teacher, media, f"teacher_download_{export}"))
        assert {row["name"] for row in rows} == set(names), export
        if export == "results":
            assert [row["state"] for row in rows] == [finished, finished]
    reports = download(teacher, media, "teacher_download_reports")
    sections = reports.split('<section class="report"')[1:]
    assert len(sections) == 2
    for section, name in zip(sections, names):
        assert name in section and words(language, N_("Settings")) in section  # a report, not why there is none


# ---- what a combination cannot do


def test_a_length_test_of_a_task_file_s_model_offers_the_file_s_own_lengths():
    at = open_page("pages/train.py", "en")
    give_task_of_examples(at, "train", "file")
    at.number_input(key="train_steps").set_value(STEPS)
    at.button(key="start_training").click().run()
    poll_until_done(at)
    at.switch_page("pages/lengths.py").run()
    assert not at.exception
    task = read_task_file(FILE.encode(), FILE_NAME)
    slider = at.slider(key="lengths_range")
    assert (slider.min, slider.max, slider.value) == (task.min_len, task.max_len, (task.min_len, task.max_len))
    assert kept(at, "lengths").value.scores["length"].tolist() == list(range(task.min_len, task.max_len + 1))
    assert not any("leaves out" in unescaped(info.value) for info in at.info)


def test_a_report_downloaded_as_its_run_ends_counts_that_run_with_the_class(media, monkeypatch):
    """The class recorder writes runs every few seconds: a report downloaded before it had written this run's end
    counted the class without it."""
    monkeypatch.setattr(ClassRecorder, "record_once", lambda self: None)  # no writes but those the pages ask for
    teacher = open_page("pages/teacher.py", "en")
    teacher.text_input(key="teacher_title").set_value("Period 3")
    teacher.button(key="teacher_create_button").click().run()
    code = teacher.session_state["teacher_class"][0]
    at = open_page("pages/train.py", "en", **{"class": code})
    at.text_input(key="class_name").set_value("Ada")
    at.button(key="class_join_button").click().run()
    at.button(key="start_training").click().run()
    assert not at.exception and not at.error
    poll_until_done(at)
    assert at.session_state["run"].result.reason == "solved"
    report = report_of(at, media)
    assert "No run has finished yet" not in report and "Solved: 1 of 1." in report
