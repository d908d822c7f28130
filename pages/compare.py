"""Compare runs: train variants that differ in one switch, overlay their curves, and watch attention form."""

from ui.streamlit_internals import rerun_inside_frame

rerun_inside_frame()  # first of all: see its docstring

from dataclasses import replace

import pandas as pd
import streamlit as st

from transformer.compare_state import (
    CompareState,
    experiment_for,
    read_compare,
    state_for,
    write_compare,
)
from transformer.experiments import (
    CUSTOM,
    READY,
    Experiment,
    ExperimentRun,
    LiveExperiment,
    experiment_from_json,
    experiment_to_json,
    load_shipped,
    runs_frame,
    summary_table,
)
from transformer.figures.compare import comparison_figure, length_comparison_figure
from transformer.i18n import N_, Message, joined
from transformer.limits import MAX_JSON_BYTES
from transformer.literal import markdown_literal
from transformer.serving import ServerBusy
from transformer.uploads import shown_name
from ui.charts import chart, narrowest_chart_px
from ui.common import client_address, forget_run, queue_notice, remember_run, run_registry
from ui.compare_builder import builder_keys, class_experiment, custom_builder, own_class_task_notice
from ui.compare_timeline import PLOTLY_CONFIG, show_timeline
from ui.downloads import DOWNLOAD_RERUNS, csv_download
from ui.language import _, said, session_translator, worded
from ui.links import share_link, show_link_notices
from ui.state import COMPARE_JOB, drop_flash, flash, session_run_elsewhere, show_flashes, watcher_id
from ui.streamlit_internals import page_connected

QUEUED = N_(
    "Every training slot is in use: the next variant is number {position} in the queue, and should start in about "
    "{wait_s:.0f} s. It starts on its own; keep this page open."
)
QUEUED_UNKNOWN = N_(
    "Every training slot is in use: the next variant is number {position} in the queue. No run like it has finished "
    "on this server yet, so how long it waits is not known. It starts on its own; keep this page open."
)
LIVE_SOURCE = N_("your live run")  # what `current_run` calls a run still in this session's hands
SUMMARY_HEADERS = {  # the summary table's columns, as shown; the CSV keeps the raw columns
    "variant": N_("variant"),
    "solved at step": N_("solved at step"),
    "solved at (s)": N_("solved at (s)"),
    "steps/s": N_("steps/s"),
    "exact match (%)": N_("exact match (%)"),
    "token acc. (%)": N_("token acc. (%)"),
    "train loss": N_("train loss"),
    "steps": N_("steps"),
    "time (s)": N_("time (s)"),
}
SUMMARY_FORMATS = {"exact match (%)": ".1f", "token acc. (%)": ".1f", "train loss": ".4g"}  # else ",.1f" or ",d"


@st.cache_resource(show_spinner=False)
def shipped_run(key: str) -> ExperimentRun | None:
    """A ready-made experiment's shipped result set, read once per server (read-only)."""
    return load_shipped(key)


def show_settings(state: CompareState) -> None:
    """Make `state` the page's settings: the widgets start again from it."""
    st.session_state["compare_state"] = state
    for key in ["compare_experiment", *builder_keys()]:
        st.session_state.pop(key, None)


def load_upload() -> None:
    """Read an uploaded experiment file; show it, or, while a rerun of this session trains, ask first."""
    upload = st.session_state.get("compare_upload")
    drop_flash("compare_upload")
    st.session_state.pop("compare_pending", None)
    if upload is None:
        return
    name = shown_name(upload.name)
    try:
        run = experiment_from_json(upload.getvalue())
    except ValueError as err:
        flash("compare_upload", "error", markdown_literal(_("Could not load {name}: {reason}", name=name, reason=err)))
        return
    if (job := st.session_state.get(COMPARE_JOB)) is not None and not job.done:
        st.session_state["compare_pending"] = (run, name)  # `ask_before_replacing` asks
        return
    show_loaded(run, name)


