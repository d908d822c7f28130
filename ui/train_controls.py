"""The Train page's controls: Start (the form's button), and Pause or Resume, Step and Stop while a run trains."""

import streamlit as st

from transformer.classroom import ClassroomError
from transformer.i18n import N_
from transformer.literal import markdown_literal
from transformer.run_configs import run_configs
from transformer.serving import Run, ServerBusy
from ui.accessibility import shortcut_help
from ui.classes import Seat, answer_prediction, class_recorder, seat_in_class
from ui.common import client_address, forget_run, lost_in_restart, note_in_flight, remember_run, run_registry
from ui.language import _, ngettext
from ui.own_task import OWN_TASK, own_task, own_task_state
from ui.state import CLASS_CODE, FOLLOW_RUN, RUN, RUN_SEAT, flash, session_run_elsewhere, watcher_id
from ui.streamlit_internals import page_connected
from ui.train_form import KEPT, SHOWN_LOCKED, form_keys, read_form, remember_values

FIRST_STEP_WAIT_S = 0.5  # how long Start waits for a new run's first step (set-up takes about 0.1 s)
LOST_TOLD = "train_lost_told"  # session state: this session's form took the run a restart lost (`lost_run_notice`)
STOPPED_BY_YOU = "train_stopped"  # session state: the run this session's Stop ended (its outcome says so)
SAME_RUN = N_(
    "Start joined the run these settings already made, which has finished: its curves and result are here. The "
    "same settings and the same seed give the same run (the same data, the same starting weights): change the seed "
    "for a new one."
)
CLASS_SAME_RUN = N_(
    "Your settings, your seed included, match a run the server already trained, which has finished: its curves "
    "and result are here. The same settings and the same seed give the same run."
)
CLASS_SAME_RUN_OPEN_SEED = N_(
    "Your settings, your seed included, match a run the server already trained, which has finished: its curves "
    "and result are here. The same settings and the same seed give the same run. Change the seed for a new one."
)
ASSIGNMENT_CHANGED = N_(
    "Your teacher changed the class's settings since this page was drawn: the form shows them now. Check them, "
    "then press Start again."
)
LOST_IN_RESTART = N_(
    "The server restarted while your run of {task} (seed {seed}) was at step {step}, and the run was lost. The form "
    "has its settings again: press Start to train it anew."
)
# A shortcut of one letter fires as a student types or presses a key to move about (WCAG 2.1.4): letters take Alt.
SHORTCUTS = {"start_training": "Alt+S", "pause_training": "Alt+P", "step_training": "Right"}
RESUME_HELP = N_("Go on training from this step.")  # the pause button's help while the run is paused
CONTROL_HELP = {  # what each control does, by widget key
    "pause_training": N_("Hold the run before its next step; the model in hand is the paused one."),
    "step_training": N_("Train one metric row's worth of steps, then pause again."),
    "stop_training": N_(
        "Stops training after the current step; the model trained so far is kept. On a run several students "
        "watch, you leave it and it goes on for them."
    ),
}


def start_run() -> None:
    """Start button: start the run the form describes, or join the identical one. A callback runs before the
    page is drawn, so the same run draws the live view on top."""
    state = st.session_state
    current: Run | None = state.get(RUN)
    if current is not None and not current.done:  # a double click's second: the page shows the run the first started
        return
    if elsewhere := session_run_elsewhere("train"):
        flash("train_form", "info", elsewhere)
        return
    seat = seat_in_class()  # a class student's run takes the settings their teacher locked
    if seat is None and state.get(CLASS_CODE) is not None:  # the page's seat went since it was drawn (the class
        return  # ended, or the name moved to another browser): its redraw says so; no run of its leftover settings
    if seat is not None and seat.locked() != state.get(SHOWN_LOCKED):  # the form showed one step budget, not another
        flash("train_form", "info", _(ASSIGNMENT_CHANGED))
        return  # its redraw shows the settings Start would train
    try:
        values, own = read_form(), own_task(OWN_TASK)
        configs = seat.configs(values) if seat else run_configs(values, pairs=own)
        if seat and not answer_prediction(seat):  # the question says why, under its choices
            return
        run = run_registry().submit(watcher_id(), *configs, page_connected(), client_address(), seat and seat.key)
    except ServerBusy as err:
        flash("train_form", "warning", _("Your run could not start: {reason}.", reason=markdown_literal(_(err))))
    except ClassroomError as err:
        flash("train_form", "warning", _("Not yet: {reason}.", reason=markdown_literal(_(err))))
    except ValueError as err:
        flash("train_form", "error", _("These settings don't work: {reason}", reason=markdown_literal(_(err))))
    else:
        if seat:
            class_recorder().follow(seat.student, run)  # into the class database, whatever the page does next
        state[RUN], state[RUN_SEAT] = run, seat.key if seat else None
        state[FOLLOW_RUN] = True  # the run is the model in hand while it trains
        remember_values()
        # the run is in hand, the Train form shows its settings and task, and its class is known, after a reload too
        kept = {FOLLOW_RUN: True, KEPT: state[KEPT], RUN_SEAT: state[RUN_SEAT], **own_task_state(OWN_TASK)}
        remember_run(RUN, run, kept)
        if not seat and own is None:  # a class keeps its runs in its database; a file's pairs are not written down
            note_in_flight(run, state[KEPT])
        run.wait_until_moving(FIRST_STEP_WAIT_S)  # the curve then starts in this redraw, not at the next poll
        if run.done:  # these settings made a run that has ended: this redraw shows its curves and result
            flash("train_joined", "info", _(same_run(seat)))


