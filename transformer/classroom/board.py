"""The teacher's board as data: a row per student, each group's curves with their median, the outcomes and a
sentence on the difference between groups, the flags that call for the teacher, the tally of predictions, and the
frames exported as CSV. Pure functions of a `Snapshot`; names and labels are the class's literal text, so a page
shows them with `transformer.literal`, and nothing here keys data by a name: two students may share one, and a name
may read like anything ("median", "student 3").

What a teacher reads is in their language: a group's label is a Message (`group_words`: the words of a setting's
value translate, a teacher's own text stays as it is), states, results and grades are Messages, a page heads each
column with its `HEADINGS` words, and the CSV frames translate their text cells with the translator they are given
(their column names stay these English keys, for scripts).
"""

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..i18n import DEFAULT_LANGUAGE, N_, Message, Translator, joined, translator
from ..shares import shown_share
from ..training import METRIC_COLUMNS
from .outcomes import Outcome, measured, spread, steps_to_solve
from .questions import QUESTIONS, is_graded, question_text, right_choices
from .records import RunState, Snapshot, Student, thin

STALL_ROWS = 8  # a training run whose loss has not fallen below its best for this many metric rows is flagged
CURVE_POINTS = 60  # points of a student's small curve
CURVE_DIGITS = 3  # significant digits of each: the curve looks the same, and a screen reader reads its table shorter
FORMULA_START = "=+-@\t\r"  # a spreadsheet reads a cell starting with one of these as a formula (OWASP)
SEPARATORS = ",;\t|\r\n"  # where a spreadsheet may split a CSV's text into cells, whatever its quotes say
# A place where a cell may start (the text's start or just after a separator), spaces and double quotes after it
# (a spreadsheet may trim them), then a formula character: `spreadsheet_safe` puts a quote before that character.
FORMULA_AFTER_SEPARATOR = re.compile(f'(?:^|(?<=[{re.escape(SEPARATORS)}]))([ "]*)(?=[{re.escape(FORMULA_START)}])')
LOST_ADVICE = N_("the server restarted or lost it; press Start again")
NONE_YET = N_("none yet")  # a group none of whose ended runs counts: each ran out of time
LOST_CAUSE = N_("the server restarted or lost it")  # the board's result cell: its flags say what to do
WORDS = {  # a run's status and why it ended, as a board says them (records.STATUSES and REASONS)
    "not started": N_("not started"),
    "queued": N_("queued"),
    "training": N_("training"),
    "paused": N_("paused"),
    "lost": N_("lost"),
    "finished": N_("finished"),
    "failed": N_("failed"),
    "stopped": N_("stopped"),
    "solved": N_("solved"),
    "step budget": N_("step budget"),
    "time budget": N_("time budget"),
    "page closed": N_("page closed"),
    "ended by the server": N_("ended by the server"),
}
STOPPED_AT = {  # a stopped run's result, by why it stopped (records.REASONS)
    "stopped": N_("stopped at step {step}"),
    "page closed": N_("stopped at step {step} when its page closed"),
    "ended by the server": N_("stopped at step {step} by the server"),
}
RESULT_COLUMNS = ["name", "group", "seed", "state", "steps", "seconds", "exact_match", "token_acc", "reason", "error"]
COUNTS = ("seed", "step", "steps")  # the exports' columns of whole numbers: 420, never 420.0; blank where none
PREDICTION_COLUMNS = ["name", "group", "question", "choice", "measured", "right"]
HEADINGS = {  # the board's columns as a page heads them, in the session's language
    "name": N_("student"),
    "group": N_("group"),
    "state": N_("state"),
    "result": N_("result"),
    "flag": N_("needs a look"),
    "choice": N_("choice"),
    "predicted": N_("predicted"),
    "graded": N_("graded"),
    "right": N_("right"),
}
ENGLISH = translator(DEFAULT_LANGUAGE)  # the CSV frames' default translator


def group_words(label: str | None) -> Message | None:
    """A group's label as the board says it: translated where it is the words of a setting's value ("no PE"), the
    teacher's literal text otherwise (a Message without parameters: braces in it stay as they are)."""
    return None if label is None else Message(label)


def _word(text: str) -> Message:
    """A status or reason in the board's words."""
    return Message(WORDS.get(text, text))


def state_text(run: RunState | None) -> Message:
    """'not started', 'queued, place 3', 'training at step 420', 'paused at step 420', 'lost at step 420' (or 'lost
    before it started'), 'finished', 'failed' or 'stopped'."""
    if run is None or run.status == "not started":
        return Message(N_("not started"))
    if run.status == "queued":
        queued = N_("queued") if run.queue_place is None else N_("queued, place {place}")
        return Message(queued, place=run.queue_place)
    if run.status == "training":
        return Message(N_("training at step {step}"), step=run.step)
    if run.status == "paused":
        return Message(N_("paused at step {step}"), step=run.step)
    if run.status == "lost":  # at step 0: it was queued, or lost before its first step
        return Message(N_("lost at step {step}"), step=run.step) if run.step else Message(N_("lost before it started"))
    return _word(run.status)


