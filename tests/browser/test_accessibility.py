"""WCAG 2.2 A/AA in a real browser: axe-core (bundled by axe-playwright-python, no network) on every page in each
language, with the shipped reverse model in hand and every expander open, finds no violation of any impact;
and every chart is named by what it shows (axe does not look into a chart).

One session per language, opened at Home's address and taken through the sidebar to every page (77 s for both
languages on the 2-core VM, 2026-11-29, with `python -m pytest tests/browser/test_accessibility.py`).
"""

import json

import pytest
from conftest import go_to, open_at, requires_chromium, wcag_violations
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from harness.page import PAGES, wait_idle
from transformer.figures.palette import contrast_ratio
from ui.accessibility import TEXT_FIELDS

pytestmark = requires_chromium

# The font size of each inline code span in a paragraph (not a caption's), in px: a token, a command, a file's name.
CODE_SIZES = """() => [...document.querySelectorAll('[data-testid="stMain"] [data-testid=stMarkdownContainer] p>code')]
    .filter(code => !code.closest('[data-testid="stCaptionContainer"]'))
    .map(code => parseFloat(getComputedStyle(code).fontSize))"""
# Each mounted chart's accessible name (a chart shows a skeleton until its component loads).
CHART_NAMES = """() => [...document.querySelectorAll('[data-testid="stPlotlyChart"]')]
    .map(chart => (chart.getAttribute('aria-label') || '').trim())"""


@pytest.mark.timeout(600)
@pytest.mark.parametrize("language", ["zh-CN", "en"])
def test_no_page_has_a_wcag_violation(projector_page, lab_server, language):
    page = projector_page
    found, charts = [], 0
    open_at(page, lab_server, "home", language)  # one session, taken through the sidebar to every page
    for name in PAGES:
        if name != "home":
            go_to(page, name)
        found += [f"{language} {name}: {line}" for line in wcag_violations(page)]
        found += [f"{language} {name}: {line}" for line in wcag_violations(page, ["heading-order"])]  # an outline
        found += [f"{language} {name}: inline code at {px} px" for px in page.evaluate(CODE_SIZES) if px < 14]
        names = page.evaluate(CHART_NAMES)
        charts += len(names)
        if unnamed := names.count(""):
            found.append(f"{language} {name}: {unnamed} charts without a text alternative")
    assert not found, f"{len(found)} violations:\n" + "\n".join(found)
    assert charts >= len(PAGES), f"only {charts} charts seen: the walk saw too few to check their names"


def test_a_link_to_another_page_shows_keyboard_focus_as_a_ring(projector_page, lab_server):
    page = projector_page
    open_at(page, lab_server, "home", "en")
    link = page.locator("[data-testid='stMain'] [data-testid='stPageLink-NavLink']").first
    link.focus()
    page.keyboard.press("Shift+Tab")  # focus from the keyboard, as :focus-visible asks
    page.keyboard.press("Tab")
    ring = link.evaluate(
        "a => [document.activeElement === a, getComputedStyle(a).outlineStyle, getComputedStyle(a).outlineColor]"
    )
    assert ring == [True, "solid", "rgb(31, 95, 191)"], ring  # PRIMARY, 6.2:1 on white: not a 1.1:1 tint


@pytest.mark.parametrize("widget", ["stRadio", "stCheckbox"])
def test_a_radio_button_and_a_checkbox_show_keyboard_focus_as_a_ring(projector_page, lab_server, widget):
    """Their own input is hidden; the tint Streamlit puts on the circle or box beside it read at about 1.2:1."""
    page = projector_page
    open_at(page, lab_server, "train", "en")
    for summary in page.locator("[data-testid='stMain'] details:not([open]) summary").all():
        summary.click()  # the form's folded sections hold its checkboxes
    field = page.locator(
        f"[data-testid='stMain'] [data-testid='{widget}'] input:checked, "
        f"[data-testid='stMain'] [data-testid='{widget}'] input[type=checkbox]"
    ).first
    field.focus()
    page.keyboard.press("Shift+Tab")  # focus from the keyboard, as :focus-visible asks
    page.keyboard.press("Tab")
    ring = field.evaluate(
        "i => [document.activeElement === i, getComputedStyle(i.closest('label')).outlineStyle,"
        " getComputedStyle(i.closest('label')).outlineColor]"
    )
    assert ring == [True, "solid", "rgb(31, 95, 191)"], ring  # PRIMARY, 6.2:1 on white


