"""The Teacher page's assignment form: what a class trains (every setting of the Train page, task, lengths and steps
first), which settings students may change, the groups that differ in one setting, and the question students answer
before Start. Its widgets start from the class's saved assignment; Save writes the form to the class database.

Session state keys: "teacher_<setting>" for each setting (`preset_key`), "teacher_split", "teacher_open_settings",
"teacher_question", and FORM_WORDS."""

import math
from functools import partial
from typing import Any

import streamlit as st

from transformer import settings as spec
from transformer.classroom import QUESTIONS, Assignment, ClassInfo, ClassroomError, Snapshot
from transformer.classroom.assignment import split_groups
from transformer.classroom.duration import CLASS_SIZE, ClassTime, class_time
from transformer.classroom.questions import class_task_name, question_text
from transformer.classroom.records import started
from transformer.i18n import N_, joined
from transformer.literal import markdown_literal
from transformer.pairs import TaskPairs
from ui.classes import caller, class_store
from ui.common import run_registry
from ui.forms import form_id, values_set
from ui.language import SELECT_ALL, _, chosen, dropped_notice, ngettext, said, worded
from ui.setting_widgets import FOLDED_COLUMNS, OTHER_SETTINGS, draw_setting, setting_value, widget_value
from ui.state import flash, show_flashes
from ui.train_form import task_picker

FORM = "teacher_assignment"  # the form's name (`ui.forms`)
FORM_WORDS = "teacher_form_words"  # session_state key: the task the form's question last named
FORM_CLASS = "teacher_form_class"  # session_state key: the class whose assignment the form's widgets hold
NONE = ""  # the form's choice of no groups, or of no question (a widget's value None would show an empty box)
SAVED = N_("Saved: students see it on Train from their next page load.")
UNSAVED = N_("The form shows settings that are not saved: students train the class's saved assignment until you save.")
PRESET = ("min_len", "max_len", "steps")  # the assignment form's first row, under its task; the others fold below
OWN_TASK_FORM = N_(
    "The pairs of the class's own task, below, set the task, the lengths of its inputs and its symbols, so the form "
    "leaves them out. The assignment's other settings apply to it."
)


def form_values(snapshot: Snapshot) -> None:
    """The assignment form's widgets start from the class's saved assignment and question. When the task a question
    names changes, each gets its value again: the browser keeps a choice as the words it showed, and shows them until
    the page sets the value (a rerun alone leaves the old words in the box). A language switch sets them again as it
    does every worded choice (`ui.language.worded`). Another class's board (one created or opened after the last)
    starts its form from its own saved assignment, whatever the form held for the class before."""
    state, saved = st.session_state, saved_values(snapshot)
    if state.get(FORM_CLASS) != snapshot.info.code:  # nothing the form holds is this class's
        for widget in [*saved, FORM_WORDS]:
            state.pop(widget, None)
        state[FORM_CLASS] = snapshot.info.code
    words = picked_task(snapshot)
    switched = state.get(FORM_WORDS, words) != words
    unset = [widget for widget in saved if widget not in state or switched]
    for widget in unset:
        state[widget] = state.get(widget, saved[widget])
    if unset:
        values_set(FORM)
    state[FORM_WORDS] = words


def saved_values(snapshot: Snapshot) -> dict[str, Any]:
    """The class's saved assignment and question as the form's widgets hold them, by widget key."""
    current = snapshot.info.assignment or Assignment()
    saved = {preset_key(s): widget_value(s, current.preset.get(s.name, s.default)) for s in spec.on_form()}
    splits = [s.name for s in spec.group_splits()]
    saved["teacher_split"] = current.setting if current.setting in splits else NONE
    saved["teacher_open_settings"] = sorted(current.open)
    saved["teacher_question"] = snapshot.info.question or NONE
    return saved


def unsaved(snapshot: Snapshot) -> bool:
    """Whether the form shows other values than the class's saved ones: after a task was picked, or a Save refused."""
    saved, state = saved_values(snapshot), st.session_state
    presets = (
        setting_value(s, state.get(preset_key(s))) != setting_value(s, saved[preset_key(s)]) for s in spec.on_form()
    )
    choices = (chosen(key) != saved[key] for key in ("teacher_split", "teacher_question"))
    opened = sorted(chosen("teacher_open_settings") or []) != saved["teacher_open_settings"]
    return any(presets) or any(choices) or opened


