"""Train: a fresh Transformer learns a toy task while its loss, accuracy and outputs stream in.

While a run is queued or training, its status, controls and curves sit at the top of the page, in view on a
projector. Once it has ended, how it ended and where to go next sit above its curves, in view without scrolling,
and the settings form comes back under them.
"""

from ui.streamlit_internals import rerun_inside_frame

rerun_inside_frame()  # first of all: see its docstring

import streamlit as st

from transformer.curves import metrics_table
from transformer.evaluation import PEEKED
from transformer.figures import COLUMN_PX
from transformer.figures.training import accuracy_figure, loss_figure, lr_figure
from transformer.i18n import N_
from transformer.literal import markdown_literal
from transformer.naming import run_summary
from transformer.serving import Run, unwatched
from transformer.shares import shown_share
from ui.accessibility import shortcut_help
from ui.alignment_view import train_alignment
from ui.charts import chart
from ui.classes import Seat, class_seat, prediction_input, prediction_result, recorded_elsewhere, run_of_seat
from ui.common import live_poll_s, queue_notice, run_registry
from ui.downloads import DOWNLOAD_RERUNS, csv_download
from ui.dynamics_view import dynamics_view
from ui.forms import form_id
from ui.into_view import bring_into_view
from ui.language import _, dropped_notice, session_translator
from ui.links import share_link
from ui.own_task import OWN_TASK, own_task_expander, task_notice
from ui.report_view import report_download
from ui.run_view import CHART_HEIGHT, classmates_line, held_out_examples, live_charts, progress_line, run_id
from ui.state import (
    RUN,
    TRAIN_SAVED,
    drop_flash,
    in_hand_label,
    model_in_hand,
    save_finished_run,
    saved_run_in_hand,
    session_run_elsewhere,
    show_flashes,
    watcher_id,
)
from ui.streamlit_internals import page_connected, page_waker
from ui.train_controls import SHORTCUTS, STOPPED_BY_YOU, lost_run_notice, run_controls, start_run
from ui.train_form import TRAIN_FORM, draw_fields, draw_task

REASONS = {  # how a run that was not stopped ended
    "solved": N_(
        "Finished after {steps} steps in {seconds:.1f} s, because it got every held-out sequence right: {scores}."
    ),
    "step budget": N_("Finished after {steps} steps in {seconds:.1f} s, because the step budget ran out: {scores}."),
    "time budget": N_("Finished after {steps} steps in {seconds:.1f} s, because the time budget ran out: {scores}."),
}
# its seconds are training's, which a busy server's wait between steps is not: a slot's limit is by the clock
STOPPED = N_("Stopped at step {steps} after {seconds:.1f} s of training, because {why}: {scores}.")
NEXT_PAGES = [  # where a finished run goes next: (page, link label, icon)
    ("pages/decoding.py", N_("Decode it"), ":material/skip_next:"),  # short: a link's label does not wrap
    ("pages/lengths.py", N_("Longer inputs"), ":material/straighten:"),
    ("pages/masking.py", N_("Its masks"), ":material/visibility_off:"),
]
QUEUED = N_(
    "Every training slot is in use: your run is number {position} in the queue, and should start in about "
    "{wait_s:.0f} s. It starts on its own; keep this page open."
)
QUEUED_UNKNOWN = N_(
    "Every training slot is in use: your run is number {position} in the queue. No run like it has finished on this "
    "server yet, so how long it waits is not known. It starts on its own; keep this page open."
)


def metric_formats() -> dict:
    """The metrics table's headers and number formats; the CSV keeps the raw columns."""
    number = st.column_config.NumberColumn
    return {
        "step": number(_("step")),  # not pinned (ui.tables)
        "train_loss": number(_("training loss"), format="%.4f"),
        "val_loss": number(_("held-out loss"), format="%.4f"),
        "token_acc": number(_("token accuracy"), format="percent"),
        "exact_match": number(_("exact match"), format="percent"),
        "lr": number(_("learning rate"), format="%.2e"),
        "tokens_per_s": number(_("tokens/s"), format="%d"),
        "elapsed_s": number(_("elapsed (s)"), format="%.1f"),
    }


st.title(_("Train a Transformer"))
st.caption(
    _(
        "Pick a toy task, press **Start**, and watch a fresh encoder-decoder Transformer learn it: the loss falls, "
        "the held-out accuracy climbs, and five held-out inputs show what the model answers right now."
    )
)

share_link()
seat = class_seat()  # in a class: the student's group and locked settings (a join form first, if need be)
run: Run | None = st.session_state.get(RUN)
if run is not None and run.done and not run_of_seat(seat):  # another class's, or trained outside this one
    run = None  # neither its outcome nor its report is this class's
active = run is not None and not run.done  # queued, preparing, training or paused
poll_s = live_poll_s()
elsewhere = session_run_elsewhere("train")
if run is None and seat is None:
    lost_run_notice()  # a run of this browser's that the server before this one had in flight


