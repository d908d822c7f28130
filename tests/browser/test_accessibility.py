"""WCAG 2.2 A/AA in a real browser: axe-core (bundled by axe-playwright-python, no network) on every page in each
language, with the shipped reverse model in hand and every expander open, finds no violation of any impact;
and every chart is named by what it shows (axe does not look into a chart).

One session per language, opened at Home's address and taken through the sidebar to every page (77 s for both
languages on the 2-core VM, 2026-11-29, with `python -m pytest tests/browser/test_accessibility.py`).
"""

import pytest
from conftest import go_to, open_at, requires_chromium, wcag_violations

from harness.page import PAGES

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


# Each widget label's text that is wider than its box: Streamlit keeps a label on one line and cuts it with an ellipsis.
CUT_LABELS = """() => [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stWidgetLabel"]')]
    .map(label => label.querySelector('.stMarkdownEllipsis'))
    .filter(text => text && text.scrollWidth > text.clientWidth + 1).map(text => text.innerText)"""


@pytest.mark.parametrize("name", ["train", "teacher"])
def test_at_150_percent_zoom_no_setting_s_label_is_cut(new_context, lab_server, name):
    """The Train form's settings and the teacher's assignment, three to a row: "注意力分数乘以 1/√d_k" was cut to
    "注意力分数乘以 1/…"; a label wraps instead."""
    page = new_context(viewport={"width": 853, "height": 480}, device_scale_factor=1.5).new_page()
    open_at(page, lab_server, name, "zh-CN")
    assert page.locator("[data-testid='stMain'] [data-testid='stWidgetLabel']").count() > 3  # labels to check
    assert page.evaluate(CUT_LABELS) == []