# Whether the element with keyboard focus shows it: a solid ring in the primary colour (on a radio button's or a
# checkbox's label: its input is hidden; around a table's grid, for its canvas, cell or scroller; around a text
# field's, a number's or a select box's box), at full opacity with its ancestors (a toolbar or a heading's link fades
# in once it has focus), and on top at its middle (a table's toolbar was drawn under the table). The document's body,
# which a Tab past the last stop gives focus to on the way round, is left out; `name` says which element it was.
FOCUS_SHOWN = """() => {
    const el = document.activeElement;
    const name = `${el.tagName} ${(el.getAttribute('aria-label') || el.innerText || '').trim().slice(0, 40)}`;
    if (el.matches('body')) return [name, true];
    const grid = '[data-testid=stDataFrame]';
    const box = el.matches('input[type=radio], input[type=checkbox]') ? 'label' : el.matches('input, textarea') ? FIELD
        : el.matches('canvas, td, .dvn-scroller') ? grid : '*';
    const ringed = el.closest(box) || el;
    const ring = getComputedStyle(ringed);
    let opacity = 1;
    for (let e = el; e; e = e.parentElement) opacity *= parseFloat(getComputedStyle(e).opacity);
    const r = el.getBoundingClientRect();  // a button's middle is its own, not under what is drawn after it
    const hit = box === '*' ? document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2) : null;
    const onTop = !hit || el.contains(hit) || hit.contains(el);
    return [name, ring.outlineStyle === 'solid' && ring.outlineColor === 'rgb(31, 95, 191)' && opacity === 1 && onTop];
}"""

FOCUS_SHOWN = FOCUS_SHOWN.replace("FIELD", json.dumps(TEXT_FIELDS))  # the box the app rings round a field
SHOWN_NAME = f"() => {{ const [name, shown] = ({FOCUS_SHOWN})(); return shown && name; }}"  # waited for


@pytest.mark.parametrize(
    "name, reaches", [("train", "BUTTON Reset axes"), ("checkpoints", ("CANVAS", "TD")), ("teacher", "INPUT")]
)
def test_every_tab_stop_shows_keyboard_focus_in_full(projector_page, lab_server, name, reaches):
    """Tab through a page with a model in hand, from the skip link round to it again: every stop (a button, a folded
    section, a help icon, the main area, a heading's link, a number or select box, a chart's toolbar on Train, a
    table's grid on Checkpoints, a text field on Teacher) shows a ring in the primary colour, not Streamlit's
    half-transparent one (2.2:1), a field's 1 px border or none, and nothing focused stays transparent (WCAG 2.4.7,
    1.4.11)."""
    page = projector_page
    page.goto(f"{lab_server.url}/{PAGES[name]}?model=reverse&lang=en", wait_until="domcontentloaded")
    page.wait_for_selector("[data-testid='stApp'][data-test-script-state='notRunning'] h1", timeout=90_000)
    wait_idle(page)
    drawn = {"train": ".modebar-btn", "checkpoints": "[data-testid='stDataFrame'] canvas", "teacher": "input"}[name]
    expect(page.locator(f"[data-testid='stMain'] {drawn}").first).to_be_attached(timeout=30_000)
    unseen, names = [], []
    for _ in range(400):
        page.keyboard.press("Tab")
        try:  # a toolbar fades in over a few hundred ms
            names.append(page.wait_for_function(SHOWN_NAME, timeout=2_000).json_value())
        except PlaywrightTimeout:
            unseen.append(page.evaluate(FOCUS_SHOWN)[0])
            names.append(unseen[-1])
        if names.count(names[0]) == 2:  # round to the first stop again
            break
    assert len(names) > 20 and any(stop.startswith(reaches) for stop in names), names  # the walk got to them
    assert not unseen, unseen