def show_loaded(run: ExperimentRun, name: str) -> None:
    """Show an experiment file's runs, with the settings that select it; this session's rerun makes way, for good:
    it shows again only when the student reruns."""
    if (job := forget_run(COMPARE_JOB)) is not None:
        run_registry().stop_chain(job.chain)
    settings = state_for(run.experiment)
    try:  # the file is shown as long as the page's settings make this experiment
        st.session_state["compare_loaded"] = (run, name, experiment_for(settings))
    except ValueError:
        st.session_state["compare_loaded"] = (run, name, None)
    show_settings(settings)


def show_pending() -> None:
    """Button callback: show the file waiting for an answer, stopping the rerun."""
    if (pending := st.session_state.pop("compare_pending", None)) is not None:
        show_loaded(*pending)


def keep_rerun() -> None:
    """Button callback: the rerun goes on; the file waiting for an answer is not shown."""
    st.session_state.pop("compare_pending", None)
    flash("compare_upload", "info", _("Your rerun goes on. Load the file again once you have what you need from it."))


def ask_before_replacing() -> None:
    """While a file waits for an answer: show it (stopping this session's rerun), or keep the rerun."""
    if (pending := st.session_state.get("compare_pending")) is None:
        return
    job = st.session_state.get(COMPARE_JOB)
    warning = (
        N_(
            "Your rerun has finished. Showing {name} stops it and takes the place of its results on this page: "
            "download them above first to keep them."
        )
        if job is None or job.done
        else N_(
            "Your rerun is still training. Showing {name} stops it and takes the place of its results on this page: "
            "download them above first to keep them."
        )
    )
    st.warning(_(warning, name=markdown_literal(pending[1])), icon=":material/help:")
    show_col, keep_col = st.columns(2)
    show_col.button(_("Stop the rerun and show the file"), key="compare_pending_show", on_click=show_pending)
    keep_col.button(_("Keep my rerun"), key="compare_pending_keep", on_click=keep_rerun, type="primary")


st.title(_("Compare runs"))
st.markdown(
    _(
        "Does a part of the Transformer matter? Train two versions that differ in **one switch**, from the same seed "
        "on the same data, and overlay their curves. Then watch **attention form during training**: how the "
        "decoder's cross-attention (section 3.2.3 of the paper) goes from spread out to pointing at the source "
        "token it must copy."
    )
)

own_class_task_notice()
if "compare_state" not in st.session_state:  # a new visit: the settings come from the link, or the class's task
    linked, notices = read_compare(st.query_params.to_dict())
    show_settings((None if "experiment" in st.query_params else class_experiment()) or linked)
    show_link_notices(notices)
# Widgets start from the remembered settings (with keys, so tests and callbacks can reach them): a widget hidden
# by another page or by a ready-made experiment comes back as it was.
state: CompareState = st.session_state["compare_state"]
st.session_state.setdefault("compare_experiment", state.experiment)
choice = st.selectbox(
    _("Experiment"),
    [*READY, CUSTOM],
    key=worded("compare_experiment"),
    format_func=said(lambda k: READY[k].title if k in READY else N_("Custom: build your own")),
    help=_("Ready-made experiments come with results, so you see the answer at once."),
)
if choice == CUSTOM:
    state = custom_builder(state)
else:
    state = replace(state, experiment=choice)
st.session_state["compare_state"] = state
share_link(write_compare(state))  # the address bar now opens this experiment

try:
    experiment = experiment_for(state)
except ValueError as err:
    st.warning(_("Can't build this experiment: {reason}.", reason=markdown_literal(_(err))))
    st.stop()
st.info(_("**What to expect.** {expectation}", expectation=_(experiment.expectation)))
st.caption(_("{summary} Copy the address bar to share this experiment.", summary=_(experiment.summary())))