def result_text(run: RunState | None) -> str:
    """A run's result in words: 'solved in 450 steps', 'not solved in 600 steps: exact match 62.0%', 'stopped at
    step 120' (or 'stopped at step 120 when its page closed', or 'by the server'), 'lost at step 120: ...' (no
    server has heard from it lately), a failed run's message, or '' while it has none."""
    if run is None:
        return ""
    if run.status == "failed":
        return run.error or _word("failed")  # a failed run's message is stored as it was said
    if run.status == "stopped":  # at step 0: it left the queue, or was stopped before its first step
        if not run.step:
            return Message(N_("stopped before it started"))
        why = (run.result or {}).get("reason")
        return Message(STOPPED_AT.get(why, STOPPED_AT["stopped"]), step=run.step)
    if run.status == "lost":
        lost = N_("lost at step {step}: {advice}") if run.step else N_("lost before it started: {advice}")
        return Message(lost, step=run.step, advice=Message(LOST_ADVICE))
    if (outcome := measured(run)) is None:
        return ""
    if outcome.solved:
        return Message(N_("solved in {steps} steps"), steps=outcome.steps)
    if outcome.timed_out:
        out_of_time = N_("ran out of time: exact match {exact:.1%} after {steps} steps")
        return Message(out_of_time, exact=shown_share(outcome.exact_match), steps=outcome.steps)
    if outcome.exact_match == 1:  # a run that trains every step never checks: right at its end, since when unknown
        return Message(N_("every held-out sequence right after {steps} steps"), steps=outcome.steps)
    not_solved = N_("not solved in {steps} steps: exact match {exact:.1%}")  # its step budget: what else ends it
    return Message(not_solved, exact=shown_share(outcome.exact_match), steps=outcome.steps)


def _loss(run: RunState | None) -> list[float]:
    """The training losses of a run's metric rows."""
    return [] if run is None else [r["train_loss"] for r in run.rows if r.get("train_loss") is not None]


def _row_result(run: RunState | None) -> str:
    """A run's result beside its state on the board: a lost run's cause alone, its step being in the state and what
    to do in the board's flags (the longer cell would push the table past a projector's page)."""
    return Message(LOST_CAUSE) if run is not None and run.status == "lost" else result_text(run)


def student_rows(snapshot: Snapshot) -> pd.DataFrame:
    """One row per student in join order: name, group (where a student has one: a class without groups has no such
    column), a small loss curve (a list, each loss to CURVE_DIGITS significant digits), state, result. The curve
    comes before the state and result, whose words are the widest: a table wider than the page scrolls them, never
    the curve, out of view (last, it was off the screen of a 1280 px projector at 150% zoom)."""
    rows = [
        {
            "name": s.name,
            "group": group_words(s.group),
            "curve": [float(f"{loss:.{CURVE_DIGITS}g}") for loss in thin(_loss(snapshot.runs.get(s.id)), CURVE_POINTS)],
            "state": state_text(snapshot.runs.get(s.id)),
            "result": _row_result(snapshot.runs.get(s.id)),
        }
        for s in snapshot.students
    ]
    # object columns: pandas 3 would store the Messages as plain strings, and a page could no longer translate them
    frame = pd.DataFrame(rows, columns=["name", "group", "curve", "state", "result"], dtype=object)
    return frame if any(s.group is not None for s in snapshot.students) else frame.drop(columns="group")


def _groups(snapshot: Snapshot) -> dict[str | None, list[Student]]:
    """The students of each group, groups in the assignment's order (one group None without groups)."""
    assignment = snapshot.info.assignment
    labels = [g.label for g in assignment.groups] if assignment and assignment.groups else [None]
    return {group_words(label): [s for s in snapshot.students if s.group == label] for label in labels}


@dataclass(frozen=True, eq=False)
class GroupCurves:
    """One group's metric over steps (the index of both, named "step"): `members` has a column per member with
    metric rows, keyed by student id (never by name), and `median` is their median at each step, kept apart so that
    no member's column can be taken for it."""

    members: pd.DataFrame
    median: pd.Series