# How far the focused stop's ring (2 px, 2 px off its box) lies past the window's bottom and top edges, in px, once
# its box has kept its place for three frames (a busy machine lays the page out again after the scroll); null for
# the main area, whose ring is the page's own edge, and for the sidebar's stops.
RING_CUT = """async () => {
    const el = document.activeElement;
    if (!el.closest('[data-testid=stMain]') || el.matches('[data-testid=stMain]')) return null;
    const box = el.matches('input, textarea') && el.closest(FIELD) || el;
    const frame = () => new Promise(requestAnimationFrame);
    let r = box.getBoundingClientRect();
    for (let still = 0, n = 0; still < 3 && n < 600; n++) {
        await frame();
        const now = box.getBoundingClientRect();
        still = now.top === r.top && now.bottom === r.bottom ? still + 1 : 0;
        r = now;
    }
    return [`${el.tagName} ${(el.getAttribute('aria-label') || el.innerText || '').trim().slice(0, 40)}`,
            Math.max(0, r.bottom + 4 - innerHeight), Math.max(0, 4 - r.top)];
}""".replace("FIELD", json.dumps(TEXT_FIELDS))


def test_on_a_phone_each_stop_tab_brings_into_view_shows_its_whole_ring(new_context, lab_server):
    """Tab scrolls each next stop just into view: a field's box came flush with the window's edge, its ring cut by
    up to 7 px on Train (WCAG 2.4.7). Every stop of Train's form and charts, in Chinese on a phone."""
    page = new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2).new_page()
    open_at(page, lab_server, "train", "zh-CN")
    cut, stops = [], 0
    for _ in range(120):
        page.keyboard.press("Tab")
        if (ring := page.evaluate(RING_CUT)) is not None:
            stops += 1
            if max(ring[1:]) > 0.5:  # past a rounding of the layout
                cut.append(ring)
    assert stops > 20, stops  # the walk went through the form
    assert not cut, cut


# The focused element when it lies past the window's left edge, where a closed sidebar slides (a stop below the window
# is the test above's to bring into view: on a busy machine Train's "Help for Task" was read there now and then).
OFF_WINDOW = """() => {
    const el = document.activeElement, r = el.getBoundingClientRect();
    const off = r.right <= 0;
    return off ? `${el.tagName} ${(el.getAttribute('aria-label') || el.innerText || '').trim().slice(0, 40)}` : null;
}"""


def test_on_a_phone_a_closed_sidebar_takes_no_tab_stop(new_context, lab_server):
    """A phone opens with the sidebar closed, slid past the window's left edge: Tab went through its eleven links
    and the language picker there, focus unseen (WCAG 2.4.7). Every stop from the top of Train lies in the window, and
    once opened the sidebar's links take focus again."""
    page = new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2).new_page()
    open_at(page, lab_server, "train", "en")
    stops, unseen = [], []
    for _ in range(15):
        page.keyboard.press("Tab")
        stops.append(page.evaluate("() => document.activeElement.tagName"))
        try:  # a stop the browser scrolls to comes into the window once a busy machine has laid the page out
            page.wait_for_function(f"() => ({OFF_WINDOW})() === null", timeout=5_000)
        except PlaywrightTimeout:
            unseen.append(page.evaluate(OFF_WINDOW))
    assert not unseen, unseen
    assert stops.count("INPUT") >= 2, stops  # the walk reached the form
    page.get_by_role("button", name="Expand sidebar").click()
    link = page.locator("[data-testid='stSidebar']").get_by_role("link", name="Decoding")
    expect(link).to_be_in_viewport()  # the sidebar slides in
    link.focus()
    expect(link).to_be_focused()