@st.fragment(run_every=poll_s if active else None)
def live_view(run: Run, poll_s: float | None) -> None:
    """Status, controls, curves and a few decoded examples, redrawn every `poll_s` seconds (None: once); reruns the
    whole page once the run ends, or when the server's load asks for another redraw rate."""
    if st.session_state.get(RUN) is not run or (poll_s and run.done):
        st.rerun()  # the student left the run, or it ended: redraw the whole page
    if poll_s and not 0.5 < live_poll_s() / poll_s < 2:
        st.rerun()  # many more (or fewer) pages watch runs now: poll at the rate that fits
    run.touch(watcher_id(), page_connected(), page_waker())
    st.caption(markdown_literal(_(run_summary(run.model_config, run.data_config, run.train_config))))  # a file's name
    classmates = classmates_line(run)
    if run.status != "done":
        run_controls(run, shared=classmates > 0)
    rows, losses = run.rows[:], run.losses[:]
    if run.status == "queued":
        queue_notice(run, QUEUED, QUEUED_UNKNOWN)
        return
    if run.status == "preparing":
        st.progress(0.0, text=_("Preparing: building the model and drawing the held-out set..."))
    elif run.status in ("training", "paused"):
        st.progress(*progress_line(run, rows))
    if not losses:  # preparing, or ended before its first step
        return
    live_charts(run, rows, losses)
    train_alignment(run)
    if rows:
        held_out_examples(run, rows)


def outcome(run: Run, seat: Seat | None) -> None:
    """How the ended run ended and what to do next: above its curves, in view without scrolling when it ends."""
    bring_into_view("train_outcome", run_id(run))  # the student may have scrolled down while it trained
    if (joined := drop_flash("train_joined")) is not None:  # Start joined a run that had already ended
        bring_into_view("train_joined", object())  # each such press, wherever the page was scrolled to
        st.info(joined[1], icon=":material/join:")
    if run.error:
        st.error(
            _(
                "Training stopped with an error: {error}. Change the settings below and start again.",
                error=markdown_literal(_(run.error)),
            )
        )
    elif run.withdrawn:
        st.warning(
            _("Your run left the queue without starting: {why}. Press Start to queue again.", why=_(run.withdrawn))
        )
    elif run.result is not None and run.result.steps == 0:
        st.info(_("Stopped before the first training step: nothing was trained or saved."))
    elif run.result is not None:
        save_finished_run()  # usually done already by the sidebar, unless the run ended during this rerun
        finished(run, seat)


def finished(run: Run, seat: Seat | None) -> None:
    """A run that trained: how it ended, its scores, and where its model is now."""
    saved, result = st.session_state[TRAIN_SAVED], run.result
    scores = _(
        "exact match {exact_match:.1%} and token accuracy {token_acc:.1%} on the held-out set",
        exact_match=shown_share(result.exact_match),
        token_acc=shown_share(result.token_acc),
    )
    if result.reason == "stopped":
        st.info(_(STOPPED, steps=result.steps, seconds=result.seconds, why=stopped_because(run), scores=scores))
    else:
        st.success(_(REASONS[result.reason], steps=result.steps, seconds=result.seconds, scores=scores))
    if not run.model_config.causal_mask:
        st.caption(_(PEEKED))
    if saved["error"]:
        st.error(
            _("The trained model could not be saved as a checkpoint: {error}", error=markdown_literal(saved["error"]))
        )
    elif saved_run_in_hand():  # the model in hand now, whatever was in hand when the run ended
        st.info(
            _(
                "The model is now **in hand** as *trained: {name}*. Open it up on the other pages.",
                name=markdown_literal(saved["name"]),
            )
        )
        links = st.container(horizontal=True, key="train_next_pages")  # each link as wide as its words
        for path, label, icon in NEXT_PAGES:
            links.page_link(path, label=_(label), icon=icon)
    else:
        st.info(
            _(
                "Saved as *{name}* on the Checkpoints page. The model in hand is another: *{model}*.",
                name=markdown_literal(saved["name"]),
                model=markdown_literal(in_hand_label(model_in_hand()[1])),
            )
        )
    if seat:
        prediction_result(seat)


def stopped_because(run: Run) -> str:
    """Why a run stopped before its settings ended it: the student's Stop (on this page, or on a page of theirs that
    watched it: another, or this one before a reload), a limit of the server, or no page watching it."""
    if st.session_state.get(STOPPED_BY_YOU) is run:
        return _("you pressed Stop")
    if run.notice:
        return markdown_literal(_(run.notice))
    if run.left:
        return _("you pressed Stop on a page of yours that watched it")
    return _(run.unwatched or unwatched(run_registry().settings.idle_timeout_s))


