"""What a student must see is in view and whole: a run started at the foot of Train brings its progress and then its
outcome into view; on a phone nothing covers the page's title or a chart's title; at a projector's 1280x800 no
link, shape, variant name or value chosen in Compare's builder is cut off; and the words fit what happened (a run
that ended has no "yet", one classmate is one classmate, a Stop pressed by the student says so).
"""

import re

import pytest
from conftest import open_more_settings, open_page, page_errors, requires_chromium
from playwright.sync_api import expect

from harness.page import OUTCOME, button, fill, main, wait_idle
from transformer.experiments import CUSTOM, SWITCHES
from transformer.limits import MAX_VARIANTS

pytestmark = requires_chromium

PROJECTOR, PHONE = {"width": 1280, "height": 800}, {"width": 390, "height": 844}

# How far an element reaches past what its box shows (0: it reads whole).
CLIPPED = "el => Math.max(el.scrollWidth - el.clientWidth, 0)"
# Each value chosen in the multiselect with this key: its words, how far they reach past its pill (a value wider than
# the box is cut short, with an ellipsis), and whether the pill lies in the box's shown part (the chosen values stay
# on one line: those past its end scroll out of sight).
CHOSEN = """key => {
    const tags = document.querySelector(`.st-key-${key} [data-testid='stMultiSelectTagsContainer']`);
    const box = tags.getBoundingClientRect();
    return [...tags.querySelectorAll('[data-tag]')].map(pill => {
        const r = pill.getBoundingClientRect(), words = pill.querySelector('span[title]');
        return {
            value: words.title,
            cut: Math.max(words.scrollWidth - words.clientWidth, 0),
            inside: r.left >= box.left - 0.5 && r.right <= box.right + 0.5,
        };
    });
}"""


def in_view(page, selector: str) -> bool:
    """Whether the first element `selector` finds in the main area has its top inside the viewport."""
    box = main(page).locator(selector).first.bounding_box()
    return box is not None and 0 <= box["y"] < page.viewport_size["height"]


def train_defaults_to_the_end(page) -> None:
    button(page, "start_training").click()
    expect(main(page).locator(OUTCOME).first).to_be_visible(timeout=120_000)
    wait_idle(page)


@pytest.fixture
def projector(new_context):
    context = new_context(viewport=PROJECTOR)
    context.set_default_timeout(30_000)
    yield context.new_page()
    context.close()


def test_a_run_started_at_the_foot_of_train_brings_its_progress_then_its_outcome_into_view(projector, lab_server):
    page = projector
    open_page(page, lab_server, "train")
    train_defaults_to_the_end(page)
    page.locator(".st-key-start_training").scroll_into_view_if_needed()  # "Start another run", far down the page
    assert not in_view(page, OUTCOME)
    fill(page, "train_seed", 1)
    open_more_settings(page)
    fill(page, "train_lr", 0.0001)  # a rate too small to solve the task: the run trains its whole budget
    fill(page, "train_steps", 400)
    button(page, "start_training").click()
    expect(main(page).get_by_text("Training: step")).to_be_visible(timeout=60_000)
    assert in_view(page, "[data-testid='stProgress']"), "the new run's progress is out of view"
    expect(main(page).get_by_text(re.compile(r"Finished after 400 steps"))).to_be_visible(timeout=120_000)
    wait_idle(page)
    assert in_view(page, OUTCOME), "the run's outcome is out of view"
    assert not page_errors(page), page_errors(page)


def test_at_1280_the_next_pages_shapes_and_variant_names_read_whole(projector, lab_server):
    page = projector
    open_page(page, lab_server, "train")
    train_defaults_to_the_end(page)
    links = page.locator(".st-key-train_next_pages [data-testid='stPageLink'] p")
    expect(links).to_have_count(3)
    assert [link.evaluate(CLIPPED) for link in links.all()] == [0, 0, 0], links.all_inner_texts()
    assert "Longer inputs" in links.all_inner_texts()

    page.goto(f"{lab_server.url}/anatomy?model=reverse", wait_until="domcontentloaded")
    wait_idle(page)
    modules = main(page).locator("[data-testid='stTable']").nth(1)
    expect(modules).to_contain_text("1×10 ; 1×11")  # source ; target, whole
    assert modules.evaluate("t => t.scrollWidth - t.clientWidth") <= 1  # every column shown

    page.goto(f"{lab_server.url}/compare?experiment=recurrent-baseline", wait_until="domcontentloaded")
    wait_idle(page)
    summary = main(page).locator("[data-testid='stTable']").first
    expect(summary).to_contain_text("GRU encoder-decoder")
    assert summary.evaluate("t => t.scrollWidth - t.clientWidth") <= 1
    names = page.locator(".st-key-compare_timeline_variant label p")
    assert names.count() > 0 and all(name.evaluate(CLIPPED) == 0 for name in names.all()), names.all_inner_texts()
    assert not page_errors(page), page_errors(page)


