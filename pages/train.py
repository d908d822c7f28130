"""Train: a fresh Transformer learns a toy task while its loss, accuracy and outputs stream in.

While a run is queued or training, its status, controls and curves sit at the top of the page, in view on a
projector; the settings form comes back under the results once it has ended.
"""

import streamlit as st

from pages.common import forget_run, live_poll_s, remember_run, run_registry
from pages.links import share_link
from pages.state import (
    FOLLOW_JOB,
    JOB,
    TRAIN_SAVED,
    flash,
    save_finished_job,
    session_run_elsewhere,
    show_flashes,
    watcher_id,
)
from pages.streamlit_internals import page_connected
from transformer.figures.training import accuracy_figure, loss_figure, lr_figure
from transformer.limits import TRAIN_FORM_LIMITS as LIMITS
from transformer.literal import markdown_literal
from transformer.live import build_configs, live_examples, metrics_table, progress, run_summary
from transformer.model import ModelConfig
from transformer.serving import Run, ServerBusy, unwatched
from transformer.tasks import TASKS
from transformer.training import TrainConfig, smoothed_loss_floor

MODEL, TRAIN = ModelConfig(), TrainConfig()  # the defaults: the fast classroom model
DEVICES, SCHEDULES = ["auto", "cpu", "cuda", "mps"], ["noam", "constant"]
POSITIONALS = ["sinusoidal", "learned", "none"]
CHART_HEIGHT = 320  # both charts fit beside each other under the controls at 1280x800
REASONS = {
    "solved": "it got every held-out sequence right",
    "step budget": "the step budget ran out",
    "time budget": "the time budget ran out",
}
NEXT_PAGES = [  # where a finished run goes next: (page, link label, icon)
    ("pages/decoding.py", "Decode it", ":material/skip_next:"),  # short: a link's label does not wrap
    ("pages/lengths.py", "Longer inputs", ":material/straighten:"),
    ("pages/masking.py", "Its masks", ":material/visibility_off:"),
]
METRIC_FORMATS = {  # the table's headers and number formats; the CSV keeps the raw columns
    "step": st.column_config.NumberColumn("step", pinned=True),  # stays in view when the table scrolls sideways
    "train_loss": st.column_config.NumberColumn("training loss", format="%.4f"),
    "val_loss": st.column_config.NumberColumn("held-out loss", format="%.4f"),
    "token_acc": st.column_config.NumberColumn("token accuracy", format="percent"),
    "exact_match": st.column_config.NumberColumn("exact match", format="percent"),
    "lr": st.column_config.NumberColumn("learning rate", format="%.2e"),
    "tokens_per_s": st.column_config.NumberColumn("tokens/s", format="%d"),
    "elapsed_s": st.column_config.NumberColumn("elapsed (s)", format="%.1f"),
}

st.title("Train a Transformer")
st.caption(
    "Pick a toy task, press **Start**, and watch a fresh encoder-decoder Transformer learn it: the loss falls, the "
    "held-out accuracy climbs, and five held-out inputs show what the model answers right now."
)

share_link()
job: Run | None = st.session_state.get(JOB)
active = job is not None and not job.done  # queued, preparing, training or paused
elsewhere = session_run_elsewhere("train")
form_keys: list[str] = []


def kept(key: str, default: object, options: list | None = None) -> dict:
    """A form widget's key and starting value (`value`, or `index` into `options`): the value it had when the
    student last left this page (Streamlit forgets widget values then), else `default`."""
    form_keys.append(key)
    value = st.session_state.get("train_kept", {}).get(key, default)
    return {"key": key, "value": value} if options is None else {"key": key, "index": options.index(value)}


