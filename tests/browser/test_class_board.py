"""A class experiment in real browsers: a teacher creates a class with two groups and a question, four students
join through the link, predict and press Start, and the teacher's board shows them finish, the groups' curves and
the predictions' tally; after a server restart the board, opened again with the key (a wrong one refused), still
shows them, and its CSV export holds the four runs as the students' pages showed them."""

import csv
import re

import pytest
from conftest import ARTIFACTS, IDLE, LabServer, open_page, page_errors, requires_chromium, screenshot, wait_idle
from playwright.sync_api import expect
from test_e2e import button, main

pytestmark = [pytest.mark.browser, requires_chromium]

PROJECTOR = {"width": 1280, "height": 800}
STUDENTS = ["Ada", "Bo", "Cy", "<b>Di</b>"]  # the last is literal text, never markup
FINISHED = re.compile(r"Finished after (\d+) steps")


def open_teacher(context, server: LabServer):
    page = context.new_page()
    open_page(page, server, "teacher")
    return page


def fill(page, key: str, value: str) -> None:
    field = page.locator(f".st-key-{key} input")
    field.fill(value)
    field.press("Tab")


def create_class(page) -> tuple[str, str]:
    """Create a class with PE / no PE groups and the positional-encoding question; returns (link, key)."""
    fill(page, "teacher_title", "Period 3")
    button(page, "teacher_create_button").click()
    codes = main(page).locator("[data-testid='stCode']")
    expect(codes).to_have_count(2, timeout=30_000)  # the link, and the key shown once
    link, key = (c.strip() for c in codes.all_inner_texts())
    page.get_by_role("tab", name="Assignment").click()
    for widget, value in (("teacher_min_len", "3"), ("teacher_max_len", "3"), ("teacher_steps", "120")):
        fill(page, widget, value)
    for widget, option in (("teacher_split", "with PE / no PE"), ("teacher_question", "Without positional")):
        page.locator(f".st-key-{widget}").click()
        page.get_by_role("option", name=option).click()
    button(page, "teacher_save").click()
    wait_idle(page)
    expect(main(page).get_by_text("Saved:")).to_be_visible()
    return link, key


def student_trains(context, link: str, name: str) -> None:
    """A student opens the class link, joins as `name`, predicts, and presses Start."""
    page = context.new_page()
    page.goto(link, wait_until="domcontentloaded")
    page.wait_for_selector(f"{IDLE} h1", timeout=90_000)
    wait_idle(page)
    fill(page, "class_name", name)
    button(page, "class_join_button").click()
    wait_idle(page)
    page.locator(".st-key-class_prediction label").filter(has_text="later").first.click()
    button(page, "start_training").click()
    return page


def open_board(page, server: LabServer, code: str, key: str) -> None:
    page.goto(f"{server.url}/teacher", wait_until="domcontentloaded")
    page.wait_for_selector(f"{IDLE} h1", timeout=90_000)
    fill(page, "teacher_code", code)
    fill(page, "teacher_key", key)
    button(page, "teacher_open_button").click()
    wait_idle(page)


def test_a_class_experiment_on_the_teachers_board(browser, tmp_path, monkeypatch):
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path))  # the class database, kept across the restart below
    server = LabServer(ARTIFACTS / "server-class-board.log")
    server.start()
    try:
        teacher = open_teacher(browser.new_context(viewport=PROJECTOR), server)
        link, key = create_class(teacher)
        code = link.rsplit("class=", 1)[1]
        assert key not in link and link.endswith(f"/train?class={code}")
        link = f"{server.url}/train?class={code}"  # the address the test's server answers on
        pages = [student_trains(browser.new_context(viewport=PROJECTOR), link, name) for name in STUDENTS]
        shown_steps = {}
        for name, page in zip(STUDENTS, pages):
            expect(main(page).get_by_text(FINISHED)).to_be_visible(timeout=120_000)
            shown_steps[name] = int(FINISHED.search(main(page).inner_text()).group(1))
            assert not page_errors(page)
        teacher.get_by_role("tab", name="Board").click()
        board = main(teacher)
        expect(board.get_by_text("4 students · 4 finished")).to_be_visible(timeout=30_000)
        medians = teacher.evaluate(
            "() => [...document.querySelectorAll('.js-plotly-plot')].flatMap(p => p._fullData.map(t => t.name))"
        )
        assert "with PE: median of 2" in medians and "no PE: median of 2" in medians
        tally = board.locator("[data-testid='stTable']")
        expect(tally).to_contain_text(re.compile(r"later\s+4"), use_inner_text=True)  # 4 students predicted "later"
        screenshot(teacher, "class-board")

        server.stop()  # a restart: the class lives in its database
        server.start()
        open_board(teacher, server, code, "not-the-key")
        expect(main(teacher).get_by_text("not the class's teacher key")).to_be_visible()
        open_board(teacher, server, code, key)
        expect(main(teacher).get_by_text("4 students · 4 finished")).to_be_visible(timeout=30_000)
        expect(tally).to_contain_text(re.compile(r"later\s+4"), use_inner_text=True)

        teacher.get_by_role("tab", name="Export and end").click()
        with teacher.expect_download() as download:
            button(teacher, "teacher_download_results").click()
        with open(download.value.path(), newline="") as file:
            rows = list(csv.DictReader(file))
        assert sorted(row["name"] for row in rows) == sorted(STUDENTS)
        assert {row["name"]: int(float(row["steps"])) for row in rows} == shown_steps
        assert {row["state"] for row in rows} == {"finished"} and not page_errors(teacher)
    finally:
        server.stop()
