"""The settings' one description: a setting added to it alone reaches the Train form, a class's assignment and the
command line, and each value has one wording wherever it shows."""

import pytest
import torch
from streamlit.testing.v1 import AppTest

import pages.common
from transformer import settings as spec
from transformer.classroom import Assignment
from transformer.classroom.assignment import split_groups
from transformer.cli import build_parser
from transformer.experiments import SWITCHES
from transformer.limits import RUN_LIMITS, TRAIN_FORM_LIMITS
from transformer.naming import run_summary
from transformer.run_configs import run_configs
from transformer.settings import FormPlace, Setting
from transformer.tasks import task_names

EVAL_SIZE = Setting(  # a TrainConfig field no setting describes yet
    "eval_size",
    "int",
    ("train",),
    "Held-out sequences per row",
    "How many held-out sequences each metric row scores.",
    128,
    bounds=(16, 512),
    flag="--eval-size",
    form=FormPlace(2, 2, "train_eval_size"),
)


@pytest.fixture
def eval_size(monkeypatch):
    """A test-only copy of the settings with EVAL_SIZE added."""
    monkeypatch.setattr(spec, "SETTINGS", {**spec.SETTINGS, EVAL_SIZE.name: EVAL_SIZE})


def test_a_new_setting_is_on_the_train_form_and_reaches_the_run(eval_size):
    at = AppTest.from_file("../streamlit_app.py", default_timeout=30)
    at.run()
    torch.set_num_threads(1)
    at.switch_page("pages/train.py")
    at.run()
    assert not at.exception
    field = at.number_input(key="train_eval_size")
    assert (field.label, field.help, field.value, field.min, field.max) == (
        "Held-out sequences per row",
        "How many held-out sequences each metric row scores.",
        128,
        16,
        512,
    )
    field.set_value(64)
    at.number_input(key="train_steps").set_value(10)
    at.button(key="start_training").click().run()
    try:
        assert not at.exception and at.session_state["run"].train_config.eval_size == 64
    finally:
        pages.common.run_registry.clear()  # closes the server: nothing trains on behind the test


def test_a_new_setting_is_accepted_and_locked_in_a_class(eval_size):
    assignment = Assignment({"eval_size": 256})
    assert assignment.settings(None)["eval_size"] == 256
    with pytest.raises(ValueError, match="locked by the teacher: eval_size"):
        assignment.settings(None, changes={"eval_size": 64})
    with pytest.raises(ValueError, match="eval_size must be a whole number in 16..512"):
        Assignment({"eval_size": 8})
    opened = Assignment({}, frozenset({"eval_size"}))
    assert opened.settings(None, changes={"eval_size": 64})["eval_size"] == 64


def test_a_new_setting_is_on_the_command_line(eval_size):
    args = build_parser().parse_args(["train", "--eval-size", "64"])
    assert args.eval_size == 64
    assert build_parser().parse_args(["train"]).eval_size == 256  # the config's own default, as every flag's


def test_every_form_setting_reads_its_bounds_from_the_limits():
    for s in spec.on_form():
        if s.kind in ("int", "float"):
            assert s.bounds == TRAIN_FORM_LIMITS[s.name]
            low, high = RUN_LIMITS.get(s.name, s.bounds)
            assert low <= s.bounds[0] <= s.bounds[1] <= high


def test_a_value_has_one_wording_on_every_page():
    positional = spec.setting("positional")
    assert [g.label for g in split_groups("positional")] == ["sinusoidal PE", "no PE"]  # a class's groups
    assert SWITCHES["positional"].label("none") == positional.word("none") == "no PE"  # Compare's variants
    model, data, train = run_configs({"positional": "none", "norm_first": True})
    assert " · no PE · pre-norm · " in run_summary(model, data, train)  # a run's summary
    for s in spec.SETTINGS.values():
        assert s.default is None or s.kind != "choice" or s.default in s.options
        assert set(s.groups) <= set(s.words) and (not s.compare or len(s.words) >= 2)


def test_the_task_setting_offers_every_task_by_name_and_its_help_says_what_each_teaches():
    task = spec.setting("task")
    assert task.options == tuple(task_names()) and {"add", "translate", "brackets"} <= set(task.options)
    assert all(f"**{name}**" in task.help for name in task_names())
    assert spec.setting("task").check("caesar") == "caesar"
    with pytest.raises(ValueError):
        task.check("pairs")  # a task from examples comes with its pairs, never by name
