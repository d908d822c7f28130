"""A class on a task of its own, walked through in Chromium once per language (issue 46): a teacher creates the class,
uploads its task file, makes groups with and without positional encoding and asks the positional question; two
students open the class link, join, see the question name the class's task, train, and download their lab reports;
the board shows both finished in the page's language; the student's finished page and the board have no WCAG 2.2
A/AA violation (axe-core); the CSV exports (UTF-8 with a byte-order mark) and the combined report hold both
students."""

import csv
import io
import re
from pathlib import Path

import pytest
from conftest import choose, downloaded, open_tab, page_errors, requires_chromium, screenshot, wcag_violations
from playwright.sync_api import expect

from harness.chromium import VIEWPORT
from harness.page import IDLE, button, fill, main, text_contrast, wait_idle
from transformer.i18n import N_, translator

pytestmark = requires_chromium

LANGUAGES = ("en", "zh-CN")
TASK_FILE = "双写词 lesson 7.csv"  # a long name with Chinese characters: it names models, reports and the question
SYMBOLS = "abcd"
PAIRS = [a + b for a in SYMBOLS for b in SYMBOLS] + [a + b + c for a in SYMBOLS for b in SYMBOLS for c in SYMBOLS]
TASK = "source,target\n" + "".join(f"{' '.join(s)},{' '.join(c + c for c in s)}\n" for s in PAIRS)
STUDENTS = ("张伟", "Ana")
TROLL = "**troll** -- <b>x</b>"  # joins only to be removed
STEPS = "20"  # each run: seconds
ENGLISH_ON_A_BOARD = ("group", "state", "sinusoidal PE", "no PE")


def words(language: str, text: str, **values: object) -> str:
    """`text` as the page says it in `language`."""
    return translator(language).gettext(text, **values)


def opening(language: str, template: str, name: str) -> str:
    """What `template` says in `language` before its placeholder `name` (its other placeholders 0)."""
    fields = {field: 0 for field in re.findall(r"\{(\w+)", template) if field != name}
    return words(language, template, **fields, **{name: "\0"}).split("\0")[0]


def open_at(context, url: str):
    page = context.new_page()
    page.goto(url, wait_until="domcontentloaded")
    page.wait_for_selector(f"{IDLE} h1", timeout=90_000)
    wait_idle(page)
    return page


def teacher_creates_the_class(page, language: str, task_path: Path) -> str:
    """Create the class, give it the task file, groups with / without PE and the positional question; its link."""
    fill(page, "teacher_title", "三班" if language == "zh-CN" else "Period 3")
    button(page, "teacher_create_button").click()
    copy = page.get_by_role("button", name=words(language, "Copy to clipboard"), exact=True)  # Streamlit's, reworded
    expect(copy.first).to_be_attached(timeout=30_000)
    button(page, "teacher_key_saved").click()
    expect(page.locator(".st-key-teacher_projector img")).to_be_visible(timeout=30_000)  # the link's QR code
    wait_idle(page)
    link = page.locator(".st-key-teacher_link").inner_text().strip()
    assert "/train?class=" in link and ("lang=zh-CN" in link) == (language == "zh-CN"), link

    open_tab(page, words(language, N_("Assignment")))
    fill(page, "teacher_steps", STEPS)
    groups = f"{words(language, N_('sinusoidal PE'))} / {words(language, N_('no PE'))}"
    choose(page, "teacher_split", groups)
    question = N_("Without positional encoding, {task} will be solved:")
    choose(page, "teacher_question", opening(language, question, "task"))
    button(page, "teacher_save").click()
    wait_idle(page)
    saved = N_("Saved: students see it on Train from their next page load.")
    expect(main(page).get_by_text(words(language, saved))).to_be_visible()

    expander = N_("Give the class a task of its own, from examples")
    main(page).locator("summary").filter(has_text=words(language, expander)).click()
    page.locator(".st-key-teacher_task_file input[type=file]").set_input_files(task_path)
    button(page, "teacher_task_give").click()
    wait_idle(page)
    given = opening(language, N_("The class trains its own task, {summary}."), "summary")
    expect(main(page).get_by_text(given)).to_be_visible()
    shown = page.locator(".st-key-teacher_question input")  # the saved question, naming the class's task now
    expect(shown).to_have_value(words(language, question, task=TASK_FILE))
    return link