def group_curves(snapshot: Snapshot, metric: str = "train_loss") -> dict[str | None, GroupCurves]:
    """Per group, `metric` over steps: each member's curve (by student id) and their median.

    Each run is interpolated onto the union of its group's steps; a run that finished holds its last value after
    its end (it stopped because it had solved the task, or ran out of budget), any other counts only up to its last
    row. The median is over the runs that count at each step."""
    curves = {}
    for label, members in _groups(snapshot).items():
        series = {}
        for s in members:
            run = snapshot.runs.get(s.id)
            if run is not None and (rows := [r for r in run.rows if r.get(metric) is not None]):
                series[s.id] = (run, rows)
        steps = sorted({r["step"] for _, rows in series.values() for r in rows})
        columns = {}
        for student_id, (run, rows) in series.items():
            x, y = [r["step"] for r in rows], [r[metric] for r in rows]
            columns[student_id] = np.interp(
                steps, x, y, left=np.nan, right=y[-1] if run.status == "finished" else np.nan
            )
        frame = pd.DataFrame(columns, index=pd.Index(steps, name="step"), columns=list(columns), dtype=float)
        curves[label] = GroupCurves(frame, frame.median(axis=1, skipna=True).rename("median"))
    return curves


def outcome_table(snapshot: Snapshot) -> pd.DataFrame:
    """One row per finished run: group (`group_words`), solved, steps, exact match at the end, and whether it ran out
    of time."""
    rows = [
        {
            "group": group_words(s.group),
            "solved": o.solved,
            "steps": o.steps,
            "exact_match": o.exact_match,
            "timed_out": o.timed_out,
        }
        for s in snapshot.students
        if (o := measured(snapshot.runs.get(s.id))) is not None
    ]
    columns = ["group", "solved", "steps", "exact_match", "timed_out"]
    return pd.DataFrame(rows, columns=columns).astype({"group": object})  # its Messages kept (see student_rows)


def difference_sentence(snapshot: Snapshot) -> Message:
    """The groups' outcomes in plain words: 'Solved: 15 of 15 (with PE) against 0 of 14 (no PE). Steps to solve:
    with PE median 450 (range 300-700); no PE none solved.' Counts are of finished runs; runs that ran out of time
    count for neither, and are counted after: 'Ran out of time, not counted: 2 (no PE).' A group none of whose runs
    counts yet says so: 'none yet (no PE)'."""
    ended: dict[str | None, list[Outcome]] = {
        label: [o for s in members if (o := measured(snapshot.runs.get(s.id))) is not None]
        for label, members in _groups(snapshot).items()
    }
    if not any(ended.values()):
        return Message(N_("No run has finished yet."))
    outcomes = {label: [o for o in found if not o.timed_out] for label, found in ended.items()}
    named = len(outcomes) > 1
    counts, spreads = [], []
    for label, found in outcomes.items():
        solved, runs, steps = len(steps_to_solve(found)), len(found), spread(steps_to_solve(found))
        steps = steps or Message(N_("none solved") if runs else NONE_YET)
        if named:
            count = Message(N_("{solved} of {runs} ({group})"), solved=solved, runs=runs, group=label)
            counts.append(count if runs else Message(N_("none yet ({group})"), group=label))
            spreads.append(Message(N_("{group}: {steps}"), group=label, steps=steps))
        else:
            counts.append(Message(N_("{solved} of {runs}"), solved=solved, runs=runs) if runs else Message(NONE_YET))
            spreads.append(steps)
    against = counts[0]
    for count in counts[1:]:
        against = Message(N_("{first} against {second}"), first=against, second=count)
    solved = N_("Solved: {counts}. Steps to solve: {spreads}.")
    sentence = Message(solved, counts=against, spreads=joined(spreads, N_("; ")))
    late = {label: n for label, found in ended.items() if (n := sum(o.timed_out for o in found))}
    if not late:
        return sentence
    counted = [Message(N_("{n} ({group})"), n=n, group=label) if named else str(n) for label, n in late.items()]
    out_of_time = N_("{sentence} Ran out of time, not counted: {counts}.")
    return Message(out_of_time, sentence=sentence, counts=joined(counted, N_(", ")))


def stalled(run: RunState | None, rows: int = STALL_ROWS) -> bool:
    """Whether a training run's loss has not fallen below its earlier best for its last `rows` metric rows."""
    losses = _loss(run)
    if run is None or run.status != "training" or len(losses) <= rows:
        return False
    return min(losses[-rows:]) >= min(losses[:-rows])


def flags(snapshot: Snapshot) -> pd.DataFrame:
    """The students who call for the teacher: a run whose loss has stalled, a run lost (no server has heard from it
    lately), or a student who has not started."""
    rows = []
    for s in snapshot.students:
        run = snapshot.runs.get(s.id)
        if stalled(run):
            stall = Message(N_("loss has not fallen for {rows} metric rows"), rows=STALL_ROWS)
            rows.append({"name": s.name, "flag": stall})
        elif run is not None and run.status == "lost":
            rows.append({"name": s.name, "flag": Message(N_("run lost: ask them to press Start again"))})
        elif state_text(run) == "not started":
            rows.append({"name": s.name, "flag": Message(N_("has not started"))})
    return pd.DataFrame(rows, columns=["name", "flag"], dtype=object)  # its Messages kept (see student_rows)