# Form widget keys -> the config fields they set (the seed sets both the data's and the training's).
DATA_FIELDS = {
    "train_task": "task",
    "train_min_len": "min_len",
    "train_max_len": "max_len",
    "train_symbols": "n_symbols",
    "train_seed": "seed",
}
MODEL_FIELDS = {
    "train_d_model": "d_model",
    "train_heads": "n_heads",
    "train_layers": "n_layers",
    "train_d_ff": "d_ff",
    "train_dropout": "dropout",
    "train_positional": "positional",
    "train_norm": "norm_first",
    "train_causal": "causal_mask",
    "train_scale": "scale_scores",
}
TRAIN_FIELDS = {
    "train_steps": "steps",
    "train_time_budget": "time_budget_s",
    "train_batch": "batch_size",
    "train_lr": "lr",
    "train_warmup": "warmup",
    "train_schedule": "schedule",
    "train_label_smoothing": "label_smoothing",
    "train_ema_decay": "ema_decay",
    "train_seed": "seed",
    "train_device": "device",
}


def start_run() -> None:
    """Start button: start the run the form describes, or join the identical one. A callback runs before the
    page is drawn, so the same run draws the live view on top."""
    state = st.session_state
    current: Run | None = state.get(JOB)
    if (elsewhere := session_run_elsewhere("train")) or (current is not None and not current.done):
        flash("train_form", "info", elsewhere or "A run is already training: stop it first, or wait for it.")
        return
    data, model, train = (
        {field: state[key] for key, field in f.items()} for f in (DATA_FIELDS, MODEL_FIELDS, TRAIN_FIELDS)
    )
    try:
        configs = build_configs(data, model, {**train, "time_budget_s": float(train["time_budget_s"])})
        job = run_registry().submit(watcher_id(), *configs, page_connected())
    except ServerBusy as err:
        flash("train_form", "warning", f"Your run could not start: {markdown_literal(str(err))}.")
    except ValueError as err:
        flash("train_form", "error", f"These settings don't work: {markdown_literal(str(err))}")
    else:
        state[JOB] = job
        state[FOLLOW_JOB] = True  # the run is the model in hand while it trains
        state["train_kept"] = {key: state[key] for key in (*DATA_FIELDS, *MODEL_FIELDS, *TRAIN_FIELDS)}
        # the run is in hand, and the Train form shows its settings, after a reload too
        remember_run(JOB, job, {FOLLOW_JOB: True, "train_kept": state["train_kept"]})
        job.wait_until_moving(FIRST_STEP_WAIT_S)  # the curve then starts in this redraw, not at the next poll


def leave_run() -> None:
    """Stop button: leave the run; it stops once nobody watches it (a run of one's own stops at once)."""
    current: Run | None = st.session_state.get(JOB)
    if current is None:
        return
    run_registry().leave(watcher_id(), current)
    if current.status == "queued" or current.watchers():  # out of the queue, or others still watch the run
        st.session_state.pop(JOB)
        forget_run(JOB)
        left = len(current.watchers())
        flash(
            "train_left",
            "info",
            f"You left the run; it goes on for the {left} other student{'s' * (left != 1)} watching it."
            if left
            else "You left the queue: your run will not start.",
        )
    else:
        current.wait_until_done(5.0)  # stopped, as it was the student's own: drawn as stopped


FIRST_STEP_WAIT_S = 0.5  # how long Start waits for a new run's first step (set-up takes about 0.1 s)
STEPS_PER_FRAME = 10  # the live loss curve moves in whole frames of this many steps, drawn once for all watchers


def run_id(job: Run) -> tuple[int, float]:
    """A key for a started job's shared drawings: its identity and start time (an id alone may be reused)."""
    return id(job), job.started_at


@st.cache_resource(max_entries=64, show_spinner=False)
def shared_examples(job_id: tuple, step: int, _job: Run):
    """Five held-out inputs decoded by the run's model at `step`, decoded once for every watcher of the run."""
    return live_examples(_job.model(), _job.data())


