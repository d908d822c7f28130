"""Every page on a phone (390x844), as a phone's browser opens it: loaded at that size, the shipped reverse model in
hand, each page reached through the sidebar, which folds away once a page is chosen: no exception, no sidebar left
over the page, no table reaching past the screen (a wide table scrolls inside it), no chart labels drawn over each
other, no keyboard shortcut's badge on a button (a phone has no keys), no caption's code span or formula's glyph under
12 px.

The language walk (test_language_walk.py) looks at every page at all three sizes in both languages, the window
resized under a page loaded at a projector's size; this test is the phone's own way there.
"""

import re

import pytest
from conftest import (
    LABEL_OVERLAPS,
    TABLES,
    VIEWPORTS,
    navigate,
    open_page,
    page_errors,
    requires_chromium,
    screenshot,
    settle,
)
from playwright.sync_api import expect

from harness.page import PAGES, button, fill, main, wait_idle

pytestmark = requires_chromium

# A phone's Chrome says so in its user agent: Streamlit folds the sidebar after a page is chosen only on a phone.
PHONE = (
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/150.0 Mobile Safari/537.36"
)


def test_on_a_phone_every_page_opens_through_the_folded_sidebar_and_fits(new_context, lab_server):
    width, height = VIEWPORTS["phone"]
    context = new_context(viewport={"width": width, "height": height}, is_mobile=True, has_touch=True, user_agent=PHONE)
    context.set_default_timeout(30_000)
    page = context.new_page()
    try:
        open_page(page, lab_server, "home")
        button(page, "load_reverse").click()
        expect(main(page).get_by_text("Loaded reverse")).to_be_visible(timeout=30_000)
        problems, captioned = [], 0
        for name in PAGES:
            if name != "home":  # Home is open already
                go_to_on_phone(page, name)
            settle(page)  # charts lay out after the script run ends
            problems += [f"{name}: {p}" for p in page_errors(page)]
            if page.locator("[data-testid='stSidebar']").bounding_box()["width"] > 1:
                problems.append(f"{name}: the sidebar covers the page")
            for table in page.evaluate(TABLES):
                if table["past_screen"] > 1:
                    problems.append(f"{name}: a table reaches {table['past_screen']:.0f} px past the screen")
            problems += [f"{name}: labels overlap: {pair}" for pair in page.evaluate(LABEL_OVERLAPS)]
            for px in page.evaluate(TOOLBAR_OVER):  # shown once a table is tapped: a phone has no pointer to move off
                if px > 1:
                    problems.append(f"{name}: a table's toolbar covers {px:.0f} px of what is above the table")
            for formula in page.evaluate(FORMULAS):  # a formula that scrolls says so: a shadow at its edge
                if formula["scrolls"] and "gradient" not in formula["background"]:
                    problems.append(f"{name}: a formula is cut off at the screen's edge with no sign it scrolls")
                if formula["smallest"] < SMALLEST_TEXT_PX:
                    problems.append(f"{name}: {formula['text']!r} has a glyph at {formula['smallest']:.1f} px")
            if badges := [badge for badge in page.locator("button kbd").all() if badge.is_visible()]:
                problems.append(f"{name}: {len(badges)} keyboard shortcut badges on a phone, which has no keys")
            codes = page.evaluate(CAPTION_CODE)
            captioned += len(codes)
            problems += [f"{name}: caption code {text!r} at {px} px" for text, px in codes if px < SMALLEST_TEXT_PX]
            screenshot(page, f"viewport-phone-{name}")
        assert not problems, "\n".join(problems)
        assert captioned, "no caption's code span seen: the walk checked none"
    finally:
        context.close()


# How far each table's toolbar reaches over the element above the table, in px.
TOOLBAR_OVER = """() => [...document.querySelectorAll(
    '[data-testid="stMain"] [data-testid="stElementContainer"]:has([data-testid="stDataFrame"])')]
    .filter(table => table.previousElementSibling && table.querySelector('[data-testid="stElementToolbar"]'))
    .map(table => table.previousElementSibling.getBoundingClientRect().bottom
        - table.querySelector('[data-testid="stElementToolbar"]').getBoundingClientRect().top)"""
SMALLEST_TEXT_PX = 12  # the smallest text a phone's reader is given (a chart's cell numbers are no smaller either)
# Each caption's inline code span (a batch's tokens, a command) and its font size in px: Streamlit's 0.75em of a
# caption drew 11.2 px on a phone.
CAPTION_CODE = """() => [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stCaptionContainer"] code')]
    .map(code => [code.textContent, parseFloat(getComputedStyle(code).fontSize)])"""
# Each display formula: whether it is wider than its box (and so scrolls), its background, and its smallest glyph's
# font size in px (a subscript of a superscript is drawn at half the formula's size: 10.4 px on a laptop).
FORMULAS = """() => [...document.querySelectorAll('.katex-display')].map(el => ({
    scrolls: el.scrollWidth > el.clientWidth, background: getComputedStyle(el).backgroundImage,
    text: el.querySelector('annotation')?.textContent,
    smallest: Math.min(...[...el.querySelectorAll('.katex-html span')]
        .filter(s => [...s.childNodes].some(n => n.nodeType === 3 && /[^\\s\\u200b]/.test(n.textContent)))
        .map(s => parseFloat(getComputedStyle(s).fontSize)))}))"""


def go_to_on_phone(page, name: str) -> None:
    """Through the sidebar, so the model in hand stays; the sidebar folds away after each page, and opens first where
    its link is off the screen."""
    link = page.locator(f"[data-testid='stSidebarNav'] a[href$='/{PAGES[name]}']").first
    box = link.bounding_box()
    if box is None or box["x"] + box["width"] <= 0:
        page.locator("[data-testid='stExpandSidebarButton']").click()
    navigate(page, name)
    wait_idle(page)


