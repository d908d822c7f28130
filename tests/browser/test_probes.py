"""Probes in a real browser: activation patching on Knockout, typed inputs to the grid of one head at a time and
of the residual stream; and, after a run on Train, its best head's alignment and how training reshaped the model."""

from conftest import page_errors, requires_chromium
from playwright.sync_api import expect

from harness.chromium import LAPTOP
from harness.page import IDLE, button, fill, open_train, wait_idle

pytestmark = requires_chromium


def test_patching_a_changed_symbol_shows_where_the_clean_answer_comes_back(page, lab_server):
    page.goto(f"{lab_server.url}/knockout?model=reverse", wait_until="domcontentloaded")
    page.wait_for_selector(f"{IDLE} h1", timeout=90_000)
    wait_idle(page)
    main = page.locator("[data-testid='stMain']")
    expect(main).to_contain_text("Activation patching")
    main.locator(".st-key-patch_clean input").fill("3 1 4 1 5")
    main.locator(".st-key-patch_corrupted input").fill("3 1 4 2 5")
    main.locator(".st-key-patch_run button").click()
    wait_idle(page)
    expect(main).to_contain_text("Clean answer 5 1 4 1 3 EOS")
    heads = main.locator(".st-key-patch_heads_chart .js-plotly-plot")
    expect(heads).to_be_visible()
    expect(heads).to_contain_text("cross-attention")
    main.locator(".st-key-patch_sites").get_by_text("the residual stream").click()
    wait_idle(page)
    stream = main.locator(".st-key-patch_stream_chart .js-plotly-plot")
    expect(stream).to_be_visible()
    expect(stream).to_contain_text("encoder residual stream")
    expect(stream).to_contain_text("embeddings")
    main.locator(".st-key-patch_corrupted input").fill("3 1 4")
    main.locator(".st-key-patch_run button").click()
    wait_idle(page)
    expect(main).to_contain_text("as long as the clean one")
    assert page_errors(page) == []


def test_a_finished_run_shows_its_alignment_embeddings_and_gradient_norms(new_context, lab_server):
    page = open_train(new_context(viewport=LAPTOP), lab_server)
    fill(page, "train_seed", 31)  # a run of this test's own
    wait_idle(page)
    button(page, "start_training").click()
    main = page.locator("[data-testid='stMain']")
    expect(main.get_by_text("Finished after")).to_be_visible(timeout=180_000)
    wait_idle(page)
    expect(main.locator(".st-key-train_alignment_chart .js-plotly-plot")).to_be_visible()
    main.get_by_text("How training reshapes the model").click()
    for key, text in (("dynamics_embeddings", "Symbol embeddings"), ("dynamics_gradients", "Gradient norm")):
        chart = main.locator(f".st-key-{key} .js-plotly-plot")
        expect(chart).to_be_visible()
        expect(chart).to_contain_text(text)
    expect(main.get_by_text("Metric row at step")).to_be_visible()
    assert page_errors(page) == []
    page.context.close()