def picked_task(snapshot: Snapshot) -> str:
    """The name of the task the class trains as the form now has it: its own task's, else the picker's, saved or
    not (a question names it)."""
    picked = st.session_state.get(preset_key(spec.setting("task")))
    return class_task_name(snapshot.info) if snapshot.info.task or picked is None else picked


def preset_key(s: spec.Setting) -> str:
    """The assignment form's widget key of setting `s`."""
    return f"teacher_{s.name}"


def assignment_form(snapshot: Snapshot, code: str, key: str) -> None:
    """What the class trains: every setting of the Train page (task, lengths and steps first), which settings
    students may change, the groups and the question. Saved by a callback; its outcome shows under the form, on this
    tab, never above the board."""
    form_values(snapshot)
    hidden = hidden_settings(snapshot)
    if hidden:
        st.info(_(OWN_TASK_FORM), icon=":material/table_view:")
    else:
        saved = (snapshot.info.assignment or Assignment()).settings(None)  # the class's task again: its saved settings
        task_picker(
            preset_key,
            _("Choosing a task fills in its default run; change any setting before you save the assignment."),
            saved=saved,
        )
    picked = picked_task(snapshot)  # the question names it before it is saved
    with st.form(form_id(FORM)):
        for col, name in zip(st.columns(len(PRESET)), (name for name in PRESET if name not in hidden)):
            s = spec.setting(name)
            draw_setting(col, s, preset_key(s))
        with st.expander(_(OTHER_SETTINGS), key="assignment_other_settings"):
            columns = st.columns(FOLDED_COLUMNS)
            for index, s in enumerate(s for s in spec.on_form() if s.name not in ("task", *PRESET, *hidden)):
                draw_setting(columns[index % len(columns)], s, preset_key(s))
        splits = [NONE, *(s.name for s in spec.group_splits())]
        st.selectbox(
            _("Groups differ in"),
            splits,
            format_func=said(split_words),
            key=worded("teacher_split", splits, split_words),
            help=_("Students alternate between the groups as they join, so the groups stay the same size."),
        )
        open_settings = [s.name for s in spec.class_open()]
        st.multiselect(
            _("Students may change"),
            open_settings,
            format_func=said(setting_label),
            key=worded("teacher_open_settings", open_settings, setting_label),
            select_all=SELECT_ALL,
            placeholder=_("Choose options"),
        )
        questions = [NONE, *QUESTIONS]
        question_words = partial(question_or_none, info=snapshot.info, task=picked)
        st.selectbox(
            _("Question students answer before Start"),
            questions,
            format_func=said(question_words),
            key=worded("teacher_question", questions, question_words),
            help=_("A question that names a task names the one the class trains: its own task, if it has one."),
        )
        st.form_submit_button(
            _("Save the assignment"), type="primary", key="teacher_save", on_click=save_assignment, args=(code, key)
        )
    dropped_notice()
    show_flashes("teacher_assignment")
    if unsaved(snapshot):
        st.warning(_(UNSAVED), icon=":material/edit_note:")
    lesson_time(snapshot)


@st.cache_data(max_entries=32, show_spinner=False)
def paced_class_time(
    assignment: Assignment, task: TaskPairs | None, students: int, slots: int, cap_s: float
) -> ClassTime:
    """`class_time`, paced once per assignment: a fraction of a second of the server's CPU."""
    return class_time(assignment, task, students, slots, cap_s)


