"""A class experiment in real browsers: a teacher creates a class (its key shown alone until saved, then the
projector view: the link and its QR code, never the key) with two groups and a question, four students join
through the link (one on a phone, where the class's tally of predictions fits without sideways scrolling), predict
and press Start, and the teacher's board shows them finish, the groups' curves and the
predictions' tally; exported at once, without reopening the board, the results hold the four runs and the page
stays on its tab; after a server restart the board, opened again with the key (a wrong one refused), still shows
them, and its CSV export holds the four runs as the students' pages showed them. A run training when its server is
killed reads "lost" after the restart, never "training"."""

import csv
import re

from conftest import choose, open_page, open_tab, page_errors, requires_chromium, screenshot
from playwright.sync_api import expect
from sqlalchemy import select

from harness.page import IDLE, button, fill, main, wait_idle
from harness.paths import ARTIFACTS
from harness.server import LabServer
from transformer.classroom import Assignment, ClassStore
from transformer.classroom.schema import classes

pytestmark = requires_chromium

PROJECTOR, PHONE = {"width": 1280, "height": 800}, {"width": 390, "height": 844}
STUDENTS = ["Ada", "Bo", "Cy", "<b>Di</b>"]  # the last is literal text, never markup, and joins on a phone
FINISHED = re.compile(r"Finished after (\d+) steps")
SIDEWAYS = "t => { const s = t.querySelector('table').parentElement; return s.scrollWidth - s.clientWidth; }"


def open_teacher(context, server: LabServer):
    page = context.new_page()
    open_page(page, server, "teacher")
    return page


def create_class(page) -> tuple[str, str]:
    """Create a class with PE / no PE groups and the positional-encoding question; returns (link, key)."""
    fill(page, "teacher_title", "Period 3")
    button(page, "teacher_create_button").click()
    codes = main(page).locator("[data-testid='stCode']")
    expect(codes).to_have_count(1, timeout=30_000)  # the key, shown once, alone: no link, no QR code
    key = codes.inner_text().strip()
    assert "?class=" not in main(page).inner_text() and not main(page).locator("img").count()
    button(page, "teacher_key_saved").click()
    projector = page.locator(".st-key-teacher_projector")
    expect(projector.locator("img")).to_be_visible(timeout=30_000)  # the link's QR code
    wait_idle(page)
    link = page.locator(".st-key-teacher_link").inner_text().strip()
    assert key not in page.locator("[data-testid='stApp']").inner_text()  # the key is gone for good
    open_tab(page, "Assignment")
    for widget, value in (("teacher_min_len", "3"), ("teacher_max_len", "3"), ("teacher_steps", "120")):
        fill(page, widget, value)
    for widget, option in (("teacher_split", "sinusoidal PE / no PE"), ("teacher_question", "Without positional")):
        choose(page, widget, option)
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


def download(page, key: str) -> list[dict]:
    """Click the download button with this key; the rows of the CSV file it gives."""
    with page.expect_download() as download:
        button(page, key).click()
    with open(download.value.path(), newline="", encoding="utf-8-sig") as file:
        return list(csv.DictReader(file))


def open_board(page, server: LabServer, code: str, key: str) -> None:
    page.goto(f"{server.url}/teacher", wait_until="domcontentloaded")
    page.wait_for_selector(f"{IDLE} h1", timeout=90_000)
    fill(page, "teacher_code", code)
    fill(page, "teacher_key", key)
    button(page, "teacher_open_button").click()
    wait_idle(page)


def test_a_class_experiment_on_the_teachers_board(new_context, tmp_path, monkeypatch):
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path))  # the class database, kept across the restart below
    server = LabServer(ARTIFACTS / "server-class-board.log")
    server.start()
    try:
        teacher = open_teacher(new_context(viewport=PROJECTOR), server)
        link, key = create_class(teacher)
        code = link.rsplit("class=", 1)[1]
        assert key not in link and link.endswith(f"/train?class={code}")
        link = f"{server.url}/train?class={code}"  # the address the test's server answers on
        sizes = [PROJECTOR] * (len(STUDENTS) - 1) + [PHONE]
        pages = [student_trains(new_context(viewport=size), link, name) for name, size in zip(STUDENTS, sizes)]
        shown_steps = {}
        for name, page in zip(STUDENTS, pages):
            expect(main(page).get_by_text(FINISHED)).to_be_visible(timeout=120_000)
            shown_steps[name] = int(FINISHED.search(main(page).inner_text()).group(1))
            assert not page_errors(page)
        phone_tally = main(pages[-1]).locator("[data-testid='stTable']").filter(has_text="later")
        expect(phone_tally).to_be_visible()  # the class's predictions, under the student's own
        assert phone_tally.evaluate(SIDEWAYS) <= 1, "the tally scrolls sideways on a phone"
        export_tab = open_tab(teacher, "Export and end")  # the exports read the database at the click
        rows = download(teacher, "teacher_download_results")
        assert {row["name"]: int(float(row["steps"])) for row in rows} == shown_steps
        assert {row["state"] for row in rows} == {"finished"}
        expect(export_tab).to_have_attribute("aria-selected", "true")  # the download left the page where it was
        assert len(download(teacher, "teacher_download_metric_rows")) >= len(STUDENTS)

        open_tab(teacher, "Board")
        board = main(teacher)
        expect(board.get_by_text("4 students · 4 finished")).to_be_visible(timeout=30_000)
        expect(board.get_by_text("Saved:")).to_be_hidden()  # said under the assignment's form, not above the board
        medians = teacher.evaluate(
            "() => [...document.querySelectorAll('.js-plotly-plot')].flatMap(p => p._fullData.map(t => t.name))"
        )
        assert "sinusoidal PE: median of 2" in medians and "no PE: median of 2" in medians
        tally = board.locator("[data-testid='stTable']")
        expect(tally).to_contain_text(re.compile(r"later\s+4"), use_inner_text=True)  # 4 students predicted "later"
        screenshot(teacher, "class-board")

        server.stop()  # a restart: the class lives in its database
        server.start()
        open_board(teacher, server, code, "not-the-key")
        expect(main(teacher).get_by_text("not its teacher key")).to_be_visible()
        open_board(teacher, server, code, key)
        expect(main(teacher).get_by_text("4 students · 4 finished")).to_be_visible(timeout=30_000)
        expect(tally).to_contain_text(re.compile(r"later\s+4"), use_inner_text=True)

        open_tab(teacher, "Export and end")
        rows = download(teacher, "teacher_download_results")
        assert sorted(row["name"] for row in rows) == sorted(STUDENTS)
        assert {row["name"]: int(float(row["steps"])) for row in rows} == shown_steps
        assert {row["state"] for row in rows} == {"finished"} and not page_errors(teacher)
    finally:
        server.stop()


