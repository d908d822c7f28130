"""docs/lesson.md walked in a browser, one test per step, each asserting what the lesson says the step shows."""

import re

from conftest import choose, navigate, open_page, page_errors, requires_chromium, wait_for_more_points
from playwright.sync_api import expect

from harness.page import button, main, wait_idle

pytestmark = requires_chromium

EARLY_INPUT, EARLY_RIGHT = "5 4 3 3 7 6 6 0 4", "4 0 6 6 7 3 3 4 5"  # reverse-early's first held-out example


def load_shipped(page, server, name: str) -> None:
    """Home's Load button for a shipped model (step 1 and step 5 of the lesson)."""
    open_page(page, server, "home")
    button(page, f"load_{name}").click()
    expect(main(page).get_by_text(f"Loaded {name}")).to_be_visible(timeout=30_000)
    wait_idle(page)


def decoded_output(page) -> str:
    """Run the Decoding page to its end and read the whole output. A new input or strategy starts at step 1, so
    Run to end is enabled once the page has drawn it, and the output appears only after the click."""
    expect(button(page, "decode_run_to_end")).to_be_enabled(timeout=30_000)
    button(page, "decode_run_to_end").click()
    output = page.locator(".st-key-decode_output")
    expect(output).to_contain_text("Output:", timeout=30_000)
    return re.search(r"Output: ([^\n]*)", output.inner_text())[1].strip()


def cross_attention_peak(page) -> int:
    """The source position the heads of the shown step's cross-attention weigh most, summed over heads."""
    page.wait_for_selector(".st-key-decode_cross_attention .js-plotly-plot", timeout=30_000)
    return page.evaluate(
        """() => {
            const z = document.querySelector('.st-key-decode_cross_attention .js-plotly-plot')._fullData[0].z;
            const sums = z[0].map((_, s) => z.reduce((total, row) => total + row[s], 0));
            return sums.indexOf(Math.max(...sums));
        }"""
    )


def test_step_1_a_trained_model_decodes_and_looks_at_the_mirrored_position(page, lab_server):
    load_shipped(page, lab_server, "reverse")
    navigate(page, "decoding")
    field = page.locator(".st-key-decode_input input")
    expect(field).to_have_value(re.compile(r"\d"), timeout=30_000)  # the page may still be drawing its first run
    source = field.input_value().split()
    assert cross_attention_peak(page) in (len(source) - 2, len(source) - 1)  # step 1: at or next to the last one
    assert decoded_output(page) == " ".join(reversed(source))
    assert not page_errors(page), page_errors(page)


def test_step_2_two_students_on_the_defaults_watch_one_run_and_the_page_says_so(new_context, page, lab_server):
    classmate = new_context(viewport=page.viewport_size).new_page()
    try:
        for student in (page, classmate):  # both pages open, then both press Start: the default run ends in seconds
            open_page(student, lab_server, "train")
        for student in (page, classmate):
            button(student, "start_training").click()
        # at least the other student (a tab of an earlier test that watched the same defaults may count a while)
        watching = re.compile(r"Same settings as \d+ classmates?: you (are all watching|all trained this) one run")
        expect(main(classmate).get_by_text(watching)).to_be_visible(timeout=60_000)
        wait_for_more_points(page, "train_loss_chart", 1, timeout_s=120)
        assert not page_errors(page) and not page_errors(classmate), page_errors(page) + page_errors(classmate)
    finally:
        classmate.context.close()


def test_step_3_without_positional_encoding_reverse_is_never_learned(page, lab_server):
    open_page(page, lab_server, "compare")
    choose(page, "compare_experiment", "Reverse without positional encoding")
    wait_idle(page)
    page.wait_for_selector(".st-key-compare_curves .js-plotly-plot", timeout=30_000)
    finals = page.evaluate(  # each variant's last exact match (%), the third panel
        """() => Object.fromEntries(document.querySelector('.st-key-compare_curves .js-plotly-plot')._fullData
                .filter(t => t.yaxis === 'y3').map(t => [t.name, t.y[t.y.length - 1]]))"""
    )
    none = [v for name, v in finals.items() if name.startswith("no ")]  # "no PE"
    sinusoidal = [v for name, v in finals.items() if "sinusoidal" in name]
    assert none and sinusoidal and max(none) < 50 < min(sinusoidal), finals
    expect(page.locator(".st-key-compare_run button").first).to_be_visible()  # "Rerun live"
    assert not page_errors(page), page_errors(page)


def test_step_4_peek_at_the_future_changes_nothing_earlier_with_the_mask(page, lab_server):
    load_shipped(page, lab_server, "reverse")
    navigate(page, "masking")
    button(page, "exp_peek_future").click()
    expect(main(page).get_by_text(re.compile(r"With the causal mask: 0 of \d+ positions changed"))).to_be_visible(
        timeout=30_000
    )
    changed = re.compile(r"Without the causal mask[^:]*: [1-9]\d* of \d+ positions")  # earlier outputs read the future
    expect(main(page).get_by_text(changed)).to_be_visible()
    assert not page_errors(page), page_errors(page)


def test_step_5_the_early_model_decodes_its_first_input_three_ways(page, lab_server):
    load_shipped(page, lab_server, "reverse-early")
    navigate(page, "decoding")
    expect(main(page).get_by_text("Decoding with shipped: reverse-early")).to_be_visible()
    expect(page.locator(".st-key-decode_input input")).to_have_value(EARLY_INPUT, timeout=30_000)
    outputs = {}
    for strategy, label in (("greedy", "Greedy"), ("beam", "Beam search"), ("sample", "Sampling")):
        page.locator(".st-key-decode_strategy").get_by_text(label, exact=True).click()
        wait_idle(page)
        outputs[strategy] = decoded_output(page)
    assert len(set(outputs.values())) == 3, outputs
    assert outputs["beam"] == EARLY_RIGHT != outputs["greedy"], outputs
    assert not page_errors(page), page_errors(page)


def test_step_6_exact_match_falls_to_zero_past_the_training_lengths(page, lab_server):
    load_shipped(page, lab_server, "reverse")
    navigate(page, "lengths")
    wait_for_more_points(page, "lengths_accuracy", 0, timeout_s=60)
    curve = page.evaluate(
        """() => { const t = document.querySelector('.st-key-lengths_accuracy .js-plotly-plot')._fullData
                     .find(t => /exact/i.test(t.name));
                   return Array.from(t.x, (x, i) => [x, t.y[i]]); }"""
    )
    by_length = dict(curve)
    assert all(by_length[n] == 100 for n in range(1, 11) if n in by_length), by_length  # percent
    assert min(v for n, v in by_length.items() if n >= 13) == 0, by_length  # a symbol or two past 10
    assert not page_errors(page), page_errors(page)


def test_step_7_anatomy_draws_figure_1_with_shapes_and_parameters(page, lab_server):
    load_shipped(page, lab_server, "reverse")
    navigate(page, "anatomy")
    expect(page.locator(".st-key-anatomy_diagram .js-plotly-plot")).to_be_visible(timeout=30_000)
    expect(main(page).get_by_text("Parameters").first).to_be_visible()
    expect(page.locator("[data-testid='stDataFrame']").first).to_be_visible()
    assert not page_errors(page), page_errors(page)