def prediction_tally(snapshot: Snapshot) -> pd.DataFrame:
    """Per choice of the class's question: how many predicted it, how many of those are graded yet (their
    outcome is measured), and how many were right."""
    key = snapshot.info.question
    if key is None:
        return pd.DataFrame(columns=["choice", "predicted", "graded", "right"])
    right = right_choices(key, snapshot)
    answers = {sid: p.choice for sid, p in snapshot.predictions.items() if p.question == key}
    rows = [
        {
            "choice": choice,
            "predicted": sum(a == choice for a in answers.values()),
            "graded": sum(a == choice and is_graded(right.get(sid)) for sid, a in answers.items()),
            "right": sum(a == choice and right.get(sid) == choice for sid, a in answers.items()),
        }
        for choice in QUESTIONS[key].choices
    ]
    return pd.DataFrame(rows, columns=["choice", "predicted", "graded", "right"])


# ---- CSV


def spreadsheet_safe(text: str | None) -> str | None:
    """`text` that no spreadsheet reads as a formula (CSV injection), however it splits the text into cells: a quote
    before each formula character that starts the text or a part after a separator (after spaces and double quotes,
    which a spreadsheet may trim), as OWASP advises. 'x;=1+1' becomes "x;'=1+1"; text that needs nothing, or a value
    that is not text, comes back as it is."""
    return FORMULA_AFTER_SEPARATOR.sub(r"\1'", text) if isinstance(text, str) else text


def spreadsheet_safe_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` with every cell of its text columns made `spreadsheet_safe`; numbers stay numbers, and its COUNTS
    whole numbers (pandas makes a column with a blank cell floats)."""
    frame = frame.astype({c: "Int64" for c in COUNTS if c in frame.columns})
    text = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
    return frame.assign(**{c: frame[c].map(spreadsheet_safe) for c in text})


def _said(text: str | None, tr: Translator) -> str | None:
    """`text` (a Message, or words of the board such as a group's label or a choice) in `tr`'s language."""
    return None if text is None else tr.gettext(text)


def results_frame(snapshot: Snapshot, tr: Translator = ENGLISH) -> pd.DataFrame:
    """One row per student: name, group, seed, state, and the result's numbers and reason (why the run ended); its
    words in `tr`'s language, text spreadsheet-safe. A run with no result yet (training, or lost) has the steps it
    had reached as its steps, a number a script can read beside the state's words."""
    rows = []
    for s in snapshot.students:
        run = snapshot.runs.get(s.id)
        result = (run.result if run else None) or {}
        reached = run.step if run is not None and run.step else None
        rows.append(
            {
                "name": s.name,
                "group": _said(s.group, tr),
                "seed": s.seed,
                "state": tr.gettext(state_text(run)),
                "steps": result.get("steps", reached),
                **{k: result.get(k) for k in ("seconds", "exact_match", "token_acc")},
                "reason": _said(result.get("reason") and _word(result["reason"]), tr),
                "error": run.error if run else None,
            }
        )
    return spreadsheet_safe_frame(pd.DataFrame(rows, columns=RESULT_COLUMNS))


def metrics_frame(snapshot: Snapshot, tr: Translator = ENGLISH) -> pd.DataFrame:
    """Every student's metric rows, one per row: name, group (in `tr`'s language; spreadsheet-safe) and the metric
    columns."""
    rows = [
        {"name": s.name, "group": _said(s.group, tr), **row}
        for s in snapshot.students
        for row in (snapshot.runs[s.id].rows if s.id in snapshot.runs else ())
    ]
    return spreadsheet_safe_frame(pd.DataFrame(rows, columns=["name", "group", *METRIC_COLUMNS]))


def predictions_frame(snapshot: Snapshot, tr: Translator = ENGLISH) -> pd.DataFrame:
    """One row per prediction: name, group, question (as its students read it), choice, the right choice as measured
    (blank until it is; 'ran out of time' when its runs did) and whether the prediction was right (blank while
    ungraded); its words in `tr`'s language, text spreadsheet-safe."""
    key = snapshot.info.question
    right = right_choices(key, snapshot) if key else {}
    rows = [
        {
            "name": s.name,
            "group": _said(s.group, tr),
            "question": tr.gettext(question_text(p.question, snapshot.info)) if p.question in QUESTIONS else p.question,
            "choice": tr.gettext(p.choice),
            "measured": _said(right.get(s.id), tr) if p.question == key else None,
            "right": right.get(s.id) == p.choice if p.question == key and is_graded(right.get(s.id)) else None,
        }
        for s in snapshot.students
        if (p := snapshot.predictions.get(s.id)) is not None
    ]
    return spreadsheet_safe_frame(pd.DataFrame(rows, columns=PREDICTION_COLUMNS))
