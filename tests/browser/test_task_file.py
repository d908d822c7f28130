"""A task of one's own in a browser: a task file uploaded on Train trains, its report downloads and opens offline with
its charts, and Decoding decodes one of its held-out pairs."""

from conftest import page_errors, requires_chromium
from playwright.sync_api import expect

from harness.chromium import VIEWPORT
from harness.page import IDLE, wait_idle

pytestmark = requires_chromium

SWAPS = "source,target\n" + "\n".join(f"{a} {b},{b} {a}" for a in "abcdef" for b in "abcdef" if a != b) + "\n"


def uploaded_swaps(page, lab_server, tmp_path) -> None:
    """Open Train and upload SWAPS as swaps.csv, until the page says Start trains it and its run has ended, so
    that the test's next click is the next thing the page handles."""
    task_file = tmp_path / "swaps.csv"
    task_file.write_text(SWAPS)
    page.goto(f"{lab_server.url}/train", wait_until="domcontentloaded")
    page.wait_for_selector(f"{IDLE} h1", timeout=90_000)
    wait_idle(page)
    page.get_by_text("A task of your own, from examples").click()
    page.locator(".st-key-train_task_file input[type=file]").set_input_files(task_file)
    expect(page.get_by_text("Start trains your own task, swaps.csv")).to_be_visible()
    wait_idle(page)


def test_an_uploaded_task_trains_reports_offline_and_decodes(page, lab_server, new_context, tmp_path):
    uploaded_swaps(page, lab_server, tmp_path)
    page.locator(".st-key-start_training button").filter(visible=True).click()

    download = page.locator(".st-key-download_report button").filter(visible=True)
    expect(download).to_be_visible(timeout=120_000)  # the run has ended and its model is in hand
    expect(page.get_by_text("swaps.csv, lengths 2,")).to_be_visible()  # the run's summary names the task file
    with page.expect_download() as started:
        download.click()
    path = tmp_path / started.value.suggested_filename
    started.value.save_as(path)
    assert path.name.startswith("swaps_csv-2to2") and not page_errors(page), page_errors(page)
    assert_opens_offline(new_context, path)

    page.get_by_role("link", name="Decode it").click()
    wait_idle(page)
    source = page.locator(".st-key-decode_input input").input_value()  # the first held-out pair's, filled in
    assert source in [line.split(",")[0] for line in SWAPS.splitlines()[1:]]
    run_to_end = page.locator(".st-key-decode_run_to_end button")
    if run_to_end.is_enabled():
        run_to_end.click()
    expect(page.locator(".st-key-decode_output")).to_contain_text("Output")
    expect(page.get_by_text("There is no alignment for this task: a task from examples")).to_be_visible()
    assert not page_errors(page), page_errors(page)


def assert_opens_offline(new_context, path) -> None:
    """The report at `path` opens with every request outside itself blocked, and draws each of its charts."""
    url, asked, errors = path.as_uri(), [], []
    offline = new_context(viewport=VIEWPORT)
    offline.route("**/*", lambda route: route.continue_() if route.request.url == url else block(route, asked))
    report = offline.new_page()
    report.on("pageerror", lambda error: errors.append(str(error)))
    report.goto(url)
    figures = report.locator("div.figure")
    assert figures.count() >= 2  # the curves at least; a task from examples has no alignment line
    for i in range(figures.count()):  # each is drawn as it scrolls into view
        figures.nth(i).scroll_into_view_if_needed()
        expect(figures.nth(i).locator(".main-svg").first).to_be_attached()
    assert asked == [] and errors == []
    offline.close()


def block(route, asked: list[str]) -> None:
    """Abort a request the report makes outside itself, and note it."""
    asked.append(route.request.url)
    route.abort()


def test_removing_the_uploaded_file_stops_using_its_task(page, lab_server, tmp_path):
    uploaded_swaps(page, lab_server, tmp_path)
    page.locator(".st-key-train_task_file [data-testid='stFileChipDeleteBtn'] button").click()
    expect(page.get_by_text("swaps.csv, read before, is no longer in use.")).to_be_visible()
    expect(page.get_by_text("Start trains your own task")).to_have_count(0)
    assert not page_errors(page), page_errors(page)


def test_a_task_by_name_empties_the_uploader_and_the_same_file_reads_again(page, lab_server, tmp_path):
    uploaded_swaps(page, lab_server, tmp_path)
    page.locator(".st-key-train_forget_task button").click()
    expect(page.get_by_text("Start trains your own task")).to_have_count(0)
    expect(page.locator(".st-key-train_task_file [data-testid='stFileChipName']")).to_have_count(0)  # no file shown
    page.locator(".st-key-train_task_file input[type=file]").set_input_files(tmp_path / "swaps.csv")
    expect(page.get_by_text("Start trains your own task, swaps.csv")).to_be_visible()
    assert not page_errors(page), page_errors(page)