job: LiveExperiment | None = st.session_state.get(COMPARE_JOB)
running = job is not None and not job.done
elsewhere = session_run_elsewhere("compare")
buttons = st.container(horizontal=True)
if buttons.button(
    _("Rerun live"),
    key="compare_run",
    type="primary",
    disabled=running or elsewhere is not None,
    help=_(elsewhere or N_("Trains every variant here, one after the other, while the curves stream in.")),
):
    try:
        new_job = LiveExperiment.start(experiment, run_registry(), watcher_id(), page_connected(), client_address())
    except ServerBusy as err:
        st.warning(
            _(
                "Your rerun could not start: {reason}. The shipped results below need no training.",
                reason=markdown_literal(_(err)),
            )
        )
    except ValueError as err:
        st.error(_("These settings don't work: {reason}", reason=markdown_literal(_(err))))
    else:
        st.session_state[COMPARE_JOB] = new_job
        st.session_state.pop("compare_loaded", None)
        remember_run(COMPARE_JOB, new_job, {"compare_state": state})  # a reload shows this experiment again
        st.rerun()
if buttons.button(
    _("Stop"),
    key="compare_stop",
    disabled=not running,
    help=_("Stops the variant that is training; the runs so far stay on screen."),
):
    run_registry().stop_chain(job.chain)
    st.rerun()


def current_run(state: CompareState, experiment: Experiment) -> tuple[ExperimentRun | None, str]:
    """The run to show for the chosen `experiment` (built from `state`), and where it comes from."""
    job = st.session_state.get(COMPARE_JOB)
    if job is not None and job.experiment == experiment and (live := job.so_far()) is not None:
        return live, LIVE_SOURCE
    if (loaded := st.session_state.get("compare_loaded")) and loaded[2] == experiment:
        run, name = loaded[:2]
        if run.experiment.key == CUSTOM and run.experiment != experiment:  # the page could not set it exactly
            own = Message(N_("its own settings: {summary}"), summary=run.experiment.summary())
            return run, Message(N_("loaded from {name} ({own})"), name=markdown_literal(name), own=own)
        return run, Message(N_("loaded from {name}"), name=markdown_literal(name))
    try:
        return (shipped_run(state.experiment), N_("shipped with the app")) if state.experiment in READY else (None, "")
    except (OSError, ValueError) as err:
        st.error(
            _("The shipped results of this experiment could not be read: {reason}", reason=markdown_literal(_(err)))
        )
        return None, ""


def show_length_tests(run: ExperimentRun) -> None:
    """The length test of each variant that has finished, side by side."""
    tested = {_(v.label): v.lengths for v in run.variants if v.lengths}
    if tested:
        figure = length_comparison_figure(tested, tr=session_translator(), fit_px=narrowest_chart_px())
        chart(st, figure, key="compare_lengths", config=PLOTLY_CONFIG)
        st.caption(
            _(
                "Each finished variant's final model, greedy-decoded on unseen inputs of every length up to twice "
                "the longest it trained on: the share it gets exactly right."
            )
        )


def live_status(job: LiveExperiment | None, live: bool, experiment: Experiment) -> None:
    """Where this session's run of `experiment` is: its place in the queue and its progress while `live`, the error
    that stopped it, or the variants a Stop left short of their end."""
    if live:
        queue_notice(job.chain.current, QUEUED, QUEUED_UNKNOWN)
        done, total = job.progress()
        st.progress(
            min(done / total, 1.0),
            text=_(
                "Training variant {variant} of {variants}: {done} of {total} steps in all",
                variant=len(job.chain.runs),
                variants=len(job.experiment.values),
                done=done,
                total=total,
            ),
        )
    elif job is not None and job.error and job.experiment == experiment:
        st.error(_("Training stopped with an error: {error}", error=markdown_literal(_(job.error))))
    elif job is not None and job.experiment == experiment and (short := job.cut_short()):
        st.warning(
            _(
                "Stopped before every variant trained to its end: {variants} did not. Press **Rerun live** to train "
                "them all.",
                variants=markdown_literal(_(joined(short, N_(", ")))),
            )
        )