@st.cache_resource(max_entries=64, show_spinner=False)
def shared_charts(job_id: tuple, n_rows: int, n_steps: int, _job: Run):
    """The loss and accuracy figures of a run's first `n_rows` metric rows and `n_steps` steps, built once for every
    watcher of the run (a class watching one run polls it many times a second). Read-only."""
    rows, losses = _job.rows[:n_rows], _job.losses[:n_steps]
    floor = smoothed_loss_floor(_job.train_config.label_smoothing, _job.model_config.vocab_size)
    loss = loss_figure(rows, train_floor=floor, step_losses=losses, height=CHART_HEIGHT)
    return loss, accuracy_figure(rows, height=CHART_HEIGHT)


def run_controls(job: Run, shared: bool) -> None:
    """Pause or Resume, Step, and Stop: big buttons, no keyboard."""
    paused = job.status == "paused"
    pause_col, step_col, stop_col, _ = st.columns([1, 1, 1, 3])
    why_not = "Several students watch this run: only a run of your own can be paused." if shared else None
    if paused:
        pause_col.button(
            "Resume",
            key="resume_training",
            icon=":material/play_arrow:",
            type="primary",
            width="stretch",
            on_click=job.resume,
            help="Go on training from this step.",
        )
    else:
        pause_col.button(
            "Pause",
            key="pause_training",
            icon=":material/pause:",
            width="stretch",
            on_click=job.pause,
            disabled=shared or job.status == "queued",
            help=why_not or "Hold the run before its next step; the model in hand is the paused one.",
        )
    step_col.button(
        "Step",
        key="step_training",
        icon=":material/skip_next:",
        width="stretch",
        on_click=job.step_row,
        disabled=shared or not paused,
        help=why_not or "Train one metric row's worth of steps, then pause again.",
    )
    stop_col.button(
        "Leave queue" if job.status == "queued" else "Stop",
        key="stop_training",
        icon=":material/stop:",
        width="stretch",
        on_click=leave_run,
        help="Stops training after the current step; the model trained so far is kept. On a run "
        "several students watch, you leave it and it goes on for them.",
    )


poll_s = live_poll_s()


@st.fragment(run_every=poll_s if active else None)
def live_view(job: Run, polling: bool) -> None:
    """Status, controls, curves and a few decoded examples; reruns the whole page once the run ends, or when the
    server's load asks for another redraw rate."""
    if st.session_state.get(JOB) is not job or (polling and job.done):
        st.rerun()  # the student left the run, or it ended: redraw the whole page
    if polling and not 0.5 < live_poll_s() / poll_s < 2:
        st.rerun()  # many more (or fewer) pages watch runs now: poll at the rate that fits
    job.touch(watcher_id(), page_connected())
    st.caption(run_summary(job.model_config, job.data_config, job.train_config))
    classmates = len(job.watchers()) - 1
    if classmates > 0:
        st.caption(
            f"Same settings as {classmates} classmate{'s' * (classmates > 1)}: you are all watching one run. "
            "Same seed, same run."
        )
    if job.status != "done":
        run_controls(job, shared=classmates > 0)
    rows, losses = job.rows[:], job.losses[:]
    if job.status == "queued":
        place = run_registry().place(job)
        if place is not None:
            st.info(
                f"Every training slot is in use: your run is number {place.position} in the queue, and should "
                f"start in about {place.wait_s:.0f} s. It starts on its own; keep this page open.",
                icon=":material/hourglass_top:",
            )
        return
    if job.status == "preparing":
        st.progress(0.0, text="Preparing: building the model and drawing the held-out set...")
    elif job.status in ("training", "paused"):
        p = progress(rows, job.train_config)
        eta = "" if p.eta_s is None else f" · {p.steps_per_s:.1f} steps/s · at most {p.eta_s:.0f} s left"
        what = "Paused at" if job.status == "paused" else "Training:"
        st.progress(
            min(job.step / job.train_config.steps, 1.0), text=f"{what} step {job.step} of {job.train_config.steps}{eta}"
        )
    if not losses:  # preparing, or ended before its first step
        return
    loss_col, acc_col = st.columns(2)
    smoothing, vocab_size = job.train_config.label_smoothing, job.model_config.vocab_size
    floor = smoothed_loss_floor(smoothing, vocab_size)
    # whole frames while it trains; the first steps at once (the curve starts moving) and every step at the end
    steps = len(losses) if job.done or len(losses) < STEPS_PER_FRAME else len(losses) - len(losses) % STEPS_PER_FRAME
    loss_chart, accuracy_chart = shared_charts(run_id(job), len(rows), steps, job)
    loss_col.plotly_chart(loss_chart, key="train_loss_chart")
    acc_col.plotly_chart(accuracy_chart, key="train_accuracy_chart")
    if floor:
        loss_col.caption(
            f"With label smoothing {smoothing:g}, training aims at a target that is not all on the right "
            f"token, so even a perfect model's training loss is {floor:.2f} (dotted line). The held-out "
            "loss is plain cross-entropy and can go to 0."
        )
    if rows:
        step = int(rows[-1]["step"])
        st.markdown(f"**Five held-out inputs**, decoded greedily by the model as of step {step}:")
        st.dataframe(shared_examples(run_id(job), step, job), hide_index=True)


