"""The app in a real browser: every page opens clean, a training run streams and stops, a trained model decodes
step by step to the right answer, and a masking experiment shows its result. Screenshots go to
artifacts/screenshots/."""

import re
import time

from conftest import (
    chart_points,
    navigate,
    open_more_settings,
    open_page,
    page_errors,
    put_reverse_in_hand,
    requires_chromium,
    screenshot,
    wait_for_more_points,
)
from playwright.sync_api import expect

from harness.chromium import VIEWPORT
from harness.page import PAGES, button, fill, main, wait_idle
from harness.paths import ARTIFACTS
from harness.server import LabServer

pytestmark = requires_chromium

SOURCE, REVERSED = "2 7 1 8", "8 1 7 2"
NAV_TITLES = [
    "Home",
    "Train",
    "Anatomy",
    "Masking lab",
    "Decoding",
    "Length test",
    "Knockout",
    "Compare runs",
    "Teacher",
    "Checkpoints",
]


def test_every_page_opens_without_a_model(page, lab_server):
    for name in PAGES:
        open_page(page, lab_server, name)
        assert not page_errors(page), f"{name}: {page_errors(page)}"
        screenshot(page, f"{name}-no-model")


def test_a_deep_link_on_a_fresh_server_gets_the_whole_app(new_context):
    """The first visitor after a restart (or a Community Cloud wake-up) may open /decoding directly."""
    with LabServer(ARTIFACTS / "server-deep-link.log") as server:
        context = new_context(viewport=VIEWPORT)
        page = context.new_page()
        open_page(page, server, "decoding")
        links = page.locator("[data-testid='stSidebarNav'] a").all_inner_texts()
        context.close()
        assert [link.splitlines()[-1] for link in links] == NAV_TITLES, f"the sidebar lists {links}"
        server.check_alive()


def test_every_page_opens_with_a_model_in_hand(page, lab_server, reverse_checkpoint):
    put_reverse_in_hand(page, lab_server, reverse_checkpoint)
    for name in PAGES:
        navigate(page, name)
        expect(page.locator("h1").first).to_be_visible()
        assert not page_errors(page), f"{name}: {page_errors(page)}"
        screenshot(page, name)


def test_training_streams_points_then_stops(page, lab_server):
    open_page(page, lab_server, "train")
    # small batches step fast, so metric rows come often; without positional encoding reverse cannot be learned,
    # so the run is still going at Stop
    page.locator(".st-key-train_positional").get_by_text("no PE", exact=True).click()
    open_more_settings(page)
    fill(page, "train_batch", 16)
    fill(page, "train_steps", 5000)
    fill(page, "train_time_budget", 120)
    button(page, "start_training").click()
    expect(main(page).get_by_text("Training: step")).to_be_visible(timeout=30_000)
    expect(button(page, "start_training")).to_have_count(0)  # the form makes way for the run
    first = wait_for_more_points(page, "train_loss_chart", 0)
    wait_for_more_points(page, "train_loss_chart", first)
    screenshot(page, "train-running")

    # A reload starts a new session; the browser gets its run back, still training, curve and all.
    page.reload()
    wait_idle(page)
    expect(main(page).get_by_text("Training: step")).to_be_visible(timeout=30_000)
    expect(button(page, "stop_training")).to_be_enabled()
    first = wait_for_more_points(page, "train_loss_chart", 0)
    more = wait_for_more_points(page, "train_loss_chart", first)
    assert more > first

    button(page, "stop_training").click()
    expect(main(page).get_by_text(re.compile(r"Stopped at step \d+"))).to_be_visible(timeout=30_000)
    expect(button(page, "start_training")).to_be_enabled()
    expect(button(page, "stop_training")).to_have_count(0)
    wait_idle(page)
    open_more_settings(page)
    expect(page.locator(".st-key-train_steps input")).to_have_value("5000")  # the form kept the run's settings
    stopped_at = chart_points(page, "train_loss_chart")
    assert stopped_at >= more
    page.wait_for_timeout(2000)
    assert chart_points(page, "train_loss_chart") == stopped_at, "points still arrive after Stop"
    assert not page_errors(page), page_errors(page)
    screenshot(page, "train-stopped")


def test_decoding_steps_to_the_reversed_input(page, lab_server, reverse_checkpoint):
    put_reverse_in_hand(page, lab_server, reverse_checkpoint)
    navigate(page, "decoding")
    field = page.locator(".st-key-decode_input input")
    field.fill(SOURCE)
    field.press("Enter")
    wait_idle(page)
    output = page.locator(".st-key-decode_output")
    next_button = button(page, "decode_next")
    clicks = 0
    while next_button.is_enabled() and clicks < 20:  # four tokens and EOS: five steps, four clicks
        expect(output).to_have_count(0)  # the answer shows only once decoding reached the end
        next_button.click()
        clicks += 1
        expect(main(page).get_by_text(f"Step {clicks + 1} of")).to_be_visible(timeout=30_000)
        wait_idle(page)
    assert clicks == len(SOURCE.split()), f"{clicks} clicks to reach the end"
    expect(output).to_contain_text(f"Output: {REVERSED}")
    expect(output).to_contain_text("right")
    expect(output).not_to_contain_text("wrong")
    assert not page_errors(page), page_errors(page)
    screenshot(page, "decoding-end")

    button(page, "decode_reset").click()
    expect(output).to_have_count(0, timeout=30_000)
    button(page, "decode_run_to_end").click()
    expect(output).to_contain_text(f"Output: {REVERSED}", timeout=30_000)


