"""A lab report downloaded from Train, in the session's language, opens in Chromium with every request outside the file
blocked, and draws every chart with no error."""

from conftest import page_errors, requires_chromium, screenshot
from playwright.sync_api import expect

from harness.chromium import VIEWPORT
from harness.page import IDLE, wait_idle
from tests.helpers import wait_until

pytestmark = requires_chromium


def test_a_report_from_train_opens_offline_and_draws_its_charts(page, lab_server, new_context, tmp_path):
    page.goto(f"{lab_server.url}/train?lang=zh-CN", wait_until="domcontentloaded")
    page.wait_for_selector(f"{IDLE} h1", timeout=90_000)
    wait_idle(page)
    page.locator(".st-key-start_training button").filter(visible=True).click()  # the default run: it solves reverse
    download = page.locator(".st-key-download_report button").filter(visible=True)
    expect(download).to_be_visible(timeout=120_000)
    expect(download).to_contain_text("下载实验报告")
    with page.expect_download() as started:
        download.click()
    path = tmp_path / started.value.suggested_filename
    started.value.save_as(path)
    assert path.name.endswith("-report.html") and path.stat().st_size > 4_000_000  # plotly.js is in it
    assert not page_errors(page), page_errors(page)

    url, asked, errors = path.as_uri(), [], []
    offline = new_context(viewport=VIEWPORT)
    offline.route("**/*", lambda route: route.continue_() if route.request.url == url else block(route, asked))
    report = offline.new_page()
    report.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    report.on("pageerror", lambda error: errors.append(str(error)))
    report.goto(url)
    expect(report.locator("html")).to_have_attribute("lang", "zh-CN")
    expect(report.locator("h3", has_text="注意力图")).to_be_visible()
    figures = report.locator("div.figure")
    assert figures.count() >= 6  # loss, accuracy, three kinds of attention, the alignment
    for i in range(figures.count()):  # each is drawn as it scrolls into view
        figures.nth(i).scroll_into_view_if_needed()
        expect(figures.nth(i).locator(".main-svg").first).to_be_attached()
    assert report.locator(".js-plotly-plot .main-svg").count() >= figures.count()
    assert asked == [] and errors == []
    screenshot(report, "lab-report")
    report.set_viewport_size({"width": 390, "height": 844})  # on a phone: one chart a row, none wider than the page
    wait_until(lambda: report.evaluate("() => document.documentElement.scrollWidth <= innerWidth"))  # CSP: no eval
    offline.close()


def block(route, asked: list[str]) -> None:
    """Abort a request the report makes outside itself, and note it."""
    asked.append(route.request.url)
    route.abort()
