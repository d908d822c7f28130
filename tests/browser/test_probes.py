"""Probes in a real browser: activation patching on Knockout, typed inputs to the grid of one head at a time and
of the residual stream."""

import pytest
from conftest import IDLE, page_errors, requires_chromium, wait_idle
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, requires_chromium]


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
    expect(main).to_contain_text("Clean answer 5 1 4 1 3 </s>")
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