show_flashes("train_left")

if job is not None:
    live_view(job, polling=active)
    if job.losses:  # drawn with the page, not at every poll: the schedule itself never changes
        with st.expander("Learning rate over the run"):
            st.plotly_chart(lr_figure(job.train_config, job.step), key="train_lr_chart")
            st.caption(
                "The schedule, step by step over the whole step budget; the dashed line is where the run was when "
                "this page was drawn. Adam's steps are this rate times its own per-weight scaling."
            )
    if job.error:
        st.error(
            f"Training stopped with an error: {markdown_literal(job.error)}. Change the settings below and start again."
        )
    elif job.withdrawn:
        st.warning(f"Your run left the queue without starting: {job.withdrawn}. Press Start to queue again.")
    elif job.done and job.result is not None and job.result.steps == 0:
        st.info("Stopped before the first training step: nothing was trained or saved.")
    elif job.done and job.result is not None:
        save_finished_job()  # usually done already by the sidebar, unless the run ended during this rerun
        saved, result = st.session_state[TRAIN_SAVED], job.result
        scores = f"exact match {result.exact_match:.1%} and token accuracy {result.token_acc:.1%} on the held-out set"
        if result.reason == "stopped":
            st.info(
                f"Stopped at step {result.steps} after {result.seconds:.1f} s (by you, because a pause lasted too "
                f"long, or because {unwatched(run_registry().settings.idle_timeout_s)}): {scores}."
            )
        else:
            st.success(
                f"Finished after {result.steps} steps in {result.seconds:.1f} s, because "
                f"{REASONS[result.reason]}: {scores}."
            )
        if saved["error"]:
            st.error(f"The trained model could not be saved as a checkpoint: {markdown_literal(saved['error'])}")
        elif saved["in_hand"]:
            st.info(
                f"The model is now **in hand** as *trained: {markdown_literal(saved['name'])}*: open it up on the "
                "other pages."
            )
            for col, (path, label, icon) in zip(st.columns(3), NEXT_PAGES):
                col.page_link(path, label=label, icon=icon)
        else:
            st.info(
                f"Saved as *{markdown_literal(saved['name'])}* on the Checkpoints page. The model in hand is still the "
                "one you loaded during the run."
            )
        with st.expander("Metrics of every row, and downloads"):
            table = metrics_table(job.rows[:])
            st.dataframe(table, hide_index=True, column_config=METRIC_FORMATS)
            csv_col, ckpt_col = st.columns(2)
            csv_col.download_button(
                "Download metrics (CSV)",
                table.to_csv(index=False),
                f"{saved['name']}-metrics.csv",
                "text/csv",
                key="download_metrics",
            )
            if not saved["error"]:
                ckpt_col.download_button(
                    "Download checkpoint",
                    saved["data"],
                    f"{saved['name']}.pt",
                    "application/octet-stream",
                    key="download_checkpoint",
                )

