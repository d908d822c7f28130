"""The settings' one description: a setting added to it alone reaches the Train form, Compare's custom builder, the
Teacher page and a class's assignment, the command line and its docs, run summaries and checkpoints, and each value
has one wording wherever it shows."""

from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

import ui.classes
import ui.common
from transformer import settings as spec
from transformer.checkpoint import load_checkpoint
from transformer.classroom import Assignment
from transformer.classroom.assignment import split_groups
from transformer.cli import DOCS, REWRITE_DOCS, build_parser, options_table, with_options_table
from transformer.compare_state import experiment_for, read_compare, write_compare
from transformer.experiments import SWITCHES
from transformer.naming import run_summary
from transformer.run_configs import run_configs
from transformer.settings import RUN_LIMITS, TRAIN_FORM_LIMITS, FormPlace, Setting
from transformer.tasks import task_names
from transformer.training import TrainConfig

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class WithWeightDecay(TrainConfig):
    """TrainConfig with the field the new setting sets (a real setting adds it to TrainConfig itself)."""

    weight_decay: float = 0.0


WEIGHT_DECAY = Setting(  # a setting the lab does not have
    "weight_decay",
    "float",
    ("train",),
    "Weight decay",
    "How much each step shrinks the weights.",
    0.0,
    bounds=(0.0, 0.1),
    flag="--weight-decay",
    form=FormPlace(3, 1, "train_weight_decay"),
)


@pytest.fixture
def weight_decay(monkeypatch):
    """A test-only copy of the settings with WEIGHT_DECAY added, and of the configs with its field."""
    monkeypatch.setattr(spec, "SETTINGS", {**spec.SETTINGS, WEIGHT_DECAY.name: WEIGHT_DECAY})
    monkeypatch.setitem(spec.CONFIGS, "train", WithWeightDecay)


def open_page(page: str, **query: str) -> AppTest:
    """The app on `page`, opened with the link's `query`."""
    at = AppTest.from_file("../streamlit_app.py", default_timeout=60)
    for name, value in query.items():
        at.query_params[name] = value
    at.run()
    at.switch_page(page).run()
    assert not at.exception
    return at


def weight_decay_field(at: AppTest, key: str):
    """The new setting's widget under `key`, drawn from its entry as on the Train form."""
    field = at.number_input(key=key)
    assert (field.label, field.help, field.value, field.min, field.max) == (
        "Weight decay",
        "How much each step shrinks the weights.",
        0.0,
        0.0,
        0.1,
    )
    return field


def test_a_new_setting_is_on_the_train_form_and_reaches_the_run(weight_decay):
    assert WEIGHT_DECAY in spec.on_form()
    torch.set_num_threads(1)
    at = open_page("pages/train.py")
    weight_decay_field(at, "train_weight_decay").set_value(0.01)
    at.number_input(key="train_steps").set_value(10)
    at.button(key="start_training").click().run()
    try:
        assert not at.exception and at.session_state["run"].train_config.weight_decay == 0.01
    finally:
        ui.common.run_registry.clear()  # closes the server: nothing trains on behind the test


def test_a_new_setting_is_in_compares_custom_builder_and_reaches_its_variants(weight_decay):
    at = open_page("pages/compare.py", experiment="custom")
    weight_decay_field(at, "compare_weight_decay").set_value(0.01).run()
    assert not at.exception and at.query_params["weight_decay"] == "0.01"
    state = at.session_state["compare_state"]
    assert state.settings == {"weight_decay": 0.01}
    experiment = experiment_for(state)
    assert all(experiment.configs(value)[2].weight_decay == 0.01 for value in experiment.values)
    assert read_compare(write_compare(state)) == (state, [])  # its link opens it again


def test_a_new_setting_is_on_the_teacher_page_and_in_the_class_s_assignment(weight_decay, tmp_path, monkeypatch):
    monkeypatch.setenv("LAB_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("LAB_DATABASE_URL", raising=False)
    ui.classes.class_store.clear()
    try:
        at = open_page("pages/teacher.py")
        at.text_input(key="teacher_title").set_value("Period 3")
        at.button(key="teacher_create_button").click().run()
        at.button(key="teacher_key_saved").click().run()
        weight_decay_field(at, "teacher_weight_decay").set_value(0.05)
        at.button(key="teacher_save").click().run()
        assert not at.exception and at.success
        info = ui.classes.class_store().class_info(at.session_state["teacher_class"][0])
        assert info.assignment.preset["weight_decay"] == 0.05
    finally:
        ui.classes.class_store.clear()


def test_a_new_setting_is_accepted_and_locked_in_a_class(weight_decay):
    assignment = Assignment({"weight_decay": 0.05})
    assert assignment.settings(None)["weight_decay"] == 0.05
    with pytest.raises(ValueError, match="locked by the teacher: weight_decay"):
        assignment.settings(None, changes={"weight_decay": 0.01})
    with pytest.raises(ValueError, match=r"weight_decay must be a number in 0.0..0.1"):
        Assignment({"weight_decay": 0.5})
    opened = Assignment({}, frozenset({"weight_decay"}))
    assert opened.settings(None, changes={"weight_decay": 0.01})["weight_decay"] == 0.01


def test_a_new_setting_is_on_the_command_line_and_in_its_docs(weight_decay):
    args = build_parser().parse_args(["train", "--weight-decay", "0.01"])
    assert args.weight_decay == 0.01
    assert build_parser().parse_args(["train"]).weight_decay == 0.0  # the config's own default, as every flag's
    training = next(row for row in options_table().splitlines() if row.startswith("| Training |"))
    assert "`--weight-decay` Weight decay (0)" in training


def test_a_new_setting_is_in_a_runs_summary_when_set_away_from_its_default(weight_decay):
    model, data, train = run_configs({"weight_decay": 0.01})
    assert train.weight_decay == 0.01 and " · Weight decay: 0.01 · " in run_summary(model, data, train)
    model, data, train = run_configs({})
    assert "Weight decay" not in run_summary(model, data, train)


def test_a_checkpoint_saved_before_a_new_setting_still_loads(weight_decay):
    checkpoint = load_checkpoint(ROOT / "checkpoints" / "reverse.pt")
    assert "weight_decay" not in checkpoint.train_config  # the record of its run, as saved: nothing made up


def test_a_setting_an_older_checkpoint_lacks_reads_as_its_config_default(tmp_path):
    stored = torch.load(ROOT / "checkpoints" / "reverse.pt", weights_only=True)
    assert "architecture" not in stored["model_config"]  # saved before the recurrent baseline
    del stored["model_config"]["scale_scores"], stored["task"]["n_valid"]
    torch.save(stored, tmp_path / "older.pt")
    checkpoint = load_checkpoint(tmp_path / "older.pt")
    assert (checkpoint.config.architecture, checkpoint.config.scale_scores, checkpoint.task.n_valid) == (
        "transformer",
        True,
        1000,
    )


def test_the_docs_table_of_options_is_the_settings():
    text = DOCS.read_text(encoding="utf-8")
    assert with_options_table(text) == text, f"docs/cli.md's table of train options is stale: run {REWRITE_DOCS}"
    changed = text.replace("`--max-len` Longest input (16)", "`--max-len` Longest input (32)")
    assert with_options_table(changed) == text


def test_every_number_on_the_form_has_bounds_within_a_runs():
    for s in spec.on_form():
        if s.kind in ("int", "float"):
            low, high = s.run_bounds or s.bounds
            assert low <= s.bounds[0] <= s.bounds[1] <= high
            assert TRAIN_FORM_LIMITS[s.name] == s.bounds and RUN_LIMITS.get(s.name) == s.run_bounds


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
