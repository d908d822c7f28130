"""The Home page through AppTest: the shipped models load with one click, a broken one is refused, and the first
lesson is open on the page, before anything is clicked and after, and names only pages, buttons and experiments that
exist."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import ui.common
import ui.state
from tests.helpers import wait_until
from transformer import CheckpointError
from transformer.experiments import READY
from transformer.settings import setting

APP = Path(__file__).resolve().parents[2] / "streamlit_app.py"


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
    monkeypatch.setattr(ui.state, "shipped_checkpoint", broken)
    at.button(key="load_copy").click().run()
    assert not at.exception
    assert "in_hand" not in at.session_state
    assert at.error[0].value == "Could not load copy: copy.pt is damaged"


def test_home_links_every_page_in_teaching_order():
    links = open_home().get("page_link")
    pages = ["train", "anatomy", "masking", "decoding", "lengths", "knockout", "compare", "teacher", "checkpoints"]
    assert [link.proto.page for link in links] == pages
    assert [link.proto.label.strip("*") for link in links] == [
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


def lesson_text(at: AppTest) -> str:
    """The first lesson's text, from the main area's top level (not inside an expander that could fold it)."""
    headings = [element.value for element in at.main if element.type == "header"]
    assert "A first lesson, about 20 minutes" in headings
    steps = [element.value for element in at.main if element.type == "markdown" and element.value.startswith("1. ")]
    assert len(steps) == 1, steps
    return steps[0]


def test_home_opens_on_the_lesson_and_keeps_it_open_after_a_load():
    at = open_home()
    assert not at.expander  # nothing to open
    before = lesson_text(at)
    at.button(key="load_reverse").click().run()
    assert not at.exception and "Loaded **reverse**" in at.success[0].value
    assert lesson_text(at) == before


def test_the_first_lesson_names_what_exists():
    at = open_home()
    text = lesson_text(at)
    assert text.startswith("1. **See a trained model work.**") and "7. **Open it up.**" in text
    links = {link.proto.label for link in at.get("page_link")}  # the page list above it: "**Train**", ...
    for page in ("**Decoding**", "**Train**", "**Compare runs**", "**Masking lab**", "**Length test**", "**Anatomy**"):
        assert page in text and page in links
    assert "load_reverse" in {b.key for b in at.button}  # "Load *reverse* above"
    assert "Reverse without positional encoding" in {experiment.title for experiment in READY.values()}
    at.button(key="load_reverse").click().run()  # step 3 sends the student to the Masking lab's experiment
    at.switch_page("pages/masking.py").run()
    assert not at.exception and at.button(key="exp_peek_future").label == "Peek at the future"
    assert "press *Peek at the future*" in text


def test_the_lessons_run_of_ones_own_can_be_paused_stepped_and_resumed():
    """Step 2: a shared run cannot be paused and a default run of one's own ends before a Pause lands; the run the
    step names (sort, inputs up to 12, a seed of one's own) trains long enough to pause, step and resume."""
    text = lesson_text(open_home())
    assert f"*{setting('task').label}* to sort, *{setting('max_len').label}* to 12 and a seed of their own" in text
    ui.common.run_registry.clear()  # a server of its own: no earlier test's run to join
    at = open_home()
    at.switch_page("pages/train.py").run()
    at.get_by_key("train_task").set_value("sort").run()  # the task first: it fills in its default run
    for key, value in (("train_max_len", 12), ("train_seed", 7)):
        at.get_by_key(key).set_value(value)
    at.button(key="start_training").click().run()
    run = at.session_state["run"]
    try:
        wait_until(lambda: len(run.rows) >= 2, timeout=60)
        at.run()
        assert not at.button(key="pause_training").disabled  # a run of one's own, still training
        at.button(key="pause_training").click().run()
        wait_until(lambda: run.status == "paused", timeout=30)
        at.run()
        held = run.step
        at.button(key="step_training").click().run()
        wait_until(lambda: run.status == "paused" and run.step > held, timeout=30)
        at.run()
        at.button(key="pause_training").click().run()
        assert not at.exception and run.status == "training" and not run.done
    finally:
        run.stop(wait_s=30)
        ui.common.run_registry.clear()