if not active:
    if job is not None:
        st.subheader("Start another run")
    with st.form("train_settings"):
        task_col, min_col, max_col, symbols_col, seed_col = st.columns(5)
        task_col.selectbox(
            "Task",
            list(TASKS),
            **kept("train_task", "reverse", list(TASKS)),
            help="The function from input sequence to output sequence the model must learn:\n\n"
            + "\n".join(f"- **{name}**: {t.description}" for name, t in TASKS.items()),
        )
        min_col.number_input(
            "Shortest input",
            *LIMITS["min_len"],
            **kept("train_min_len", 6),
            help="Input lengths are drawn uniformly between the shortest and the longest.",
        )
        max_col.number_input(
            "Longest input",
            *LIMITS["max_len"],
            **kept("train_max_len", 8),
            help="Longer inputs are harder and slower to learn.",
        )
        symbols_col.number_input(
            "Symbols",
            *LIMITS["n_symbols"],
            **kept("train_symbols", 10),
            help="How many different symbols (0, 1, 2, ...) sequences use. The vocabulary is 3 tokens larger: PAD, "
            "BOS and EOS come on top.",
        )
        seed_col.number_input(
            "Seed",
            *LIMITS["seed"],
            **kept("train_seed", TRAIN.seed),
            help="Same seed, same settings: same data, same starting weights, same run.",
        )

        positional_col, norm_col, mask_col = st.columns([3, 3, 4])  # the parts of the design students switch off
        positional_col.radio(
            "Positional encoding",
            POSITIONALS,
            horizontal=True,
            **kept("train_positional", MODEL.positional, POSITIONALS),
            help="How the model knows token order: the paper's sine waves, a learned table, or nothing (try "
            "reverse without it).",
        )
        norm_col.radio(
            "LayerNorm",
            [False, True],
            horizontal=True,
            **kept("train_norm", MODEL.norm_first, [False, True]),
            format_func=lambda pre: "pre-norm" if pre else "post-norm (paper)",
            help="Post-norm: LayerNorm(x + Sublayer(x)); pre-norm: x + Sublayer(LayerNorm(x)).",
        )
        mask_col.toggle(
            "Causal mask",
            **kept("train_causal", MODEL.causal_mask),
            help="The decoder's look-ahead mask. Off lets the decoder peek at the answer during training: watch "
            "greedy decoding fail.",
        )
        mask_col.toggle(
            "Scale scores by 1/√d_k",
            **kept("train_scale", MODEL.scale_scores),
            help="Off drops the scaling of QKᵀ, so softmax saturates as d_k grows.",
        )

        with st.expander("Model, optimizer, budgets and device"):
            model_col, opt_col, run_col = st.columns(3)
            model_col.number_input(
                "d_model",
                *LIMITS["d_model"],
                **kept("train_d_model", MODEL.d_model),
                help="Width of every token vector (the paper: 512).",
            )
            model_col.number_input(
                "Heads",
                *LIMITS["n_heads"],
                **kept("train_heads", MODEL.n_heads),
                help="Attention heads per layer; d_model must be divisible by it (the paper: 8).",
            )
            model_col.number_input(
                "Layers per stack",
                *LIMITS["n_layers"],
                **kept("train_layers", MODEL.n_layers),
                help="Encoder layers, and as many decoder layers (the paper: 6).",
            )
            model_col.number_input(
                "d_ff",
                *LIMITS["d_ff"],
                **kept("train_d_ff", MODEL.d_ff),
                help="Hidden width of the position-wise feed-forward network (the paper: 2048).",
            )
            model_col.number_input(
                "Dropout",
                *LIMITS["dropout"],
                step=0.05,
                **kept("train_dropout", MODEL.dropout),
                help="Fraction of activations zeroed during training (the paper: 0.1).",
            )
            opt_col.number_input(
                "Peak learning rate",
                *LIMITS["lr"],
                step=1e-3,
                format="%.4f",
                **kept("train_lr", TRAIN.lr),
                help="The learning rate at the end of warm-up.",
            )
            opt_col.number_input(
                "Warm-up steps",
                *LIMITS["warmup"],
                **kept("train_warmup", TRAIN.warmup),
                help="Steps over which the learning rate grows linearly from 0 to its peak (the paper: 4000).",
            )
            opt_col.selectbox(
                "After warm-up",
                SCHEDULES,
                **kept("train_schedule", TRAIN.schedule, SCHEDULES),
                format_func={"noam": "decay as 1/√step (paper)", "constant": "stay at the peak"}.get,
                help="What the learning rate does once warm-up is over.",
            )
            opt_col.number_input(
                "Batch size",
                *LIMITS["batch_size"],
                **kept("train_batch", TRAIN.batch_size),
                help="Sequences per training step.",
            )
            opt_col.number_input(
                "Label smoothing",
                *LIMITS["label_smoothing"],
                step=0.05,
                **kept("train_label_smoothing", TRAIN.label_smoothing),
                help="The loss's target mixes in this much of a uniform distribution over the vocabulary instead "
                "of all on the right token (the paper: 0.1).",
            )
            opt_col.number_input(
                "Weight averaging (EMA decay)",
                *LIMITS["ema_decay"],
                step=0.01,
                format="%.3f",
                **kept("train_ema_decay", TRAIN.ema_decay),
                help="The model you get is a running average of the trained weights, which jitter from step to "
                "step at a high learning rate. 0 keeps the raw weights.",
            )
            run_col.number_input(
                "Steps (at most)",
                *LIMITS["steps"],
                **kept("train_steps", TRAIN.steps),
                help="Training ends here, or earlier once every held-out sequence is right.",
            )
            run_col.number_input(
                "Time budget (s)",
                *LIMITS["time_budget_s"],
                **kept("train_time_budget", 60),
                help="Training ends after this many seconds of training (pauses not counted) whatever happens.",
            )
            run_col.selectbox(
                "Device",
                DEVICES,
                **kept("train_device", "auto", DEVICES),
                help="Where to compute; auto takes a GPU when there is one.",
            )
        st.form_submit_button(
            "Start training",
            key="start_training",
            type="primary",
            icon=":material/play_arrow:",
            disabled=elsewhere is not None,
            help=elsewhere or "Trains with these settings.",
            on_click=start_run,
        )
    st.session_state["train_kept"] = {key: st.session_state[key] for key in form_keys}
    show_flashes("train_form")

