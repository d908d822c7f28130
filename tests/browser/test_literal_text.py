"""Text from files and students reaches the browser as its characters: an address in a file's name is no link on the
rendered page, and a `--` in it no dash (`markdown_literal`; tests/test_text_is_text.py checks mail addresses, emoji
codes, arrows and signs, which a file's shown name never holds: its upload makes `_` of `<`, `>` and `=`)."""

import pytest
from conftest import open_page, page_errors, requires_chromium
from playwright.sync_api import expect

from harness.page import main, wait_idle
from transformer.literal import WORD_JOINER

pytestmark = requires_chromium

NAMES = ("www.evil.example.json", "Tom -- Jerry.json")


@pytest.mark.parametrize("name", NAMES)
def test_a_file_named_like_an_address_or_with_signs_is_named_as_text(page, lab_server, tmp_path, name):
    open_page(page, lab_server, "compare")
    bad = tmp_path / name
    bad.write_bytes(b"{not json")
    page.locator(".st-key-compare_upload input[type=file]").set_input_files(str(bad))
    refusal = main(page).locator("[data-testid='stAlertContentError']").filter(has_text="Could not load")
    expect(refusal).to_be_visible(timeout=60_000)
    wait_idle(page)
    said = refusal.inner_text().replace(WORD_JOINER, "")
    assert name in said, said
    assert refusal.locator("a").count() == 0  # Streamlit's Markdown links www.x.y in plain text
    assert not page_errors(page)