def downloads(run: Run, seat: Seat | None) -> None:
    """A finished run's lab report to download, and every metric row, its metrics and checkpoint."""
    saved = st.session_state[TRAIN_SAVED]
    report_download(run, saved["name"], seat)
    with st.expander(_("Metrics of every row, and downloads"), key="train_rows_expander"):
        table = metrics_table(run.rows[:])
        st.dataframe(table, hide_index=True, column_config=metric_formats())
        csv_col, ckpt_col = st.columns(2)
        csv_download(csv_col, _("Download metrics (CSV)"), table, f"{saved['name']}-metrics.csv", "download_metrics")
        if not saved["error"]:
            ckpt_col.download_button(
                _("Download checkpoint"),
                saved["data"],
                f"{saved['name']}.pt",
                "application/octet-stream",
                key="download_checkpoint",
                on_click=DOWNLOAD_RERUNS,
            )


show_flashes("train_left")

if run is not None:
    if not active:  # ended as this redraw began: a run that ends during it redraws the page
        outcome(run, seat)
    else:  # Start may have been pressed at the bottom of a long page: its progress comes into view
        bring_into_view("train_live", run_id(run))
        show_flashes("train_form")  # why Start did not start one (another tab's run, now shown here), above it
    live_view(run, poll_s if active else None)
    if run.losses:  # drawn with the page, not at every poll: the schedule itself never changes
        with st.expander(_("Learning rate over the run"), key="train_lr_expander"):
            chart(st, lr_figure(run.train_config, run.step, tr=session_translator()), key="train_lr_chart")
            st.caption(
                _(
                    "The schedule, step by step over the whole step budget; the dashed line is where the run was "
                    "when this page was drawn. Adam's steps are this rate times its own per-weight scaling."
                )
            )
    dynamics_view(run)
    if not active and run.result is not None and run.result.steps > 0 and not run.error:
        downloads(run, seat)

if not active:
    if run is not None:
        st.header(_("Start another run"))
    elif seat:
        recorded_elsewhere(seat)
    own = seat.info.task if seat else own_task_expander(OWN_TASK)
    task_notice(own, by_class=seat is not None)
    locked = seat.locked() if seat else None
    by_teacher = seat is None or seat.info.assignment is not None
    draw_task(locked, by_teacher, own_task=own is not None)  # fills the form at once; a task from examples replaces it
    with st.form(form_id(TRAIN_FORM), enter_to_submit=False):  # Enter in a number field must not start a run
        draw_fields(locked, own_task=own is not None)
        if seat:
            prediction_input(seat)
        st.form_submit_button(
            _("Start training"),
            key="start_training",
            type="primary",
            icon=":material/play_arrow:",
            disabled=elsewhere is not None,
            help=shortcut_help(_(elsewhere or N_("Trains with these settings.")), SHORTCUTS["start_training"]),
            shortcut=SHORTCUTS["start_training"],
            on_click=start_run,
        )
    dropped_notice()
    show_flashes("train_form")

if run is None:  # the empty axes the curves will fill: drawn now, the charts are ready the moment Start is pressed
    loss_col, acc_col = st.columns(2)
    tr = session_translator()
    empty_loss = loss_figure([], step_losses=[], height=CHART_HEIGHT, tr=tr, fit_px=COLUMN_PX)
    chart(loss_col, empty_loss, key="empty_loss_chart")
    chart(acc_col, accuracy_figure([], height=CHART_HEIGHT, tr=tr, fit_px=COLUMN_PX), key="empty_accuracy_chart")

with st.expander(_("How training works"), key="train_how_expander"):
    st.markdown(
        _(
            "Training follows section 5.3 of the paper: Adam with a learning rate that warms up linearly, then "
            "decays as 1/√step (we set the peak directly instead of deriving it from d_model and, unlike the paper, "
            "clip the gradient norm at 1). The held-out curves, the examples and the model you keep are a running "
            "average of the trained weights, which is steadier than the weights themselves (set *Weight averaging* "
            "to 0 to watch the raw ones); the training loss is the raw weights' own, at every step."
        )
    )
    decay, stay = _("decay as {rate} (paper)", rate=r"$1/\sqrt{s}$"), _("stay at the peak")  # $...$: maths in text
    peak = _("peak")  # the peak learning rate
    st.latex(
        rf"\mathrm{{lr}}(s) = \text{{{peak}}}\cdot"
        r"\begin{cases}\min\left(\frac{s}{w},\ \sqrt{\frac{w}{s}}\right) & "
        rf"\text{{{decay}}}\\ \min\left(\frac{{s}}{{w}},\ 1\right) & \text{{{stay}}}\end{{cases}}"
    )
    st.caption(
        _(
            "s is the training step and w the number of warm-up steps; with no warm-up the rate is the peak from "
            "step 1. A paused run keeps its training slot and its time budget: only training time counts, and a "
            "pause longer than two minutes ends the run (its model is kept)."
        )
    )