if job is None:  # the empty axes the curves will fill: drawn now, the charts are ready the moment Start is pressed
    loss_col, acc_col = st.columns(2)
    loss_col.plotly_chart(loss_figure([], step_losses=[], height=CHART_HEIGHT), key="empty_loss_chart")
    acc_col.plotly_chart(accuracy_figure([], height=CHART_HEIGHT), key="empty_accuracy_chart")

with st.expander("How training works"):
    st.markdown(
        "Training follows section 5.3 of the paper: Adam with a learning rate that warms up linearly, then decays "
        "as 1/√step (we set the peak directly instead of deriving it from d_model and, unlike the paper, clip the "
        "gradient norm at 1). The held-out curves, the examples and the model you keep are a running average of "
        "the trained weights, which is steadier than the weights themselves (set *Weight averaging* to 0 to watch "
        "the raw ones); the training loss is the raw weights' own, at every step."
    )
    st.latex(
        r"\mathrm{lr}(s) = \mathrm{peak}\cdot\begin{cases}\min\left(\frac{s}{w},\ \sqrt{\frac{w}{s}}\right) & "
        r"\text{decay as } 1/\sqrt{s} \text{ (paper)}\\ \min\left(\frac{s}{w},\ 1\right) & \text{stay at the peak}"
        r"\end{cases}"
    )
    st.caption(
        "s is the training step and w the number of warm-up steps; with no warm-up the rate is the peak from step "
        "1. A paused run keeps its training slot and its time budget: only training time counts, and a pause "
        "longer than two minutes ends the run (its model is kept)."
    )