# Each widget label's text that is wider than its box: Streamlit keeps a label on one line and cuts it with an ellipsis.
# A button's label too (Streamlit cuts it the same way).
CUT_LABELS = """() => [...document.querySelectorAll('[data-testid="stMain"] :is([data-testid="stWidgetLabel"] '
        + '.stMarkdownEllipsis, button [data-testid="stMarkdownContainer"])')]
    .filter(text => text.scrollWidth > text.clientWidth + 1).map(text => text.innerText)"""


@pytest.mark.parametrize("name", ["train", "teacher", "knockout"])
def test_at_150_percent_zoom_no_setting_s_or_button_s_label_is_cut(new_context, lab_server, name):
    """The Train form's settings and the teacher's assignment, three to a row: "注意力分数乘以 1/√d_k" was cut to
    "注意力分数乘以 1/…"; Knockout's buttons, three to a row: "全部解码器自注意力" to "全部解码器自注…". A label wraps
    instead."""
    page = new_context(viewport={"width": 853, "height": 480}, device_scale_factor=1.5).new_page()
    open_at(page, lab_server, name, "zh-CN")
    labels = "[data-testid='stMain'] :is([data-testid='stWidgetLabel'], button [data-testid='stMarkdownContainer'])"
    assert page.locator(labels).count() > 3  # labels to check
    assert page.evaluate(CUT_LABELS) == []


# Whether each shown table has a shadow at its left and right edges: a data grid (drawn on a canvas) by the marks the
# lab's script sets on it and the pseudo-elements they draw; an HTML table by its scroller's background.
EDGE_SHADOWS = """() => [...document.querySelectorAll('[data-testid="stMain"] :is([data-testid="stDataFrame"], [data-testid="stTable"])')]
    .filter(t => t.checkVisibility()).map(t => {
        if (t.dataset.testid === 'stTable') {
            const box = t.querySelector(':scope > div');
            return {scrolls: box.scrollWidth > box.clientWidth, shadows: getComputedStyle(box).backgroundImage.includes('radial-gradient')};
        }
        const grid = t.querySelector('.dvn-scroller');
        const drawn = pseudo => parseFloat(getComputedStyle(t, pseudo).width) > 0;
        return {scrolls: grid.scrollWidth > grid.clientWidth, left: drawn('::before'), right: drawn('::after')};
    })"""  # noqa: E501


def test_a_table_wider_than_its_column_shows_a_shadow_at_each_edge_it_scrolls_to(new_context, lab_server):
    """On a phone Masking's result tables scrolled sideways with no sign of their four other columns, and Anatomy's
    table of modules at 150% zoom hid its parameter counts the same way: a shadow now marks each edge with more."""
    phone = new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True, has_touch=True)
    page = phone.new_page()
    open_at(page, lab_server, "masking", "zh-CN")
    page.locator(".st-key-exp_peek_future button").click()
    grid = page.locator("[data-testid='stDataFrame']").first
    expect(grid).to_be_visible(timeout=60_000)
    wait_idle(page)
    page.wait_for_function(f"() => ({EDGE_SHADOWS})().length === 2 && ({EDGE_SHADOWS})()[0].right")
    assert page.evaluate(EDGE_SHADOWS)[0] == {"scrolls": True, "left": False, "right": True}
    grid.locator(".dvn-scroller").evaluate("el => el.scrollLeft = el.scrollWidth")  # to its last column
    page.wait_for_function(f"() => !({EDGE_SHADOWS})()[0].right")
    assert page.evaluate(EDGE_SHADOWS)[0] == {"scrolls": True, "left": True, "right": False}
    laptop = new_context(viewport={"width": 853, "height": 480}, device_scale_factor=1.5).new_page()
    open_at(laptop, lab_server, "anatomy", "en")
    tables = laptop.evaluate(EDGE_SHADOWS)
    assert {"scrolls": True, "shadows": True} in tables, tables  # the table of modules
    assert {"scrolls": False, "left": False, "right": False} in tables, tables  # the parts' grid fits: no shadow