def show_curves_and_summary(run: ExperimentRun, source: str | Message) -> None:
    """Where the run shown comes from, its variants' curves overlaid, and the summary table."""
    st.caption(_("Showing: {source}.", source=_(source)))
    histories = {_(v.label): v.history for v in run.variants}
    figure = comparison_figure(histories, tr=session_translator(), fit_px=narrowest_chart_px())  # stacked on a phone
    chart(st, figure, key="compare_curves", config=PLOTLY_CONFIG)
    # a table whose cells wrap: every variant's name reads whole ("GRU encoder-decoder") at any width
    summary = summary_table(run).set_index("variant")
    for column in summary:  # one format a column: 11.0 beside 79.7, never 11 beside 79.7
        shape = SUMMARY_FORMATS.get(column, ",.1f" if "(s)" in column or "/s" in column else ",.0f")
        summary[column] = summary[column].map(lambda v, shape=shape: "–" if pd.isna(v) else format(v, shape))
    summary.index = summary.index.map(_).rename(_(SUMMARY_HEADERS["variant"]))
    with st.container(key="compare_summary"):  # its words break whole on a phone (`ui.accessibility`)
        st.table(summary.rename(columns={column: _(header) for column, header in SUMMARY_HEADERS.items()}))
    st.caption(
        _(
            "Solved = the first metric row where every held-out sequence checked was decoded exactly right. Exact "
            "match and token accuracy (acc.) are on the held-out set where the run ended. Times and steps per second "
            "(steps/s) are training time on the machine that trained the run: on one CPU thread, the thread's own "
            "time, which other work on the machine does not take. A loss spike after a run has solved its "
            "task, which a rerun may show, is a known effect of Adam, not a fault: once the loss is near zero Adam "
            "divides each step by the gradients' running size, tiny too, so its steps stay about as large as the "
            "learning rate, and one slightly larger gradient throws the weights off. The run recovers in a few rows."
        )
    )


def show_exports(run: ExperimentRun) -> None:
    """The run shown as a CSV of every run and as an experiment file to load back."""
    st.header(_("Export and share"))
    csv_col, json_col = st.columns(2)
    name = run.experiment.key
    csv_download(csv_col, _("Download all runs (CSV)"), runs_frame(run), f"{name}.csv", "compare_download_csv")
    json_col.download_button(
        _("Download the experiment (JSON)"),
        experiment_to_json(run),
        f"{name}.json",
        "application/json",
        key="compare_download_json",
        on_click=DOWNLOAD_RERUNS,
        help=_("Settings, curves and attention in one file; load it back below."),
    )


@st.fragment(run_every=1.0 if running else None)
def results(state: CompareState, experiment: Experiment, polling: bool) -> None:
    """Curves, table, timeline and exports of the run shown for `experiment`; while a live run trains, it polls it."""
    job = st.session_state.get(COMPARE_JOB)
    if job is not None and not job.done:
        job.chain.touch(page_connected())
    if polling and (job is None or job.done):
        st.rerun()  # redraw the page without polling
    run, source = current_run(state, experiment)
    if run is None:
        st.info(_("No results for these settings yet: press **Rerun live** to train them."))
        return
    live = job is not None and not job.done and job.experiment == experiment
    live_status(job, live, experiment)
    show_curves_and_summary(run, source)
    show_length_tests(run)
    show_timeline(run, live=live and source == LIVE_SOURCE)
    show_exports(run)


results(state, experiment, polling=running)
limit_mb = min(st.get_option("server.maxUploadSize"), MAX_JSON_BYTES // 2**20)
st.file_uploader(
    _("Load an exported experiment (JSON, {most} MB at most)", most=limit_mb),
    type=["json"],
    key="compare_upload",
    on_change=load_upload,
    max_upload_size=limit_mb,
    help=_("A file from the JSON download above: its runs are shown again, no training needed."),
)
ask_before_replacing()
show_flashes("compare_upload")