def test_a_run_training_when_its_server_is_killed_reads_lost_on_the_board_and_in_the_export(
    new_context, tmp_path, monkeypatch
):
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path))  # the class database, kept across the kill
    store = ClassStore(f"sqlite:///{tmp_path / 'classes.sqlite3'}")
    code, key = store.create_class("Period 4")
    never_solves = {"task": "reverse", "positional": "none", "steps": 5000, "time_budget_s": 120}
    store.set_assignment(code, key, Assignment(never_solves))
    store.close()
    server = LabServer(ARTIFACTS / "server-class-lost.log")
    server.start()
    try:
        student = new_context(viewport=PROJECTOR).new_page()
        here = server.url.replace("127.0.0.1", "localhost")  # as a teacher trying it on their own computer opens it
        student.goto(f"{here}/train?class={code}", wait_until="domcontentloaded")
        student.wait_for_selector(f"{IDLE} h1", timeout=90_000)
        fill(student, "class_name", "Ada")
        button(student, "class_join_button").click()
        wait_idle(student)
        button(student, "start_training").click()
        teacher = open_teacher(new_context(viewport=PROJECTOR), server)
        open_board(teacher, server, code, key)
        expect(main(teacher).get_by_text("1 student · 1 training")).to_be_visible(timeout=60_000)
        alone = new_context(viewport=PROJECTOR).new_page()  # a student outside any class, on a run of add
        open_page(alone, server, "train")
        choose(alone, "train_task", "add")
        fill(alone, "train_seed", 321)
        button(alone, "start_training").click()
        expect(main(alone).get_by_text(re.compile(r"Training: step [1-9]"))).to_be_visible(timeout=60_000)
        server.process.kill()  # SIGKILL: nothing of the server's gets to say goodbye
        server.process.wait()
        away = student.get_by_text("The server is not answering: it may be restarting")  # not Streamlit's own words
        expect(away).to_be_visible(timeout=60_000)
        expect(student.get_by_text("streamlit run streamlit_app.py")).to_be_visible()  # the lab's command
        server.start()  # the same address: the same server, restarted
        lost = main(alone).get_by_text("run of add (seed 321)")
        expect(lost).to_be_visible(timeout=60_000)  # the tab reconnected by itself
        alone.reload()  # its browser id (Streamlit's XSRF cookie) outlives the server: the next one knows its run
        expect(lost).to_be_visible(timeout=60_000)  # and says so again, if the reload resumed the tab's session too
        expect(alone.locator(".st-key-train_seed input")).to_have_value("321")  # the form has its settings again
        open_board(teacher, server, code, key)
        expect(main(teacher).get_by_text("1 student · 1 lost")).to_be_visible(timeout=30_000)
        open_tab(teacher, "Export and end")
        (row,) = download(teacher, "teacher_download_results")
        assert re.fullmatch(r"lost at step \d+", row["state"]) and int(row["state"].rsplit(" ", 1)[1]) > 0
        assert not page_errors(teacher)
    finally:
        server.stop()


def test_a_double_click_on_create_makes_one_class_whose_code_the_key_screen_shows(new_context, tmp_path, monkeypatch):
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path))  # a database of its own, to count its classes
    with LabServer(ARTIFACTS / "server-double-create.log") as server:
        page = new_context(viewport=PROJECTOR).new_page()
        open_page(page, server, "teacher")
        page.locator(".st-key-teacher_title input").fill("Period 5")
        button(page, "teacher_create_button").dblclick()
        expect(main(page).locator("[data-testid='stCode']")).to_have_count(1, timeout=30_000)
        wait_idle(page)
        store = ClassStore(f"sqlite:///{tmp_path / 'classes.sqlite3'}")
        with store.engine.connect() as conn:
            codes = conn.execute(select(classes.c.code)).scalars().all()
        store.close()
        assert len(codes) == 1, codes
        expect(main(page).get_by_text(f"Class code: {codes[0]}")).to_be_visible()  # with the key, it opens the board
        assert not page_errors(page), page_errors(page)