# How wide a space and a digit are drawn in a field: its text measured in a span with the field's font and word spacing.
SPACE_AND_DIGIT_PX = """field => {
    const style = getComputedStyle(field), span = document.createElement('span');
    Object.assign(span.style, {font: style.font, wordSpacing: style.wordSpacing, whiteSpace: 'pre'});
    document.body.append(span);
    const width = text => { span.textContent = text; return span.getBoundingClientRect().width; };
    const sizes = [width('5 4') - width('54'), width('5')];
    span.remove();
    return sizes;
}"""


def test_on_a_phone_a_typed_sequence_s_spaces_read_as_gaps_between_symbols(new_context, lab_server):
    """In the app's face a space is a third of a digit: on a phone "5 4 3 3 7 6 6 0 4" typed in a field read as one
    number. A space between typed symbols is drawn at least half a digit wide."""
    page = new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2).new_page()
    open_at(page, lab_server, "teacher", "en")
    field = page.get_by_role("textbox", name="Title")
    field.fill("5 4 3 3 7 6 6 0 4")
    space, digit = field.evaluate(SPACE_AND_DIGIT_PX)
    assert space >= digit / 2, (space, digit)


# The colour of each control's edge as a computed style gives it ("rgb(r, g, b)"): a number's or text's field, a
# select box, an unselected radio button's circle, and a slider's track beyond its thumbs (the lab's box shadow).
EDGES = """() => {
    const main = document.querySelector('[data-testid="stMain"]');
    const edges = [];
    const add = (kind, selector, read) => main.querySelectorAll(selector).forEach(el => edges.push([kind, read(getComputedStyle(el))]));
    add('field', '[data-testid="stNumberInputContainer"], [data-testid="stTextInputRootElement"]', s => s.borderTopColor);
    add('select box', '[data-testid="stSelectbox"] > div > div', s => s.borderTopColor);
    add('radio', '[data-testid="stRadioOption"]:not([data-selected="true"]) > div > div:first-child', s => s.borderTopColor);
    add('slider', '[data-testid="stSlider"] [role="group"] > [data-orientation="horizontal"] > div:first-child',
        s => s.boxShadow.match(/rgba?\\([^)]*\\)/)?.[0] ?? 'none');
    return edges;
}"""  # noqa: E501


def _hex(css_colour: str) -> str:
    red, green, blue = (int(part) for part in css_colour[css_colour.index("(") + 1 : -1].split(",")[:3])
    return f"#{red:02x}{green:02x}{blue:02x}"


def test_each_field_radio_button_and_slider_track_shows_its_edge_at_3_to_1(projector_page, lab_server):
    """Streamlit draws a field's edge, an unselected radio button's circle and a slider's track at 1.6:1, 1.6:1 and
    1.2:1 on white: where a field or a range ends could not be seen (WCAG 1.4.11 asks 3:1)."""
    page, edges = projector_page, []
    open_at(page, lab_server, "train", "en")
    edges += page.evaluate(EDGES)
    go_to(page, "lengths")
    edges += page.evaluate(EDGES)
    assert {kind for kind, _colour in edges} == {"field", "select box", "radio", "slider"}  # each kind was seen
    assert [(kind, c) for kind, c in edges if c == "none" or contrast_ratio(_hex(c), "#ffffff") < 3] == []


def test_every_radio_button_s_option_is_a_24_px_target(projector_page, lab_server):
    """Decoding's two kinds of attention were options 23.8 px tall, 0.2 px apart (WCAG 2.5.8 asks 24 px)."""
    page = projector_page
    open_at(page, lab_server, "decoding", "zh-CN")
    heights = page.evaluate(
        "() => [...document.querySelectorAll('[data-testid=stMain] [data-testid=stRadioOption]')]"
        ".map(option => option.getBoundingClientRect().height)"
    )
    assert len(heights) >= 4 and min(heights) >= 24, heights
