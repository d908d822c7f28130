"""Every page, with the shipped reverse model in hand, at a classroom projector's 1280x800, a large screen's
1920x1080 and a phone's 390x844: no exception, no table cut off, no chart labels drawn over each other.

"Cut off": on the two screens a table shows all its columns without scrolling sideways; on the phone, where the
sidebar folds away and a wide table must scroll, a table stays inside the screen (its scroll reaches every column).
"""

import pytest
from conftest import LABEL_OVERLAPS, VIEWPORTS, navigate, open_page, page_errors, requires_chromium, screenshot
from playwright.sync_api import expect

from harness.page import PAGES, button, main, wait_idle

pytestmark = requires_chromium


# Each table's overflow: how far its columns reach past what it shows, and how far its box reaches past the screen.
TABLE_OVERFLOW = """() => [...document.querySelectorAll("[data-testid='stDataFrame'], [data-testid='stTable']")]
    .filter(t => t.offsetParent !== null)
    .map(t => {
        const scroller = t.querySelector('.dvn-scroller') ?? t.querySelector('table')?.parentElement ?? t;
        return {
            hidden: scroller.scrollWidth - scroller.clientWidth,
            past_screen: t.getBoundingClientRect().right - document.documentElement.clientWidth,
            text: t.innerText.slice(0, 60),
        };
    })"""


@pytest.mark.parametrize("viewport", VIEWPORTS)
def test_every_page_fits_the_screen(new_context, lab_server, viewport):
    width, height = VIEWPORTS[viewport]
    context = new_context(viewport={"width": width, "height": height})
    context.set_default_timeout(30_000)
    page = context.new_page()
    try:
        open_page(page, lab_server, "home")
        button(page, "load_reverse").click()
        expect(main(page).get_by_text("Loaded reverse")).to_be_visible(timeout=30_000)
        problems = []
        for name in PAGES:
            if name != "home":  # Home is open already
                go_to(page, name, phone=viewport == "phone")
            page.wait_for_timeout(500)  # charts lay out after the script run ends
            problems += [f"{name}: {p}" for p in page_errors(page)]
            for table in page.evaluate(TABLE_OVERFLOW):
                if viewport == "phone" and table["past_screen"] > 1:
                    problems.append(f"{name}: a table reaches {table['past_screen']:.0f} px past the screen")
                if viewport != "phone" and table["hidden"] > 1:
                    problems.append(f"{name}: a table hides {table['hidden']:.0f} px of columns: {table['text']!r}")
            problems += [f"{name}: labels overlap: {pair}" for pair in page.evaluate(LABEL_OVERLAPS)]
            screenshot(page, f"viewport-{viewport}-{name}")
        assert not problems, "\n".join(problems)
    finally:
        context.close()


def go_to(page, name: str, phone: bool) -> None:
    """Through the sidebar, so the model in hand stays; on a phone the sidebar folds away after each page, and
    opens first where its link is off the screen."""
    link = page.locator(f"[data-testid='stSidebarNav'] a[href$='/{PAGES[name]}']").first
    box = link.bounding_box()
    if phone and (box is None or box["x"] + box["width"] <= 0):
        page.locator("[data-testid='stExpandSidebarButton']").click()
    navigate(page, name)
    wait_idle(page)