def same_run(seat: Seat | None) -> str:
    """What Start says when it joined a finished run: change the seed for a new one, unless a teacher locked it."""
    if seat is None:
        return SAME_RUN
    return CLASS_SAME_RUN if "seed" in seat.locked() else CLASS_SAME_RUN_OPEN_SEED


def lost_run_notice() -> None:
    """After a restart of the server: tell a student whose Train run it lost, above the form (drawn after this), at
    every redraw until they start another run, and give the form that run's settings again once in each page
    session. A tab that reconnects by itself and a reload after it (which may resume that tab's session) both say
    so."""
    if (lost := lost_in_restart()) is None:
        return
    if LOST_TOLD not in st.session_state:  # then the form keeps what the student changes in it
        st.session_state[LOST_TOLD] = True
        for key in form_keys():
            st.session_state.pop(key, None)  # the form starts from the run's values (`KEPT`), not from this session's
        st.session_state[KEPT] = {key: value for key, value in lost.form.items() if key in form_keys()}
    said = _(LOST_IN_RESTART, task=markdown_literal(lost.task), seed=lost.seed, step=lost.step)
    flash("train_left", "warning", said)


def leave_run() -> None:
    """Stop button: leave the run; it stops once nobody watches it (a run of one's own stops at once)."""
    current: Run | None = st.session_state.get(RUN)
    if current is None:
        return
    run_registry().leave(watcher_id(), current)
    if current.status == "queued" or current.watchers():  # out of the queue, or others still watch the run
        forget_run(RUN)
        left = current.open_pages()
        flash(
            "train_left",
            "info",
            ngettext(
                "You left the run; it goes on for the {n} other student watching it.",
                "You left the run; it goes on for the {n} other students watching it.",
                left,
            )
            if left
            else _("You left the queue: your run will not start."),
        )
    else:
        st.session_state[STOPPED_BY_YOU] = current  # its outcome says who stopped it
        current.wait_until_done(5.0)  # stopped, as it was the student's own: drawn as stopped


def run_controls(run: Run, shared: bool) -> None:
    """Pause or Resume, Step, and Stop, in a row that wraps on a narrow screen rather than cut a label short; Pause
    (Resume while paused) and Step have keyboard shortcuts. Pause and Resume are one button (one key, one style)
    whose words change, so that keyboard focus stays on it when it is pressed: another key or style is another
    button in the browser, and focus falls back to the page's start."""
    paused, queued = run.status == "paused", run.status == "queued"
    row = st.container(horizontal=True, key="run_controls")
    why_not = _("Several students watch this run: only a run of your own can be paused.") if shared else None
    if paused:
        _control_button(row, _("Resume"), "pause_training", "play_arrow", run.resume, said=_(RESUME_HELP))
    else:
        _control_button(row, _("Pause"), "pause_training", "pause", run.pause, shared or queued, why_not)
    _control_button(row, _("Step"), "step_training", "skip_next", run.step_row, shared or not paused, why_not)
    _control_button(row, _("Leave queue") if queued else _("Stop"), "stop_training", "stop", leave_run)


def _control_button(
    row, label: str, key: str, icon: str, on_click, disabled: bool = False, said: str | None = None, **options
) -> None:
    """A button as wide as its label, with a Material icon and its keyboard shortcut (SHORTCUTS); its help says
    `said` when given (why it is disabled, or what it does now), else what it does (CONTROL_HELP), and the
    shortcut."""
    row.button(
        label,
        key=key,
        icon=f":material/{icon}:",
        width="content",
        on_click=on_click,
        disabled=disabled,
        help=shortcut_help(said or _(CONTROL_HELP[key]), SHORTCUTS.get(key)),
        shortcut=SHORTCUTS.get(key),
        **options,
    )