def student_trains(context, link: str, language: str, name: str) -> str:
    """A student opens the link, joins as `name`, answers the question (which names the class's task), trains to
    the end and downloads their lab report; the report's file name."""
    page = open_at(context, link)
    fill(page, "class_name", name)
    button(page, "class_join_button").click()
    wait_idle(page)
    for words_of in (".st-key-train_seed input", ".st-key-train_seed [data-testid='stWidgetLabel'] p"):
        assert text_contrast(page.locator(words_of)) >= 4.5, words_of  # locked by the class, and still read
    question = page.locator(".st-key-class_prediction")
    expect(question).to_contain_text(TASK_FILE)  # the class's own task, never the assignment's reverse
    assert "reverse" not in question.inner_text()
    question.locator("label").filter(has_text=words(language, N_("later"))).first.click()
    button(page, "start_training").click()
    finished = N_("Finished after {steps} steps in {seconds:.1f} s, because the step budget ran out: {scores}.")
    expect(main(page).get_by_text(opening(language, finished, "steps"))).to_be_visible(timeout=120_000)
    wait_idle(page)
    assert not wcag_violations(page)  # a class's finished run: its prediction, curves and report, read by all
    file_name, report = downloaded(page, "download_report")
    assert file_name.endswith(".html") and not page_errors(page), page_errors(page)
    text = report.decode()
    assert f'<html lang="{language}">' in text and name in text
    return file_name


def student_changes_browser(context, teacher, link: str, language: str, name: str) -> None:
    """The student `name` opens the link in another browser: their name is taken there until the teacher, on the
    board, gives them a rejoin code; with it they join as themselves."""
    page = open_at(context, link)
    fill(page, "class_name", name)
    button(page, "class_join_button").click()
    wait_idle(page)
    taken = N_(
        "someone in this class already has this name; pick another, or, if it is you in another browser, ask your "
        "teacher for a rejoin code"
    )
    expect(main(page).get_by_text(words(language, taken))).to_be_visible()
    main(teacher).locator("summary").filter(has_text=words(language, N_("A student changed browser"))).click()
    choose(teacher, "teacher_rejoin_name", name)
    wait_idle(teacher)
    button(teacher, "teacher_rejoin").click()
    wait_idle(teacher)
    given = N_(
        "{name} can join from the other browser under the same name, with a rejoin code. Tell it to them alone: "
        "whoever has it takes their name, so keep it off the projector."
    )
    said = main(teacher).locator("[data-testid='stAlertContentSuccess']")
    expect(said).to_contain_text(words(language, given, name=name))
    expect(said.locator("code")).to_have_count(0)  # not on the projected page: only in its popover, when asked
    teacher.locator(".st-key-teacher_rejoin_shown button").first.click()
    shown = teacher.locator("[data-testid='stPopoverBody'] code")
    expect(shown).to_be_visible()
    rejoin = shown.inner_text()
    teacher.keyboard.press("Escape")
    main(page).locator("summary").filter(has_text=words(language, N_("Joined before, from another browser?"))).click()
    fill(page, "class_rejoin", rejoin)
    button(page, "class_join_button").click()
    wait_idle(page)
    you_are = opening(language, N_("you are **{name}**"), "name").strip("*")
    expect(main(page).get_by_text(you_are + name)).to_be_visible()


def teacher_removes_a_student(context, teacher, link: str, language: str) -> None:
    """Someone joins under a name made to disrupt the board; the teacher removes it, and that browser's page says
    so at its next redraw, with the join form again."""
    page = open_at(context, link)
    fill(page, "class_name", TROLL)
    button(page, "class_join_button").click()
    wait_idle(page)
    main(teacher).locator("summary").filter(has_text=words(language, N_("Remove a student"))).click()
    choose(teacher, "teacher_remove_name", TROLL)
    wait_idle(teacher)
    teacher.locator(".st-key-teacher_remove_sure label").click()
    wait_idle(teacher)
    button(teacher, "teacher_remove").click()
    wait_idle(teacher)
    removed = N_("Removed {name} from the class, with what they recorded.")
    said = teacher.locator(".st-key-teacher_remove_expander [data-testid='stAlertContentSuccess']")  # by the button
    expect(said).to_have_text(words(language, removed, name=TROLL).replace("--", "-\u2060-"))  # the name as typed
    sure = teacher.locator(".st-key-teacher_remove_sure input")
    expect(sure).not_to_be_checked()  # each removal checked anew
    open_tab(teacher, words(language, N_("Board")))
    counts = translator(language).ngettext("{n} student", "{n} students", len(STUDENTS))
    expect(main(teacher).get_by_text(counts, exact=False).first).to_be_visible()
    button(page, "start_training").click()  # the page drawn before: its next run finds no seat, and says why
    wait_idle(page)
    gone = N_(
        "Your teacher removed your name from this class, with what you recorded. To take part again, join under a "
        "name of yours."
    )
    expect(main(page).get_by_text(words(language, gone))).to_be_visible()
    expect(page.locator(".st-key-class_name input")).to_be_visible()
    assert not page_errors(page), page_errors(page)
    assert not sure.is_checked() and said.is_visible()  # still, after the board's redraws meanwhile (every 2 s)