def test_the_length_test_finds_where_reverse_stops_working_and_opens_a_miss_on_decoding(
    page, lab_server, reverse_checkpoint
):
    put_reverse_in_hand(page, lab_server, reverse_checkpoint)
    navigate(page, "lengths")
    expect(main(page).get_by_text("Longer than any it trained on")).to_be_visible(timeout=60_000)
    wait_for_more_points(page, "lengths_accuracy", 0)
    wait_for_more_points(page, "lengths_output", 0)
    trained_max = int(re.search(r"lengths 1-(\d+)", page.locator("[data-testid='stSidebar']").inner_text())[1])
    button(page, "lengths_decode").click()  # the first wrong output at the first length with one
    page.wait_for_url(re.compile(r"/decoding(\?.*)?$"), timeout=30_000)
    wait_idle(page)
    field = page.locator(".st-key-decode_input input")
    expect(field).to_have_value(re.compile(r"\d"), timeout=30_000)  # the page may still be drawing its first run
    opened = field.input_value()
    assert len(opened.split()) > trained_max, opened  # the shipped model gets every trained length right
    expect(main(page).get_by_text(f"The model was trained on lengths 1-{trained_max}")).to_be_visible()
    assert not page_errors(page), page_errors(page)
    screenshot(page, "lengths-to-decoding")


def test_masking_peek_experiment_shows_its_tables(page, lab_server, reverse_checkpoint):
    put_reverse_in_hand(page, lab_server, reverse_checkpoint)
    navigate(page, "masking")
    tables = page.locator("[data-testid='stDataFrame'], [data-testid='stTable']")
    tables_before = tables.count()
    button(page, "exp_peek_future").click()
    verdict = main(page).get_by_text(re.compile(r"With the causal mask: 0 of \d+ positions changed"))
    expect(verdict).to_be_visible(timeout=30_000)
    without = main(page).get_by_text(re.compile(r"Without the causal mask[^:]*: \d+ of \d+ positions changed"))
    expect(without).to_be_visible()
    expect(tables).to_have_count(tables_before + 2)
    assert not page_errors(page), page_errors(page)
    screenshot(page, "masking-peek")


def heatmap_step(page) -> int:
    """The training step in the title of the Compare page's first attention heatmap (-1 while there is none)."""
    title = page.evaluate("() => document.querySelector('.st-key-compare_heads_0 .gtitle')?.textContent ?? ''")
    # (the first of the chart's titles: Plotly briefly keeps the old one while it redraws)
    return int(match.group(1)) if (match := re.search(r"step (\d+)", title)) else -1


def wait_for_heatmap_step(page, wanted, what: str, timeout_s: float = 60.0) -> int:
    """The heatmap's step once `wanted(step)` holds (Plotly keeps an old title for a moment while it redraws)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if wanted(step := heatmap_step(page)):
            return step
        page.wait_for_timeout(250)
    raise AssertionError(f"the attention timeline stayed at step {heatmap_step(page)}, not {what}")


def test_a_live_comparison_survives_a_reload_and_its_timeline_follows_training_until_told_not_to(page, lab_server):
    open_page(page, lab_server, "compare")
    button(page, "compare_run").click()
    expect(main(page).get_by_text("Training variant 1 of 2")).to_be_visible(timeout=30_000)
    wait_for_heatmap_step(page, lambda s: 0 < s < 600, "a live snapshot (600 is the shipped run's last)")
    # A reload starts a new session; the browser gets its comparison back, still training.
    page.reload()
    wait_idle(page)
    expect(main(page).get_by_text(re.compile(r"Training variant \d of 2"))).to_be_visible(timeout=30_000)
    expect(button(page, "compare_stop")).to_be_enabled()
    wait_for_heatmap_step(page, lambda s: s > 200, "past 200", 90)  # it follows the newest, not an early snapshot
    page.locator(".st-key-compare_follow label").click()  # following off: the slider is the student's
    wait_idle(page)
    slider = page.locator("[class*='st-key-timeline_step_'] input[type='range']")
    slider.press("Home")
    wait_for_heatmap_step(page, lambda s: s == 0, "step 0, the step picked")
    picked_at = int(slider.get_attribute("max"))
    page.wait_for_function(  # new snapshots arrive meanwhile (the timeline grows), unless a fast machine has ended
        """([selector, picked]) => Number(document.querySelector(selector)?.max) > picked
            || !document.querySelector("[data-testid='stMain']").innerText.includes("Training variant")""",
        arg=["[class*='st-key-timeline_step_'] input[type='range']", picked_at],
        timeout=90_000,
    )
    training = "Training variant" in main(page).inner_text()
    assert int(slider.get_attribute("max")) > picked_at or not training, "no snapshot arrived while it trained"
    assert heatmap_step(page) == 0, "a picked step was replaced by the newest"
    page.locator(".st-key-compare_follow label").click()  # following again
    wait_for_heatmap_step(page, lambda s: s > 0, "the newest again")
    stop = button(page, "compare_stop")
    if stop.count() and stop.first.is_enabled():  # still training: stop it, as a student leaving would
        stop.first.click()
    wait_idle(page)
    assert not page_errors(page), page_errors(page)