@pytest.mark.parametrize("language", ["en", "zh-CN"])
def test_at_1280_every_value_the_compare_builder_can_vary_reads_whole(projector, lab_server, language):
    """Each switch with as many of its values chosen as an experiment may have: every chosen value whole, in view."""
    page, problems = projector, []
    for name, switch in SWITCHES.items():
        values = switch.choices[:MAX_VARIANTS]
        tokens = ",".join(map(switch.token, values))
        url = f"{lab_server.url}/compare?experiment={CUSTOM}&switch={name}&values={tokens}&lang={language}"
        page.goto(url, wait_until="domcontentloaded")
        pills = page.locator(".st-key-compare_values [data-testid='stMultiSelectTagsContainer'] [data-tag]")
        expect(pills).to_have_count(len(values))
        wait_idle(page)
        for pill in page.evaluate(CHOSEN, "compare_values"):
            if pill["cut"] or not pill["inside"]:
                hidden = f"{pill['cut']} px of its words cut off" if pill["cut"] else "out of the box's view"
                problems.append(f"{name}: {pill['value']!r} {hidden}")
    assert not problems, "\n".join(problems)
    assert not page_errors(page), page_errors(page)


def test_a_run_that_ended_has_no_head_that_has_not_reached_it_yet(projector, lab_server):
    page = projector
    open_page(page, lab_server, "train")
    open_more_settings(page)
    fill(page, "train_steps", 40)  # far too few steps for a head to find the algorithm
    train_defaults_to_the_end(page)
    caption = main(page).get_by_text(re.compile(r"No head reached 0\.9 in this run"))
    expect(caption).to_be_visible()
    assert "yet" not in caption.inner_text()


def test_one_classmate_reads_one_and_stop_says_who_pressed_it(new_context, projector, lab_server):
    page, classmate = projector, new_context(viewport=PROJECTOR).new_page()
    try:
        for student in (page, classmate):
            open_page(student, lab_server, "train")
            fill(student, "train_seed", 7)
            open_more_settings(student)
            fill(student, "train_lr", 0.0001)  # never solved: both watch it train until they stop it
            fill(student, "train_steps", 5000)
            button(student, "start_training").click()
        expect(main(classmate).get_by_text("Same settings as 1 classmate:")).to_be_visible(timeout=60_000)
        button(classmate, "stop_training").click()  # the classmate leaves: the run goes on for the other
        expect(main(classmate).get_by_text("it goes on for the 1 other student watching it.")).to_be_visible()
        button(page, "stop_training").click()  # the last watcher's Stop stops the run
        expect(main(page).get_by_text(re.compile(r"Stopped at step \d+ .*because you pressed Stop:"))).to_be_visible(
            timeout=30_000
        )
        assert not page_errors(page) and not page_errors(classmate), page_errors(page) + page_errors(classmate)
    finally:
        classmate.context.close()


def test_on_a_phone_joining_a_finished_run_covers_no_title_and_no_toolbar_covers_a_chart_title(new_context, lab_server):
    first, phone = (new_context(viewport=size).new_page() for size in (PROJECTOR, PHONE))
    try:
        for student in (first, phone):  # the same settings: the phone's Start joins the run that has finished
            open_page(student, lab_server, "train")
            fill(student, "train_seed", 11)
            open_more_settings(student)
            fill(student, "train_steps", 60)
            train_defaults_to_the_end(student)
        expect(main(phone).get_by_text("Start joined the run these settings already made")).to_be_visible()
        assert phone.locator("[data-testid='stToast']").count() == 0  # it would cover the page's title
        assert in_view(phone, "[data-testid='stAlertContentInfo']")
        chart = phone.locator(".st-key-train_loss_chart")
        chart.scroll_into_view_if_needed()
        chart.hover()  # a tap on a phone: the chart's toolbar shows
        toolbar = chart.locator(".modebar")
        expect(toolbar).to_be_visible()
        bar, title = toolbar.bounding_box(), chart.locator(".gtitle").bounding_box()
        assert bar["y"] + bar["height"] <= title["y"], f"the toolbar {bar} reaches over the title {title}"
        assert not page_errors(phone), page_errors(phone)
    finally:
        first.context.close()
        phone.context.close()