# A canvas's width of a text in the page's own font at `size` px, once the page's fonts have loaded.
TEXT_PX = """async ([texts, size]) => {
    await document.fonts.ready;
    const family = getComputedStyle(document.querySelector("[data-testid='stMain'] p")).fontFamily;
    const canvas = document.createElement("canvas").getContext("2d");
    canvas.font = `${size}px ${family}`;
    return texts.map(text => canvas.measureText(text).width);
}"""


def test_text_is_estimated_at_least_as_wide_as_chromium_draws_it_and_little_wider(page, lab_server):
    """The board sizes each column from its cells' text at 14 px, and a heatmap its margins from its tick labels at
    16 px (`drawn_px`): never narrower than Chromium draws the text (it would be cut), and at most a quarter wider (a
    projector's board would scroll past its loss curves)."""
    from transformer.classroom.board import LOST_CAUSE
    from transformer.figures import drawn_px
    from transformer.figures.theme import FONT
    from transformer.i18n import Message, translator

    said = [
        Message("not solved in {steps} steps: exact match {exact:.1%}", steps=3000, exact=0.998),
        Message("solved in {steps} steps", steps=696),
        Message("training, step {step}", step=1234),
        Message(LOST_CAUSE),
        '=HYPERLINK("http://x","y")',
        "William Wimmer-Mumm",
        "sinusoidal PE",
        "<bos> <eos> mw 0123456789",
    ]
    texts = [translator(code).gettext(text) for code in ("en", "zh-CN") for text in said]
    open_page(page, lab_server, "checkpoints")
    for size in (14, FONT["size"]):
        for text, drawn in zip(texts, page.evaluate(TEXT_PX, [texts, size])):
            assert drawn <= drawn_px(text, size) <= 1.25 * drawn, (size, text, drawn, drawn_px(text, size))


def test_on_a_phone_compare_s_summary_in_chinese_keeps_its_words_whole_and_scrolls(new_context, lab_server):
    """Compare's summary has nine columns: on a phone a Chinese heading or variant name breaks only at a space or a
    mark, never between two of its characters, and the table scrolls sideways in a region a keyboard can reach."""
    context = new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True, user_agent=PHONE)
    page = context.new_page()
    try:
        page.goto(f"{lab_server.url}/{PAGES['compare']}?lang=zh-CN", wait_until="domcontentloaded")
        table = page.locator(".st-key-compare_summary [data-testid='stTable']")
        expect(table).to_be_visible(timeout=60_000)
        wait_idle(page)
        settle(page)
        lines = page.evaluate(
            """el => [...el.querySelectorAll('th p')].map(p => [p.textContent,
                Math.round(p.getBoundingClientRect().height / parseFloat(getComputedStyle(p).lineHeight))])""",
            table.element_handle(),
        )
        assert "解出时的步数" in dict(lines) and "正弦位置编码" in dict(lines), lines
        for text, n in lines:
            breaks = len(re.findall(r"[\s（(/]", text))  # where a line may break: a space, an opening bracket, a slash
            assert n <= breaks + 1, (text, n)
        region = table.locator(":scope > div")
        assert region.evaluate("el => el.scrollWidth > el.clientWidth"), "the table fits: nothing to check"
        expect(region).to_have_attribute("tabindex", "0")
    finally:
        context.close()


ZOOMED = dict(viewport={"width": 853, "height": 480}, device_scale_factor=1.5)  # a 1280 px screen at 150% zoom
ON_A_PHONE = dict(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True, user_agent=PHONE)


@pytest.mark.parametrize("screen", [ON_A_PHONE, ZOOMED], ids=["phone", "zoomed"])
def test_the_projected_class_link_shows_its_class_code_whole_in_its_column(new_context, lab_server, screen):
    """The class link is set in a heading's large type for the room; in a narrow column (a phone, where a teacher may
    open the board, or beside the QR code at 150% zoom) its type shrinks so that `?class=...`, which never breaks,
    stays inside its column, over the QR code's caption."""
    context = new_context(**screen)
    page = context.new_page()
    try:
        open_page(page, lab_server, "teacher")
        fill(page, "teacher_title", "Period 3")
        button(page, "teacher_create_button").click()
        button(page, "teacher_key_saved").click()
        heading = page.locator(".st-key-teacher_link h2")
        expect(heading).to_be_visible(timeout=30_000)
        wait_idle(page)
        past = heading.evaluate(
            """h2 => { const column = h2.closest('[data-testid="stVerticalBlock"]').getBoundingClientRect().right;
                return [...h2.querySelectorAll('span')].map(s => s.getBoundingClientRect().right - column); }"""
        )
        assert past and max(past) <= 0, past
        heading.hover()  # where Streamlit shows a heading's link icon, 17 px and beside the class link (WCAG 2.5.8)
        expect(heading.locator("[data-testid='stHeaderActionElements']")).to_be_hidden()
    finally:
        context.close()


@pytest.mark.parametrize("language", ["en", "zh-CN"])
def test_on_a_phone_masking_s_formula_fits_without_scrolling(new_context, lab_server, language):
    """Masking's formula is 424 px on one line: on a phone its end, "+ M) V", lay past the screen's edge."""
    page = new_context(**ON_A_PHONE).new_page()
    page.goto(f"{lab_server.url}/{PAGES['masking']}?model=reverse&lang={language}", wait_until="domcontentloaded")
    formula = page.locator("[data-testid='stMain'] .katex-display").first
    expect(formula).to_be_visible(timeout=90_000)
    wait_idle(page)
    wide_px, page_px = formula.evaluate(
        "el => [el.scrollWidth, el.closest('[data-testid=stElementContainer]').clientWidth]"
    )
    assert wide_px <= page_px
