"""What Streamlit's browser code writes itself, in English only, reads in the session's language: a number input's
range error, its "Press Enter" hint and its buttons' names, and a file uploader's errors (`FRONTEND_SENTENCES`). The
test makes Streamlit write each on a Chinese page, so it fails when an upgrade rewords one; in English the words stay
Streamlit's. A refused number says why under its field, and a form's button then takes the student to it."""

import re

import pytest
from conftest import NAMES, choose, go_to, open_at, page_errors, requires_chromium
from playwright.sync_api import expect

from harness.page import button, main, wait_idle
from transformer.i18n import translator
from transformer.limits import RETENTION_DAYS
from ui.charts import PLOTLY_WORDS
from ui.streamlit_internals import FRONTEND_LABELS, FRONTEND_SENTENCES, NOT_THIS_KIND

pytestmark = requires_chromium

STREAMLIT_ENGLISH = re.compile(
    r"Number is|Press Enter|File must|files are not allowed|Only one file|Drag and drop|Increment|Decrement|add icon"
)


def sentence(language: str, english: str, **params: object) -> str:
    assert english in FRONTEND_SENTENCES  # a sentence the app translates, not one this test makes up
    return translator(language).gettext(english, **params)


# A file chosen as a browser chooses one of an extension it does not know: of no kind (its `type` empty).
KINDLESS_FILE = """input => {
    const chosen = new DataTransfer();
    chosen.items.add(new File(["notes"], "notes.xyz", {type: ""}));
    input.files = chosen.files;
    input.dispatchEvent(new Event("change", {bubbles: true}));
}"""


@pytest.mark.parametrize("language", ["zh-CN", "en"])
def test_streamlit_s_own_words_are_in_the_session_s_language(projector_page, lab_server, language):
    page = projector_page
    open_at(page, lab_server, "teacher", language)
    days = page.locator(".st-key-teacher_days")
    field = days.locator("input")
    field.fill(str(RETENTION_DAYS[1] + 1))  # typed, not yet applied: the hint says how to
    expect(days.get_by_text(sentence(language, "Press Enter to submit form"), exact=True)).to_be_visible()
    field.press("Tab")  # applied: out of range, refused, and the field says why
    low, high = RETENTION_DAYS
    range_error = "Number is outside the allowed range. Please enter a value between {low} and {high}."
    why = sentence(language, range_error, low=low, high=high)
    alert = days.get_by_role("alert")
    expect(alert).to_have_text(sentence(language, "Error: {sentence}", sentence=why))
    expect(alert).to_be_in_viewport()  # in words under the field, not only for a screen reader
    below = alert.bounding_box()["y"] - field.bounding_box()["y"] - field.bounding_box()["height"]
    assert 0 <= below < 20, below
    page.locator("input").first.focus()
    button(page, "teacher_create_button").click()  # refused: nothing is sent, and the field that says why has focus
    expect(field).to_be_focused()
    field.fill(str(RETENTION_DAYS[0] - 1))
    button(page, "teacher_create_button").click()  # straight from typing: the field refuses as the click leaves it
    expect(field).to_be_focused()
    expect(alert).to_be_in_viewport()

    expect(days.locator("[data-testid='stTooltipErrorHoverTarget']")).to_be_hidden()  # the words say what it did
    up = days.locator("[data-testid='stNumberInputStepUp']")
    expect(up).to_have_attribute("aria-label", sentence(language, "Increment"))

    go_to(page, "checkpoints")
    uploader = page.locator(".st-key-upload_checkpoint")
    most_mb = int(re.search(r"(\d+) MB", uploader.locator("label").inner_text())[1])
    uploader.locator("input[type=file]").set_input_files(
        [{"name": "big.pt", "mimeType": "application/octet-stream", "buffer": bytes(most_mb * 2**20 + 1)}]
    )
    too_big = sentence(language, "File must be {size} or smaller.", size=f"{most_mb:.1f}MB")
    expect(uploader.get_by_role("alert")).to_have_text(sentence(language, "Error: {sentence}", sentence=too_big))
    uploader.locator("input[type=file]").set_input_files(
        [{"name": "notes.pdf", "mimeType": "application/pdf", "buffer": b"%PDF-1.4"}]
    )
    # A refused kind is not named by its MIME type, in English too: the lab's sentence points to the label's kind.
    refused = re.compile(re.escape(translator(language).gettext(NOT_THIS_KIND)) + "$")
    expect(uploader.get_by_role("alert").last).to_have_text(refused)
    expect(uploader.get_by_role("alert").last).not_to_contain_text("application")
    uploader.locator("input[type=file]").evaluate(KINDLESS_FILE)  # Playwright gives every file a kind
    expect(uploader.get_by_role("alert").last).to_have_text(refused)  # a file of no kind the browser knows
    if language != "en":
        assert not STREAMLIT_ENGLISH.search(main(page).inner_text())
    picker = page.locator(".st-key-language_picker").get_by_role("combobox")
    picker.click()  # its list opens, and a screen reader hears how many options it holds
    count = picker.evaluate("box => document.getElementById(box.getAttribute('aria-controls')).children.length")
    expect(page.locator("[aria-live=assertive]")).to_contain_text(
        sentence(language, "{count} options available.", count=count)
    )
    picker.press("Escape")
    assert not page_errors(page), page_errors(page)