def lesson_time(snapshot: Snapshot) -> None:
    """How long the saved assignment takes a class on this server, for the teacher to plan the lesson by."""
    registry = run_registry()
    students = max(len(snapshot.students), CLASS_SIZE)
    assignment = snapshot.info.assignment or Assignment()
    try:
        bound = paced_class_time(assignment, snapshot.info.task, students, registry.slots, registry.settings.max_run_s)
    except ValueError:  # settings the class's own task does not fit: its students' Start says why
        return
    reached = bound.steps_in_time
    plan = (
        N_(
            "**How long a class takes here.** Each run stops once it solves its task, or at its budget of {steps:,} "
            "steps: at about {step_ms:.0f} ms of a core a step on this server, that is about {run_s:.0f} s. With "
            "{slots} runs training at once, a class of {students} whose runs all go to their budget takes about "
            "{minutes} min; a server whose cores are busy with other work takes longer."
        )
        if reached is None
        else N_(
            "**How long a class takes here.** Each run stops once it solves its task, or at its time budget of "
            "{run_s:.0f} s: at about {step_ms:.0f} ms of a core a step on this server, its {steps:,} steps would take "
            "about {steps_s:.0f} s. With {slots} runs training at once, a class of {students} whose runs all go to "
            "their time budget takes about {minutes} min; a server whose cores are busy with other work takes longer."
        )
    )
    st.caption(
        _(
            plan,
            steps=bound.steps,
            step_ms=1000 * bound.step_s,
            run_s=math.ceil(bound.run_s),
            steps_s=math.ceil(bound.steps * bound.step_s),
            slots=bound.slots,
            students=bound.students,
            minutes=math.ceil(bound.class_s / 60),
        )
    )
    if bound.usual_class_s is not None:
        st.caption(
            _(
                "**Usually sooner.** These are the task's default runs, which stop once they solve it: over 30 seeds "
                "measured, they trained {steps:,} steps on average, so a class of {students} usually takes about "
                "{minutes} min here.",
                steps=bound.usual_steps,
                students=bound.students,
                minutes=math.ceil(bound.usual_class_s / 60),
            )
        )
    if reached is not None:
        st.warning(
            _(
                "**Runs may run out of time.** At that pace a run reaches its time budget of {budget_s:.0f} s after "
                "about {reached:,} of its {steps:,} steps. A run that has not solved its task by then ran out of "
                "time: it counts for no result, and a question that its runs answer may stay ungraded. Fewer "
                "steps, a smaller model or a longer time budget leave room.",
                budget_s=bound.budget_s,
                reached=reached,
                steps=bound.steps,
            ),
            icon=":material/timer_off:",
        )


def hidden_settings(snapshot: Snapshot) -> set[str]:
    """The settings the form leaves out: those the class's own task sets from its pairs, if it has one."""
    return {s.name for s in spec.set_by_pairs()} if snapshot.info.task is not None else set()


def split_words(name: str) -> str:
    """A split's words in the assignment form: its groups' labels, or none."""
    return N_("no groups: one class") if name == NONE else joined([g.label for g in split_groups(name)], " / ")


def setting_label(name: str) -> str:
    """A setting's label, in the assignment form's list of settings students may change."""
    return spec.setting(name).label


def question_or_none(key: str, info: ClassInfo, task: str) -> str:
    """A question's words in the assignment form, naming `task`, or none."""
    return N_("none") if key == NONE else question_text(key, info, task)


def save_assignment(code: str, key: str) -> None:
    """The Save button: the form's values as the class's assignment and question, or why they were not saved."""
    state = st.session_state
    split, question = chosen("teacher_split") or None, chosen("teacher_question") or None
    preset = {s.name: setting_value(s, state[preset_key(s)]) for s in spec.on_form()}
    try:
        groups = split_groups(split) if split else ()
        assignment = Assignment(preset, frozenset(chosen("teacher_open_settings")), split, groups)
        before = class_store().snapshot(code)
        class_store().set_assignment(code, key, assignment, caller(), question=question)  # both, or neither
    except (ClassroomError, ValueError) as err:
        flash("teacher_assignment", "error", _("Not saved: {reason}.", reason=markdown_literal(_(err))))
    else:
        saved = {preset_key(s): widget_value(s, preset[s.name]) for s in spec.on_form()}
        saved |= {"teacher_split": split or NONE, "teacher_question": question or NONE}
        state.update(saved, teacher_open_settings=sorted(assignment.open))  # the form shows what was saved
        flash("teacher_assignment", "success", saved_notice(before, assignment))


def saved_notice(before: Snapshot, assignment: Assignment) -> str:
    """What a Save says: that students see the assignment on their next page load, and how many runs the class
    already holds of the settings before, where they changed (each stays the student's until they press Start)."""
    trained = sum(map(started, before.runs.values()))
    if not trained or assignment.trains_as(before.info.assignment or Assignment()):
        return _(SAVED)
    return ngettext(
        "Saved: students see it on Train from their next page load. {n} student has already trained on the settings "
        "before: that run stays on the board, in the results and in the question's grading until they press Start "
        "again.",
        "Saved: students see it on Train from their next page load. {n} students have already trained on the "
        "settings before: their runs stay on the board, in the results and in the question's grading until they "
        "press Start again.",
        trained,
    )