def csv_names(data: bytes) -> set[str]:
    """The names in a CSV export's name column; it must start with UTF-8's byte-order mark."""
    assert data.startswith(b"\xef\xbb\xbf")  # Excel on a Chinese Windows then reads the names right
    return {row["name"] for row in csv.DictReader(io.StringIO(data.decode("utf-8-sig")))}


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_class_on_its_own_task_walks_through_in_its_language(new_context, lab_server, language, tmp_path):
    task_path = tmp_path / TASK_FILE
    task_path.write_text(TASK)
    query = "" if language == "en" else f"?lang={language}"
    log_start = len(lab_server.log_text())
    contexts = [new_context(viewport=VIEWPORT) for _ in range(1 + len(STUDENTS))]
    try:
        teacher = open_at(contexts[0], f"{lab_server.url}/teacher{query}")
        link = teacher_creates_the_class(teacher, language, task_path)
        reports = [student_trains(c, link, language, n) for c, n in zip(contexts[1:], STUDENTS)]
        assert len(set(reports)) == len(STUDENTS), reports  # two students' reports never share a file name

        open_tab(teacher, words(language, N_("Board")))
        board = main(teacher)
        counts = translator(language).ngettext("{n} student", "{n} students", 2)
        finished = words(language, N_("{n} {state}"), n=2, state=words(language, N_("finished")))
        expect(board.get_by_text(f"{counts} · {finished}")).to_be_visible(timeout=60_000)
        expect(board.get_by_text(TASK_FILE).first).to_be_visible()  # the predictions' question names the task
        wait_idle(teacher)
        grid = board.locator("[data-testid='stDataFrame']").first  # the students' table, as its screen-reader table
        headers = grid.locator("th").evaluate_all("cells => cells.map(c => c.textContent)")
        cells = grid.locator("td").evaluate_all("cells => cells.map(c => c.textContent)")
        legends = teacher.evaluate(
            "() => [...document.querySelectorAll('.js-plotly-plot')].flatMap(p => p._fullData.map(t => t.name))"
        )
        assert words(language, N_("group")) in headers, headers
        assert set(STUDENTS) <= set(cells), cells
        shown = "\n".join([*headers, *cells, *legends, board.inner_text()])
        if language == "zh-CN":
            english = [word for word in ENGLISH_ON_A_BOARD if word in shown]
            assert not english, f"English on the Chinese board: {english}"
            screenshot(teacher, "board-zh-CN")
        assert "reverse" not in shown and not page_errors(teacher), page_errors(teacher)
        assert not wcag_violations(teacher)  # the board a teacher projects
        student_changes_browser(new_context(viewport=VIEWPORT), teacher, link, language, STUDENTS[0])
        teacher_removes_a_student(new_context(viewport=VIEWPORT), teacher, link, language)

        open_tab(teacher, words(language, N_("Export and end")))
        for export in ("results", "metric_rows", "predictions"):
            _, data = downloaded(teacher, f"teacher_download_{export}")
            assert csv_names(data) == set(STUDENTS), export
        _, combined = downloaded(teacher, "teacher_download_reports")
        sections = combined.decode().split('<section class="report"')[1:]
        assert len(sections) == len(STUDENTS)
        for name in STUDENTS:  # each student's section holds their report, not why there is none
            (section,) = [s for s in sections if name in s]
            assert words(language, N_("Settings")) in section
        assert not page_errors(teacher), page_errors(teacher)
    finally:
        for context in contexts:
            context.close()
    new_log = lab_server.log_text()[log_start:]
    assert "Traceback" not in new_log, f"the server logged a traceback:\n{new_log[-3000:]}"