# Two files given at once to an uploader that takes one, as a drop of two does.
TWO_FILES = """input => {
    const chosen = new DataTransfer();
    for (const name of ["a.csv", "b.csv"]) chosen.items.add(new File(["a b,b a"], name, {type: "text/csv"}));
    input.files = chosen.files;
    input.dispatchEvent(new Event("change", {bubbles: true}));
}"""
# What a file dragged over an uploader carries.
DRAGGED = """() => {
    const dragged = new DataTransfer();
    dragged.items.add(new File(["a b,b a"], "pairs.csv", {type: "text/csv"}));
    return dragged;
}"""
# A spreadsheet's kind, as a browser names it.
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


@pytest.mark.parametrize("language", ["zh-CN", "en"])
def test_a_file_refused_for_its_kind_and_its_size_is_told_both_in_the_session_s_language(
    projector_page, lab_server, language
):
    """Streamlit joins the errors of one file into one text ("<kind> files are not allowed. File must be 1.0MB or
    smaller."): a spreadsheet over the task file's limit, a student's likely mistake, is told each sentence in the
    session's words, and its kind is not named by its MIME type; under the file and in its icon's tooltip alike."""
    page = projector_page
    open_at(page, lab_server, "train", language)  # every expander open: the own task's upload tab shows
    uploader = page.locator(".st-key-train_task_file")
    most_mb = int(re.search(r"(\d+) MB", uploader.locator("label").inner_text())[1])
    uploader.locator("input[type=file]").set_input_files(
        [{"name": "pairs.xlsx", "mimeType": XLSX, "buffer": bytes(most_mb * 2**20 + 1)}]
    )
    kind = translator(language).gettext(NOT_THIS_KIND)
    too_big = sentence(language, "File must be {size} or smaller.", size=f"{most_mb:.1f}MB")
    both = kind + ("" if kind.endswith("。") else " ") + too_big  # no space after a Chinese full stop
    expect(uploader.get_by_role("alert")).to_have_text(sentence(language, "Error: {sentence}", sentence=both))
    uploader.locator("[data-testid='stTooltipErrorHoverTarget']").hover()
    expect(page.get_by_role("tooltip")).to_have_text(both)
    assert "application" not in main(page).inner_text()
    dragged = page.evaluate_handle(DRAGGED)  # a file dragged over the uploader: it says where to drop it
    uploader.locator("[data-testid='stFileUploaderDropzone']").dispatch_event("dragenter", {"dataTransfer": dragged})
    expect(uploader.get_by_text(sentence(language, "Drag and drop a file here"), exact=True)).to_be_visible()
    uploader.locator("[data-testid='stFileUploaderDropzone']").dispatch_event("dragleave", {"dataTransfer": dragged})
    uploader.locator("input[type=file]").evaluate(TWO_FILES)  # two files dropped where one goes
    one_file = sentence(language, "Only one file is allowed.")
    expect(uploader.get_by_role("alert").last).to_have_text(sentence(language, "Error: {sentence}", sentence=one_file))
    if language != "en":
        assert not STREAMLIT_ENGLISH.search(main(page).inner_text())
    assert not page_errors(page), page_errors(page)


