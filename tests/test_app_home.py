"""The Home page through AppTest: the shipped models load with one click, and a broken one is refused."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import pages.common
from transformer import CheckpointError

APP = Path(__file__).resolve().parent.parent / "streamlit_app.py"


def open_home() -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=60).run()
    assert not at.exception
    return at


def test_a_shipped_model_loads_with_one_click():
    at = open_home()
    assert {b.key for b in at.button} >= {"load_copy", "load_reverse", "load_sort"}
    at.button(key="load_sort").click().run()
    assert not at.exception
    assert at.session_state["in_hand_name"] == "shipped: sort"
    assert "Loaded **sort**" in at.success[0].value


def test_a_shipped_model_that_fails_to_load_gives_a_message(monkeypatch: pytest.MonkeyPatch):
    def broken(name: str):
        raise CheckpointError(f"{name}.pt is damaged")

    at = open_home()
    monkeypatch.setattr(pages.common, "shipped_checkpoint", broken)
    at.button(key="load_copy").click().run()
    assert not at.exception
    assert "in_hand" not in at.session_state
    assert at.error[0].value == "Could not load copy: copy.pt is damaged"


def test_home_links_every_page_in_teaching_order():
    links = open_home().get("page_link")
    pages = ["train", "anatomy", "masking", "decoding", "compare", "checkpoints"]
    assert [link.proto.page for link in links] == pages
    assert [link.proto.label.strip("*") for link in links] == [
        "Train", "Anatomy", "Masking lab", "Decoding", "Compare runs", "Checkpoints"]
