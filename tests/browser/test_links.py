"""Links in a real browser: a teacher's link opens a page with the shipped model in hand and the page's settings,
with no click, and survives a reload; a hostile link shows a notice and the page's defaults."""

from conftest import page_errors, requires_chromium
from playwright.sync_api import expect

from harness.page import IDLE, wait_idle

pytestmark = requires_chromium

DECODING_LINK = "decoding?model=reverse&input=3%201%204"


def open_link(page, server, path: str) -> None:
    """Open the app at `path` (with its query) in this tab, a fresh session, and wait until the page is drawn."""
    page.goto(f"{server.url}/{path}", wait_until="domcontentloaded")
    page.wait_for_selector(f"{IDLE} h1", timeout=90_000)
    wait_idle(page)


def test_a_decoding_link_shows_the_shipped_models_output_with_no_click(page, lab_server):
    open_link(page, lab_server, DECODING_LINK)
    main, sidebar = page.locator("[data-testid='stMain']"), page.locator("[data-testid='stSidebar']")
    expect(main.locator(".st-key-decode_output")).to_contain_text("Output: 4 1 3")
    expect(sidebar).to_contain_text("shipped: reverse")
    sidebar.locator("[data-testid='stPopover'] button").click()  # Copy link: the page's whole address
    expect(page.locator("code", has_text=f"{lab_server.url}/{DECODING_LINK}")).to_be_visible()
    page.reload(wait_until="domcontentloaded")  # a new session: the model comes back from the address bar
    page.wait_for_selector(f"{IDLE} h1", timeout=90_000)
    wait_idle(page)
    expect(main.locator(".st-key-decode_output")).to_contain_text("Output: 4 1 3")
    assert page_errors(page) == []


def test_a_hostile_link_shows_a_notice_and_the_defaults(page, lab_server):
    open_link(page, lab_server, "decoding?model=../../etc&input=<img src=x>")
    main = page.locator("[data-testid='stMain']")
    expect(main).to_contain_text("The link's model is not one of copy, reverse, reverse-early, sort")
    expect(main).to_contain_text("No model in hand yet")  # the default: no model, and the buttons to load one
    assert "model=" not in page.url and main.locator("img[src='x']").count() == 0
    main.locator(".st-key-require_load_reverse button").click()  # now the page reads its own part of the link
    wait_idle(page)
    expect(main).to_contain_text("The link's input is not a sequence of at most 63 of this model's symbols")
    expect(main).to_contain_text("Step 1 of")  # the task's first held-out example, from its first step
    assert "model=reverse" in page.url and "img" not in page.url and page_errors(page) == []