# An open list, a folded sidebar, a full-screen chart, an image (the Teacher's QR code: test_language_walk.py)
# and a password shown (its button then hides it)
ONLY_WHEN = {
    *("Close", "Expand sidebar", "Close fullscreen", "Fullscreen: {label}", "Hide password"),
    *("Copy to clipboard", "progress"),  # a teacher key shown, a run training: tests/browser/test_class_walk.py
}


def named(english: str) -> re.Pattern:
    """A name that is `english` (one of FRONTEND_LABELS), whatever it names."""
    return re.compile("^" + re.sub(r"\\\{\w+\\\}", ".+", re.escape(english)) + "$")


@pytest.mark.parametrize("language", ["zh-CN", "en"])
def test_the_names_streamlit_gives_controls_are_in_the_session_s_language(projector_page, lab_server, language):
    """A screen reader hears a help icon, a chosen option's remove button, a select box's placeholder, a range
    slider's thumbs, the sidebar, and a chart's and a table's toolbar buttons by names Streamlit writes in English
    (`FRONTEND_LABELS`), and Plotly words its toolbar's tooltips so too (`ui.charts.PLOTLY_WORDS`): on a Chinese
    page they are Chinese, in English Streamlit's own, so the test fails when an upgrade rewords one."""
    page = projector_page
    open_at(page, lab_server, "lengths", language)  # a range slider, help icons, select boxes, a chart, a table
    names = page.locator("body").evaluate(NAMES)
    go_to(page, "anatomy")  # a multiselect with chosen options
    names += page.locator("body").evaluate(NAMES)
    go_to(page, "checkpoints")  # an uploader
    names += page.locator("body").evaluate(NAMES)
    go_to(page, "teacher")  # a password field (the teacher key)
    names += page.locator("body").evaluate(NAMES)
    go_to(page, "train")  # a table one adds rows to, and an uploaded file
    page.locator(".st-key-train_own_task_expander summary").click()
    page.locator(".st-key-train_task_file input[type=file]").set_input_files(
        [{"name": "pairs.csv", "mimeType": "text/csv", "buffer": b"a b,b a\n"}]
    )
    expect(page.locator("[data-testid='stFileChipName']")).to_have_text("pairs.csv")
    names += page.locator("body").evaluate(NAMES)
    tr = translator(language)
    assert tr.gettext("Remove {item}", item="pairs.csv") in names, [n for n in names if "pairs" in n]
    for english in FRONTEND_LABELS:
        if english not in ONLY_WHEN:
            assert [name for name in names if named(tr.gettext(english)).match(name)], (english, names)
    assert tr.gettext("Download plot as a PNG") in names and tr.gettext("Reset axes") in names
    if language != "en":
        english_names = [named(english) for english in (*FRONTEND_LABELS, *PLOTLY_WORDS)]
        assert not [name for name in names if any(pattern.match(name) for pattern in english_names)]


def test_a_switch_words_the_names_already_on_the_page_again_both_ways(projector_page, lab_server):
    page = projector_page
    open_at(page, lab_server, "lengths", "en")
    english = [named(label) for label in (*FRONTEND_LABELS, *PLOTLY_WORDS)]
    chinese = [named(translator("zh-CN").gettext(label)) for label in (*FRONTEND_LABELS, *PLOTLY_WORDS)]

    def names_like(patterns: list[re.Pattern]) -> list[str]:
        return [n for n in page.locator("body").evaluate(NAMES) if any(p.match(n) for p in patterns)]

    assert names_like(english) and not names_like(chinese)
    choose(page, "language_picker", "简体中文")
    expect(main(page).get_by_role("heading", name="长度测试：它从未见过的输入", exact=True)).to_be_visible()
    wait_idle(page)
    assert names_like(chinese) and not names_like(english)  # the names already there, worded again
    choose(page, "language_picker", "English")
    expect(main(page).get_by_role("heading", name="Length test: inputs it never saw", exact=True)).to_be_visible()
    wait_idle(page)
    assert names_like(english) and not names_like(chinese)  # Streamlit's English given back


