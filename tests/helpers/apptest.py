"""Driving the app's pages under AppTest: opening a page with a model in hand, filling and starting the Train form,
rerunning until a run ends, and reading what a page keeps and draws."""

import html
import json
import re
import time
from pathlib import Path

import pytest
import streamlit as st
import torch
from streamlit.testing.v1 import AppTest

from transformer.checkpoint import Checkpoint
from ui.state import FLASHES, RESULTS, ModelResult

APP = str(Path(__file__).resolve().parents[2] / "streamlit_app.py")
# Browsers' user agents, as a page reads them to size its charts (`ui.charts.narrowest_chart_px`)
PHONE = (
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/150.0 Mobile Safari/537.36"
)
LAPTOP = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/150.0 Safari/537.36"


def browse_as(monkeypatch: pytest.MonkeyPatch, agent: str) -> None:
    """Every session's request headers name `agent` as its browser (AppTest sends none)."""
    monkeypatch.setattr(type(st.context), "headers", property(lambda self: {"User-Agent": agent}))


def open_anatomy(checkpoint: Checkpoint | None, lang: str = "en") -> AppTest:
    """The app in language `lang` on the Anatomy page, with `checkpoint` in hand (None: no model)."""
    at = AppTest.from_file(APP, default_timeout=90)
    at.query_params["lang"] = lang
    at.run()
    if checkpoint is not None:
        at.session_state["in_hand"] = checkpoint
        at.session_state["in_hand_name"] = "random test model"
    at.switch_page("pages/anatomy.py")
    at.run()
    assert not at.exception
    return at


def open_with_model(
    page: str = "pages/knockout.py", checkpoint: Checkpoint | None = None, shipped: str | None = "reverse"
) -> AppTest:
    """The app on `page` with a shipped model loaded from Home (the one every session shares), or `checkpoint`."""
    at = AppTest.from_file(APP, default_timeout=120)
    if checkpoint is not None:
        at.session_state["in_hand"] = checkpoint
        at.session_state["in_hand_name"] = "test model"
    at.run()
    if shipped is not None:
        at.button(key=f"load_{shipped}").click().run()
    at.switch_page(page).run()
    assert not at.exception
    return at


def open_train(lang: str | None = None) -> AppTest:
    """The app on the Train page (opened with `?lang=` where `lang` is given), training on one torch thread."""
    at = AppTest.from_file(APP, default_timeout=30)
    if lang is not None:
        at.query_params["lang"] = lang
    at.run()
    torch.set_num_threads(1)  # after the app's own set-up: a busy 2-core machine trains far slower with two
    at.switch_page("pages/train.py")
    at.run()
    assert not at.exception
    return at


def open_class_link(code: str) -> AppTest:
    """A browser that opened the link of the class `code`, taken to Train: its join form."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["class"] = code
    at.run()
    at.switch_page("pages/train.py").run()
    assert not at.exception
    return at


def join_class(at: AppTest, name: str) -> AppTest:
    """Join the class whose join form `at` shows, as `name`."""
    at.text_input(key="class_name").set_value(name)
    at.button(key="class_join_button").click().run()
    assert not at.exception
    return at


def choose_task(at: AppTest, task: str) -> None:
    """Choose `task` on the Train form, in a run of its own."""
    at.selectbox(key="train_task").set_value(task).run()
    assert not at.exception


def start(at: AppTest, **values) -> None:
    """Fill the form (values by widget key, without the "train_" prefix) and press Start. The task comes first, in a
    run of its own, as in a browser: choosing it fills in its default run, which the other values then change."""
    if "task" in values:
        choose_task(at, values.pop("task"))
    for key, value in values.items():
        at.get_by_key(f"train_{key}").set_value(value)
    at.button(key="start_training").click()
    at.run()
    assert not at.exception


def poll_until_done(at: AppTest, timeout_s: float = 90.0) -> None:
    """Rerun the page, as its live fragment would, until the session's job has finished."""
    deadline = time.monotonic() + timeout_s
    while not at.session_state["run"].done:
        assert time.monotonic() < deadline, "training did not finish in time"
        time.sleep(0.3)
        at.run()
        assert not at.exception
    at.run()
    assert not at.exception


def kept(at: AppTest, name: str) -> ModelResult | None:
    """The result a page keeps under `name` (`per_model`, `keep_result`): (model, key, value), or None."""
    return at.session_state[RESULTS].get(name) if RESULTS in at.session_state else None


def flash_waiting(at: AppTest, place: str) -> bool:
    """Whether a one-off message waits for `place` to show it."""
    return FLASHES in at.session_state and place in at.session_state[FLASHES]


def chart(at: AppTest, key: str) -> dict:
    """The plotly spec of the chart with this key."""
    for element in at.get("plotly_chart"):
        if element.proto.id.endswith(key):
            return json.loads(element.proto.spec)
    raise AssertionError(f"no chart with key {key}")


def charts(at: AppTest) -> dict[str, dict]:
    """Plotly figures on the page by their title."""
    specs = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    return {spec["layout"]["title"]["text"]: spec for spec in specs}


def class_links(at: AppTest) -> list[str]:
    """The class links the page shows in large type (the projector view's heading: `ui.links.link_heading`)."""
    found = (re.search(r'<h2[^>]*><a href="([^"]*)"', m.value) for m in at.markdown)
    return [html.unescape(match[1]) for match in found if match]
