"""Assignments: every value checked against the Train form's bounds before it is kept, groups, seeds, and the
settings a student's run gets."""

import math

import pytest

from transformer.classroom.assignment import Assignment, Group, check_value, form_names, split_groups
from transformer.limits import MAX_GROUPS
from transformer.run_configs import run_configs
from transformer.settings import TRAIN_FORM_LIMITS, form_defaults


@pytest.mark.parametrize(
    "name, value",
    [
        ("steps", 10**6),
        ("steps", 9),
        ("steps", 100.0),
        ("steps", True),
        ("steps", "100"),
        ("lr", math.nan),
        ("lr", math.inf),
        ("lr", 1.0),
        ("dropout", -0.1),
        ("seed", 10_001),
        ("positional", "rotary"),
        ("positional", True),
        ("causal_mask", 1),
        ("task", "sort everything"),
        ("device", "tpu"),
        ("vocab_size", 13),
        ("<script>", 1),
    ],
)
def test_a_value_outside_the_train_forms_bounds_is_refused(name, value):
    with pytest.raises(ValueError):
        check_value(name, value)
    with pytest.raises(ValueError):
        Assignment({name: value})


def test_every_setting_of_the_train_form_has_a_valid_default():
    defaults = form_defaults()
    assert set(form_names()) == set(defaults)
    for name in form_names():
        assert check_value(name, defaults[name]) == defaults[name]
    assert set(TRAIN_FORM_LIMITS) <= set(form_names())
    run_configs(defaults)


@pytest.mark.parametrize(
    "preset, message",
    [({"d_model": 30, "n_heads": 4}, "divisible"), ({"min_len": 9, "max_len": 8}, "shortest input")],
)
def test_settings_that_do_not_fit_together_are_refused(preset, message):
    with pytest.raises(ValueError, match=message):
        Assignment(preset)


@pytest.mark.parametrize(
    "setting, groups, message",
    [
        ("positional", (Group("only", "none"),), "no groups or 2"),
        ("n_heads", tuple(Group(str(h), h) for h in (1, 2, 4, 8, 16))[: MAX_GROUPS + 1], "no groups or 2"),
        ("positional", (Group("a", "none"), Group("a", "learned")), "distinct labels"),
        ("positional", (Group("a", "none"), Group("b", "none")), "distinct values"),
        ("positional", (Group("a", "none"), Group("b", "sideways")), "positional must be one of"),
        ("positional", (Group("", "none"), Group("b", "learned")), "label"),
        ("positional", (Group("x" * 31, "none"), Group("b", "learned")), "label"),
        ("positional", (Group("a" + " " * 10**6, "none"), Group("b", "learned")), "label"),
        ("positional", (Group("a\nb", "none"), Group("b", "learned")), "label"),
        ("seed", (Group("a", 1), Group("b", 2)), "other than the seed"),
        ("colour", (Group("a", 1), Group("b", 2)), "one setting"),
        ("n_heads", (Group("a", 1), Group("b", 3)), "divisible"),  # d_model 32 does not split into 3 heads
    ],
)
def test_bad_groups_are_refused(setting, groups, message):
    with pytest.raises(ValueError, match=message):
        Assignment({}, frozenset(), setting, groups)


def test_students_change_only_open_settings_and_never_their_group_or_seed():
    with pytest.raises(ValueError, match="cannot be open"):
        Assignment({}, frozenset({"seed"}))
    with pytest.raises(ValueError, match="cannot be open"):
        Assignment({}, frozenset({"positional"}), "positional", (Group("a", "none"), Group("b", "learned")))
    with pytest.raises(ValueError, match="unknown settings"):
        Assignment({}, frozenset({"root"}))
    assignment = Assignment(
        {"steps": 600}, frozenset({"lr"}), "positional", (Group("a", "none"), Group("b", "learned"))
    )
    with pytest.raises(ValueError, match="locked by the teacher: steps"):
        assignment.settings(assignment.group(0), changes={"steps": 700})
    with pytest.raises(ValueError, match="lr must be"):
        assignment.settings(assignment.group(0), changes={"lr": 2.0})
    settings = assignment.settings(assignment.group(1), seed=17, changes={"lr": 0.01})
    assert (settings["steps"], settings["lr"], settings["positional"], settings["seed"]) == (600, 0.01, "learned", 17)
    model, data, train = run_configs(settings)
    assert (model.positional, data.seed, train.seed, train.lr) == ("learned", 17, 17, 0.01)


def test_groups_take_turns_and_seeds_stay_distinct_within_the_bounds():
    three = Assignment({"seed": 9_990}, frozenset(), "n_layers", tuple(Group(str(n), n) for n in (1, 2, 3)))
    assert [three.group(p).label for p in range(6)] == ["1", "2", "3", "1", "2", "3"]
    low, high = TRAIN_FORM_LIMITS["seed"]
    seeds = [three.seed(p) for p in range(high - low + 1)]
    assert len(set(seeds)) == len(seeds) and min(seeds) == low and max(seeds) == high
    assert three.seed(0) == 9_990 and three.seed(11) == 0
    assert Assignment().group(5) is None


def test_an_assignment_reads_back_what_it_wrote_and_checks_it_again():
    assignment = Assignment(
        {"label_smoothing": 0.1, "task": "reverse"},
        frozenset({"lr", "steps"}),
        "norm_first",
        (Group("post", False), Group("pre", True)),
    )
    assert Assignment.from_json(assignment.to_json()) == assignment
    tampered = {**assignment.to_json(), "preset": {"steps": 10**9}}
    with pytest.raises(ValueError):
        Assignment.from_json(tampered)


def test_an_assignment_knows_when_some_of_its_runs_train_without_the_causal_mask():
    assert not Assignment().without_causal_mask()
    assert Assignment({"causal_mask": False}).without_causal_mask()
    assert Assignment(setting="causal_mask", groups=split_groups("causal_mask")).without_causal_mask()
    assert not Assignment(setting="positional", groups=split_groups("positional")).without_causal_mask()