# A field's room for its text, within its padding, and the width its value is drawn at, in CSS px.
TEXT_ROOM = """field => {
    const style = getComputedStyle(field), context = document.createElement("canvas").getContext("2d");
    context.font = style.font;
    const room = field.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    return [room, context.measureText(field.value).width];
}"""


@pytest.mark.parametrize("language", ["en", "zh-CN"])
def test_in_a_narrow_column_a_refused_number_shows_itself_and_all_its_words_above_the_next_field(
    new_context, lab_server, language
):
    """Train's settings three to a row at 150% zoom: a refused learning rate's five lines of words ran over the
    next field's label, in room kept for two, and the field's error icon and clear button left no room for the
    number."""
    page = new_context(viewport={"width": 853, "height": 480}, device_scale_factor=1.5).new_page()
    open_at(page, lab_server, "train", language)
    lr = page.locator(".st-key-train_lr")
    lr.locator("input").fill("0.5")
    lr.locator("input").press("Tab")
    alert = lr.get_by_role("alert")
    expect(alert).to_be_visible()
    wait_idle(page)
    below = page.locator(".st-key-train_warmup [data-testid='stWidgetLabel']")  # the next field in its column
    page.wait_for_function(  # the words' own lines, which may run past their box
        "([a, b]) => a.getBoundingClientRect().top + a.scrollHeight <= b.getBoundingClientRect().top",
        arg=[alert.element_handle(), below.element_handle()],
    )
    room, typed = lr.locator("input").evaluate(TEXT_ROOM)
    assert room >= typed > 0, (room, typed)  # the typed 0.5 is shown whole


def test_start_opens_the_folded_section_that_holds_a_refused_number(projector_page, lab_server):
    page = projector_page
    open_at(page, lab_server, "train", "en")
    section = main(page).locator("[data-testid='stExpander']").filter(has=page.locator(".st-key-train_steps"))
    field = page.locator(".st-key-train_steps input")
    if not field.is_visible():
        section.locator("summary").click()
    field.fill("999999999")
    field.press("Tab")  # refused: above the step budget's bound
    expect(page.locator(".st-key-train_steps").get_by_role("alert")).to_be_visible()
    section.locator("summary").click()  # folded again, the refusal out of sight
    expect(field).to_be_hidden()
    button(page, "start_training").click()  # nothing is sent: the section opens at the field that says why
    expect(field).to_be_focused()
    expect(field).to_be_in_viewport()
    assert not page_errors(page), page_errors(page)


def test_start_and_stop_hand_keyboard_focus_to_each_other(projector_page, lab_server):
    page = projector_page
    open_at(page, lab_server, "train", "en")
    page.locator(".st-key-train_steps input").fill("5000")  # a run long enough to stop
    start = button(page, "start_training")
    start.focus()
    page.keyboard.press("Enter")
    stop = button(page, "stop_training")
    expect(stop).to_be_focused(timeout=30_000)  # not lost to the page with the button that went
    page.keyboard.press("Space")
    expect(button(page, "start_training")).to_be_focused(timeout=30_000)
    steps = page.locator(".st-key-train_steps input")
    if not steps.is_visible():  # its folded section, folded again by the runs
        main(page).locator("summary").filter(has_text="Model, optimizer").click()
    steps.fill("300")  # to its step budget and ends on its own, Stop going too
    page.locator(".st-key-train_positional").get_by_text("no PE", exact=True).click()  # never solves: it goes on
    wait_idle(page)
    start.focus()
    page.keyboard.press("Enter")
    expect(stop).to_be_focused(timeout=30_000)
    expect(main(page).get_by_text("Finished after")).to_be_visible(timeout=60_000)
    expect(button(page, "start_training")).to_be_focused(timeout=30_000)
    assert not page_errors(page), page_errors(page)
