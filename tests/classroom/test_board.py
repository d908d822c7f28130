"""The board's data and the questions' grading, from hand-made class snapshots: no database needed."""

import io
import math
import re
import statistics
from dataclasses import replace
from datetime import datetime

import pandas as pd
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from transformer.classroom import Assignment, ClassInfo, Group, Prediction, RunState, Snapshot, Student, board
from transformer.classroom.assignment import split_groups
from transformer.classroom.board import FORMULA_START, PREDICTION_COLUMNS, RESULT_COLUMNS, SEPARATORS, STALL_ROWS
from transformer.classroom.outcomes import Outcome, measured
from transformer.classroom.questions import (
    OUT_OF_TIME,
    QUESTIONS,
    compared,
    question_text,
    right_choices,
    solved_sooner,
)
from transformer.i18n import translator
from transformer.pairs import pairs_from_rows
from transformer.training import METRIC_COLUMNS

PE = Assignment({"task": "reverse"}, frozenset(), "positional", (Group("PE", "sinusoidal"), Group("no PE", "none")))
WHEN = datetime(2026, 11, 25, 9)


def finished(steps: int, solved: bool, exact_match: float = 1.0, losses: tuple[float, ...] = (2.0, 1.0)) -> RunState:
    """A run that ended on its own after `steps` steps, with metric rows at even steps up to its end."""
    reason = "solved" if solved else "step budget"
    rows = tuple({"step": steps * (i + 1) // len(losses), "train_loss": loss} for i, loss in enumerate(losses))
    result = {"steps": steps, "seconds": 5.0, "exact_match": exact_match, "token_acc": 0.9, "reason": reason}
    return RunState("finished", steps, None, rows, result)


def class_of(runs: list[RunState | None], assignment: Assignment | None = PE, question: str | None = None, **kw):
    """A snapshot of students S0, S1, ... (groups alternate) with these runs (None: not started)."""
    assignment_ = assignment or Assignment()
    students = tuple(
        Student(i + 1, f"S{i}", i, (g.label if (g := assignment_.group(i)) else None), i, WHEN)
        for i in range(len(runs))
    )
    info = ClassInfo("amber-otter-7351", "Period 3", WHEN, WHEN, assignment, question)
    states = {s.id: run for s, run in zip(students, runs) if run is not None}
    return Snapshot(info, students, states, kw.get("predictions", {}))


def test_states_and_results_read_as_words():
    assert board.state_text(None) == "not started"
    assert board.state_text(RunState("queued", queue_place=3)) == "queued, place 3"
    assert board.state_text(RunState("training", step=420)) == "training at step 420"
    assert board.state_text(RunState("paused", step=420)) == "paused at step 420"
    ended = ("finished", "failed", "stopped")
    assert [board.state_text(RunState(s)) for s in ended] == list(ended)
    assert board.result_text(finished(450, True)) == "solved in 450 steps"
    assert board.result_text(finished(600, False, 0.62)) == "not solved in 600 steps: exact match 62.0%"
    assert board.result_text(finished(600, False, 0.997)) == "not solved in 600 steps: exact match 99.7%"
    # trained every step (no early stop), all right at the end: not "not solved ... 100.0%"
    assert board.result_text(finished(600, False, 1.0)) == "every held-out sequence right after 600 steps"
    assert board.result_text(RunState("stopped", step=120)) == "stopped at step 120"
    closed = RunState("stopped", 120, result={"steps": 120, "reason": "page closed"})
    assert board.result_text(closed) == "stopped at step 120 when its page closed"
    limit = RunState("stopped", 120, result={"steps": 120, "reason": "ended by the server"})
    assert board.result_text(limit) == "stopped at step 120 by the server"
    assert board.result_text(RunState("stopped", step=0)) == "stopped before it started"  # it left the queue
    assert board.result_text(RunState("failed", error="The loss became NaN")) == "The loss became NaN"


def test_a_lost_run_says_where_it_was_lost_is_flagged_and_counts_for_no_outcome():
    rows = tuple({"step": 10 * i, "train_loss": 3.0 - 0.01 * i} for i in range(1, 27))
    lost = RunState("lost", 261, None, rows)  # not through `bounded`: the store may not know "lost" yet
    assert board.state_text(lost) == "lost at step 261"
    assert board.result_text(lost) == "lost at step 261: the server restarted or lost it; press Start again"
    queued = RunState("lost", 0, None)  # lost while it waited in the queue
    assert board.state_text(queued) == "lost before it started"
    assert board.result_text(queued) == "lost before it started: the server restarted or lost it; press Start again"
    assert measured(lost) is None
    snapshot = class_of([lost, finished(300, True), None])
    assert board.flags(snapshot).values.tolist() == [
        ["S0", "run lost: ask them to press Start again"],
        ["S2", "has not started"],
    ]
    assert board.outcome_table(snapshot)["group"].tolist() == ["no PE"]
    assert board.difference_sentence(snapshot).startswith("Solved: none yet (PE) against 1 of 1 (no PE)")
    assert board.student_rows(snapshot)["state"].tolist() == ["lost at step 261", "finished", "not started"]
    assert board.student_rows(snapshot)["result"][0] == "the server restarted or lost it"  # the flag says what to do
    assert board.results_frame(snapshot)["state"].tolist()[0] == "lost at step 261"
    assert board.results_frame(snapshot)["steps"].tolist()[:1] == [261]  # as a number too, for a script
    pe = board.group_curves(snapshot)["PE"]  # its curve ends at its last row, as a run still training would
    assert pe.members[1].tolist() == [r["train_loss"] for r in rows]


def test_a_run_stopped_by_its_student_or_failed_has_no_measured_outcome():
    assert measured(finished(450, True)) == Outcome(True, 450, 1.0, 1.0)
    stopped = RunState("stopped", 40, None, ({"step": 40, "train_loss": 1.0},), {"steps": 40, "reason": "stopped"})
    assert measured(stopped) is None
    assert measured(RunState("failed", error="x")) is None
    assert measured(RunState("training", step=50)) is None


def test_student_rows_hold_name_group_curve_state_and_result():
    rows = board.student_rows(class_of([finished(300, True, losses=(3.0, 2.0, 1.0)), None]))
    assert list(rows.columns) == ["name", "group", "curve", "state", "result"]
    assert rows.iloc[0].tolist() == ["S0", "PE", [3.0, 2.0, 1.0], "finished", "solved in 300 steps"]
    assert rows.iloc[1].tolist() == ["S1", "no PE", [], "not started", ""]
    alone = board.student_rows(class_of([None, None], assignment=None))  # a class without groups: no group column
    assert list(alone.columns) == ["name", "curve", "state", "result"]


def test_a_students_small_curve_holds_each_loss_to_three_significant_digits():
    losses = (1.5066350650787355, 0.46451234, 0.000123456789)
    rows = board.student_rows(class_of([finished(300, True, losses=losses)]))
    assert rows.iloc[0]["curve"] == [1.51, 0.465, 0.000123]  # a screen reader reads the chart's table, not 17 digits


def test_a_groups_median_curve_holds_finished_runs_and_drops_runs_still_training_past_their_last_row():
    training = RunState("training", 50, None, ({"step": 25, "train_loss": 4.0}, {"step": 50, "train_loss": 2.0}))
    done = RunState("finished", 50, None, ({"step": 25, "train_loss": 2.0}, {"step": 50, "train_loss": 0.5}))
    longer = finished(75, False, losses=(3.0, 2.0, 1.0))
    curves = board.group_curves(class_of([longer, None, training, None, done], assignment=PE))
    pe = curves["PE"]  # students S0, S2, S4 have ids 1, 3, 5
    assert list(pe.members.index) == list(pe.median.index) == [25, 50, 75] and list(pe.members.columns) == [1, 3, 5]
    assert pe.median.tolist() == [3.0, 2.0, 0.75]  # at 75: S0 1.0, S4 held at 0.5; S2 not there yet
    assert math.isnan(pe.members.loc[75, 3])
    assert curves["no PE"].members.empty and curves["no PE"].median.empty


def test_every_members_curve_stays_its_own_whatever_the_names():
    # "" is a hidden name (the board once labelled it "student 1"); the others read like labels, or repeat
    names = ["", "student 1", "median", "Median", "ada", "ada", "no rows", "not started"]
    losses = [(4.0, 1.0), (5.0, 2.0), (9.0, 9.0), (1.0, 0.5), (2.0, 0.2), (3.0, 0.3)]
    runs = [finished(100, True, losses=pair) for pair in losses] + [RunState("training", 0), None]
    info = ClassInfo("amber-otter-7351", "Period 3", WHEN, WHEN, None, None)
    students = tuple(Student(10 + i, name, i, None, i, WHEN) for i, name in enumerate(names))
    snapshot = Snapshot(info, students, {s.id: run for s, run in zip(students, runs) if run is not None})
    curves = board.group_curves(snapshot)[None]
    assert list(curves.members.columns) == [10, 11, 12, 13, 14, 15]  # one per student with rows, by id
    for student_id, pair in zip(curves.members.columns, losses):
        assert curves.members[student_id].tolist() == list(pair)
    assert curves.median.tolist() == [statistics.median(pair[i] for pair in losses) for i in (0, 1)]


def test_the_difference_sentence_gives_counts_and_the_spread_of_steps_to_solve():
    runs = []
    for i in range(29):  # PE students solve in 300..700 steps; no-PE students never solve
        runs.append(finished(300 + 400 * (i // 2) // 14, True) if i % 2 == 0 else finished(600, False, 0.1))
    snapshot = class_of(runs)
    sentence = board.difference_sentence(snapshot)
    assert sentence == (
        "Solved: 15 of 15 (PE) against 0 of 14 (no PE). Steps to solve: PE: median 500 (range 300-700); "
        "no PE: none solved."
    )
    assert translator("zh-CN")(sentence) == (  # Chinese marks between its parts too
        "解出：15 个中有 15 个（PE），对比 14 个中有 0 个（无位置编码）。"
        "解出所需步数：PE：中位数 500（范围 300-700）；无位置编码：无一解出。"
    )
    table = board.outcome_table(snapshot)
    assert table.groupby("group")["solved"].sum().to_dict() == {"PE": 15, "no PE": 0}
    assert board.difference_sentence(class_of([None, RunState("training", step=5)])) == "No run has finished yet."
    alone = class_of([finished(200, True), finished(400, True), finished(600, False)], assignment=None)
    assert board.difference_sentence(alone) == "Solved: 2 of 3. Steps to solve: median 300 (range 200-400)."
    one = class_of([finished(144, True), finished(600, False)], assignment=None)
    assert board.difference_sentence(one) == "Solved: 1 of 2. Steps to solve: 144."  # no "median 144 (range 144-144)"


def test_flags_name_stalled_runs_and_students_who_have_not_started():
    stuck = tuple({"step": 25 * i, "train_loss": 1.0 if i < 3 else 1.2} for i in range(STALL_ROWS + 3))
    falling = tuple({"step": 25 * i, "train_loss": 5.0 - 0.1 * i} for i in range(STALL_ROWS + 3))
    snapshot = class_of([RunState("training", 300, None, stuck), RunState("training", 300, None, falling), None])
    assert board.flags(snapshot).values.tolist() == [
        ["S0", f"loss has not fallen for {STALL_ROWS} metric rows"],
        ["S2", "has not started"],
    ]


@pytest.mark.parametrize(
    "arm, rest, choice",
    [
        ([200, 300], [400, 500], "sooner"),
        ([600], [400, 500], "later"),
        ([500], [500], "later"),  # not strictly fewer steps
        ([600], [None, None], "sooner"),  # the others never solved
        ([None, None, 100], [400], "not within the step budget"),
        ([None], [None], "not within the step budget"),
        ([], [400], None),
    ],
)
def test_solved_sooner_compares_steps_to_solve_with_the_other_groups_median(arm, rest, choice):
    def outcomes(steps):
        return [Outcome(s is not None, s or 5000, 1.0 if s else 0.2, 0.1) for s in steps]

    assert solved_sooner(outcomes(arm), outcomes(rest)) == choice


def test_compared_says_about_the_same_within_its_tolerance():
    grade = compared("train_loss", 0.05)
    ours, theirs = [Outcome(True, 1, 1.0, 0.54)], [Outcome(True, 1, 1.0, 0.5), Outcome(True, 1, 1.0, 0.52)]
    assert grade(ours, theirs) == "about the same"
    assert grade([Outcome(True, 1, 1.0, 0.9)], theirs) == "higher"
    assert grade([Outcome(True, 1, 1.0, 0.1)], theirs) == "lower"


@pytest.mark.parametrize("key", list(QUESTIONS))
def test_every_question_fits_an_assignment_with_its_group(key):
    question = QUESTIONS[key]
    other = next(v for v in PE_VALUES[question.setting] if v != question.value)
    fitting = Assignment({}, frozenset(), question.setting, (Group("a", other), Group("b", question.value)))
    assert question.unfit(fitting) is None
    assert question.unfit(Assignment()) is not None
    assert len(set(question.choices)) == len(question.choices) >= 2 and question.caption


PE_VALUES = {
    "positional": ("sinusoidal", "none"),
    "causal_mask": (True, False),
    "scale_scores": (True, False),
    "norm_first": (False, True),
    "label_smoothing": (0.0, 0.1),
}


def test_predictions_are_graded_on_measured_outcomes_and_tallied():
    # S0, S2 with PE solve in 300 and 400 steps; S1 without PE fails, S3 without PE solves in 900
    runs = [finished(300, True), finished(600, False, 0.3), finished(400, True), finished(900, True), None]
    said = {1: "sooner", 2: "not within the step budget", 3: "later", 4: "later", 5: "sooner"}
    predictions = {sid: Prediction("positional-none", choice) for sid, choice in said.items()}
    snapshot = class_of(runs, question="positional-none", predictions=predictions)
    right = right_choices("positional-none", snapshot)
    # no-PE students on their own run: S1 never solved; S3 solved later than PE's median (350)
    assert right[2] == "not within the step budget" and right[4] == "later"
    # PE students on the no-PE group: 1 of 2 solved, at 900 steps: later
    assert right[1] == right[3] == "later"
    assert right[5] is None  # not started
    tally = board.prediction_tally(snapshot).set_index("choice")
    assert tally.loc["sooner"].tolist() == [2, 1, 0]  # predicted, graded, right
    assert tally.loc["later"].tolist() == [2, 2, 2]
    assert tally.loc["not within the step budget"].tolist() == [1, 1, 1]


def test_the_csv_frames_have_their_columns_and_are_safe_in_a_spreadsheet():
    predictions = {1: Prediction("positional-none", "sooner")}
    snapshot = class_of([finished(300, True), None], question="positional-none", predictions=predictions)
    snapshot = Snapshot(
        snapshot.info, (Student(1, "=HYPERLINK(1)", 0, "PE", 0, WHEN), snapshot.students[1]), snapshot.runs, predictions
    )
    results = board.results_frame(snapshot)
    assert list(results.columns) == RESULT_COLUMNS
    assert results["name"].tolist() == ["'=HYPERLINK(1)", "S1"]
    assert results.iloc[0][["state", "steps", "reason"]].tolist() == ["finished", 300, "solved"]
    assert list(board.predictions_frame(snapshot).columns) == PREDICTION_COLUMNS
    assert list(board.metrics_frame(snapshot).columns) == ["name", "group", *METRIC_COLUMNS]
    assert len(board.metrics_frame(snapshot)) == 2
    back = pd.read_csv(io.StringIO(results.to_csv(index=False)))
    assert back["name"].tolist() == ["'=HYPERLINK(1)", "S1"]
    lines = results.to_csv(index=False).splitlines()  # S1 has no result: its cells are blank
    assert lines[1].split(",")[2:5] == ["0", "finished", "300"] and lines[2].split(",")[4] == ""
    rows = board.metrics_frame(snapshot).to_csv(index=False).splitlines()
    assert all(re.fullmatch(r"\d+", row.split(",")[2]) for row in rows[1:]), rows  # steps as whole numbers


def cells(csv: str) -> list[str]:
    """Every cell a spreadsheet might see in `csv`, whatever it splits on (each separator and the line breaks),
    without the spaces and double quotes it might trim."""
    return [cell.lstrip(' "') for separator in SEPARATORS for cell in re.split(f"[{re.escape(separator)}\r\n]", csv)]


HOSTILE = ["x;=1+1", "a,-2", "b\t@c", "c|+d", "=HYPERLINK(1)", 'q, "=cmd', "\t=x", "e\n-1", "f\r+1", "ok"]


def test_no_cell_of_any_csv_export_starts_a_formula_however_a_spreadsheet_splits_it():
    groups = (Group("x;=1+1|PE", "sinusoidal"), Group("@no PE", "none"))
    assignment = Assignment({"task": "reverse"}, frozenset(), "positional", groups)
    runs = [finished(300, True), RunState("failed", 40, error="oops;=cmd|+x, -y")] * (len(HOSTILE) // 2)
    snapshot = class_of(runs, assignment=assignment, question="positional-none")
    students = tuple(replace(s, name=name) for s, name in zip(snapshot.students, HOSTILE))
    predictions = {s.id: Prediction("positional-none" if s.position % 2 else "=q;+1", f"-c,{s.name}") for s in students}
    snapshot = Snapshot(snapshot.info, students, snapshot.runs, predictions)
    for frame in (board.results_frame, board.metrics_frame, board.predictions_frame):
        exported = frame(snapshot)
        csv = exported.to_csv(index=False)
        assert not [cell for cell in cells(csv) if cell.startswith(tuple(FORMULA_START))], frame.__name__
    results = board.results_frame(snapshot)
    assert results["name"].tolist()[-1] == "ok" and results["name"].tolist()[0] == "x;'=1+1"
    assert results["group"].tolist()[:2] == ["x;'=1+1|PE", "'@no PE"]
    assert results["error"].tolist()[1] == "oops;'=cmd|'+x, '-y"
    assert results["state"].tolist()[:2] == ["finished", "failed"]  # text that needs nothing stays as it is


@given(st.text())
@example("a\t\t=1")
@example('x, "=1')
def test_spreadsheet_safe_text_starts_no_formula_after_any_separator_and_changes_only_what_it_must(text):
    safe = board.spreadsheet_safe(text)
    assert not [cell for cell in cells(safe) if cell.startswith(tuple(FORMULA_START))]
    assert safe.replace("'", "") == text.replace("'", "")  # only quotes added
    assert board.spreadsheet_safe(safe) == safe
    if not set(FORMULA_START) & set(text):
        assert safe == text


def timed_out(steps: int, exact_match: float = 0.4) -> RunState:
    """A run the time budget ended at `steps` steps before it solved the task."""
    result = {"steps": steps, "seconds": 60.0, "exact_match": exact_match, "token_acc": 0.8, "reason": "time budget"}
    return RunState("finished", steps, None, ({"step": steps, "train_loss": 1.0},), result)


def test_a_run_the_time_budget_stopped_ran_out_of_time_and_is_never_graded_as_a_failure_to_learn():
    # S0, S2 with PE solve; S1 and S3 without PE are stopped by the time budget on a busy server
    runs = [finished(300, True), timed_out(250), finished(400, True), timed_out(180)]
    said = {1: "later", 2: "not within the step budget", 3: "later", 4: "sooner"}
    predictions = {sid: Prediction("positional-none", choice) for sid, choice in said.items()}
    snapshot = class_of(runs, question="positional-none", predictions=predictions)
    assert measured(runs[1]).timed_out and not measured(runs[1]).solved and not measured(runs[0]).timed_out
    right = right_choices("positional-none", snapshot)
    assert set(right.values()) == {OUT_OF_TIME}  # not "not within the step budget"
    assert board.prediction_tally(snapshot)["graded"].sum() == 0
    frame = board.predictions_frame(snapshot)
    assert frame["measured"].tolist() == ["ran out of time"] * 4 and frame["right"].isna().all()
    assert board.result_text(runs[1]) == "ran out of time: exact match 40.0% after 250 steps"
    assert board.difference_sentence(snapshot) == (
        "Solved: 2 of 2 (PE) against none yet (no PE). Steps to solve: PE: median 350 (range 300-400); no PE: none "
        "yet. Ran out of time, not counted: 2 (no PE)."
    )  # never "0 of 0": the group's runs ran out of time, not zero runs that failed
    assert translator("zh-CN")(board.difference_sentence(snapshot)).startswith(
        "解出：2 个中有 2 个（PE），对比尚无可计的训练（无位置编码）。"
    )
    alone = class_of([timed_out(250), timed_out(180)], assignment=None)
    assert board.difference_sentence(alone) == (
        "Solved: none yet. Steps to solve: none yet. Ran out of time, not counted: 2."
    )
    assert board.outcome_table(snapshot)["timed_out"].tolist() == [False, True, False, True]
    # one no-PE run that ended by its step budget grades the no-PE group; the time-budget one counts for neither
    snapshot = class_of([*runs[:3], finished(600, False, 0.3)], question="positional-none", predictions=predictions)
    right = right_choices("positional-none", snapshot)
    assert right[2] == OUT_OF_TIME and right[4] == "not within the step budget"
    assert right[1] == right[3] == "not within the step budget"  # PE students, on the no-PE runs that counted


def test_a_question_names_the_task_the_class_trains_built_in_gallery_or_its_own():
    def info(task=None, preset=None) -> ClassInfo:
        assignment = Assignment(preset or {}, frozenset(), "positional", PE.groups)
        return ClassInfo("amber-otter-7351", "Period 3", WHEN, WHEN, assignment, "positional-none", task)

    rows = [(f"line {i}", f"{a} {b}", f"{a} {a} {b} {b}") for i, (a, b) in enumerate(zip("abcdef", "fedcba"), 1)]
    own = pairs_from_rows(rows, "doubled_zh.csv")
    assert question_text("positional-none", info()) == "Without positional encoding, reverse will be solved:"
    assert question_text("positional-none", info(preset={"task": "caesar"})).endswith(", caesar will be solved:")
    assert question_text("positional-none", info(own, {"task": "reverse"})) == (
        "Without positional encoding, doubled_zh.csv will be solved:"
    )
    chinese = translator("zh-CN").gettext(question_text("positional-none", info(own)))
    assert "doubled_zh.csv" in chinese and "reverse" not in chinese
    # a question that names the class's task does not fit an assignment that lets students change the task
    open_task = Assignment({}, frozenset({"task"}), "positional", PE.groups)
    assert "students may change the task" in QUESTIONS["positional-none"].unfit(open_task)


def test_what_a_teacher_reads_on_the_board_and_in_the_csv_files_is_in_their_language():
    zh = translator("zh-CN")
    assignment = Assignment({}, frozenset(), "positional", split_groups("positional"))
    runs = [finished(300, True), finished(600, False, 0.3), timed_out(250), None]
    predictions = {1: Prediction("positional-none", "sooner")}
    snapshot = class_of(runs, assignment, question="positional-none", predictions=predictions)
    assert all(zh.gettext(heading) != heading for heading in board.HEADINGS.values())
    rows = board.student_rows(snapshot)
    assert [zh.gettext(g) for g in rows["group"]] == ["正弦位置编码", "无位置编码"] * 2
    assert zh.gettext(rows["state"][0]) == "已结束" and "时间用完" in zh.gettext(rows["result"][2])
    sentence = zh.gettext(board.difference_sentence(snapshot))
    assert "正弦位置编码" in sentence and "无位置编码" in sentence and "PE" not in sentence
    assert list(board.group_curves(snapshot)) == ["sinusoidal PE", "no PE"]  # keys: the labels, said as Messages
    results = board.results_frame(snapshot, zh)
    assert list(results.columns) == RESULT_COLUMNS  # the columns stay English keys, for scripts
    assert results["group"].tolist() == ["正弦位置编码", "无位置编码"] * 2
    assert results["state"].tolist()[:3] == ["已结束"] * 3 and results["reason"].tolist()[:3] == [
        "已解出",
        "步数上限",
        "时间上限",
    ]
    assert board.metrics_frame(snapshot, zh)["group"].tolist()[0] == "正弦位置编码"
    frame = board.predictions_frame(snapshot, zh)
    assert frame[["group", "question", "choice"]].values.tolist() == [
        ["正弦位置编码", "没有位置编码时，任务 reverse 会：", "更快解出"]
    ]
    assert board.results_frame(snapshot)["group"].tolist()[:2] == ["sinusoidal PE", "no PE"]  # English by default


def test_a_result_short_of_every_sequence_never_reads_as_100_percent():
    assert board.result_text(finished(2000, False, 0.9996)) == "not solved in 2000 steps: exact match 99.9%"
