"""Train: a fresh Transformer learns a toy task while its loss, accuracy and outputs stream in."""

import streamlit as st

from pages.common import (
    BUSY_MESSAGE,
    JOB_IDLE_TIMEOUT_S,
    remember_run,
    save_finished_job,
    session_run_elsewhere,
    training_slots,
)
from transformer.figures.training import accuracy_figure, loss_figure, lr_figure
from transformer.live import build_configs, live_examples, metrics_table, progress
from transformer.model import ModelConfig
from transformer.tasks import TASKS
from transformer.training import ServerBusy, TrainConfig, TrainingJob, smoothed_loss_floor

MODEL, TRAIN = ModelConfig(), TrainConfig()  # the defaults: the fast classroom model
DEVICES, SCHEDULES = ["auto", "cpu", "cuda", "mps"], ["noam", "constant"]
POSITIONALS = ["sinusoidal", "learned", "none"]
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
st.markdown(
    "Pick a toy task and a model, press **Start**, and watch a fresh encoder-decoder Transformer learn it: "
    "the loss falls, the held-out accuracy climbs, and five held-out inputs show what the model answers right now. "
    "Training follows section 5.3 of the paper: Adam with a learning rate that warms up linearly, then decays as "
    "1/√step (we set the peak directly instead of deriving it from d_model and, unlike the paper, clip the gradient "
    "norm at 1). The held-out curves, the examples and the model you keep are a running average of the trained "
    "weights, which is steadier than the weights themselves (set *Weight averaging* to 0 to watch the raw ones); "
    "the training loss is the raw weights' own."
)
st.latex(
    r"\mathrm{lr}(s) = \mathrm{peak}\cdot\begin{cases}\min\left(\frac{s}{w},\ \sqrt{\frac{w}{s}}\right) & "
    r"\text{decay as } 1/\sqrt{s} \text{ (paper)}\\ \min\left(\frac{s}{w},\ 1\right) & \text{stay at the peak}"
    r"\end{cases}"
)
st.caption(
    "s is the training step and w the number of warm-up steps; with no warm-up the rate is the peak from step 1."
)

job: TrainingJob | None = st.session_state.get("job")
running = job is not None and job.running
elsewhere = session_run_elsewhere("train")
form_keys: list[str] = []


def kept(key: str, default: object, options: list | None = None) -> dict:
    """A form widget's key and starting value (`value`, or `index` into `options`): the value it had when the
    student last left this page (Streamlit forgets widget values then), else `default`."""
    form_keys.append(key)
    value = st.session_state.get("train_kept", {}).get(key, default)
    return {"key": key, "value": value} if options is None else {"key": key, "index": options.index(value)}


with st.form("train_settings"):
    task_col, model_col, opt_col = st.columns(3)
    with task_col:
        st.markdown("**Task**")
        task = st.selectbox(
            "Task",
            list(TASKS),
            **kept("train_task", "reverse", list(TASKS)),
            help="The function from input sequence to output sequence the model must learn:\n\n"
            + "\n".join(f"- **{name}**: {t.description}" for name, t in TASKS.items()),
        )
        min_len = st.number_input(
            "Shortest input",
            1,
            24,
            **kept("train_min_len", 6),
            help="Input lengths are drawn uniformly between the shortest and the longest.",
        )
        max_len = st.number_input(
            "Longest input", 1, 24, **kept("train_max_len", 8), help="Longer inputs are harder and slower to learn."
        )
        n_symbols = st.number_input(
            "Symbols",
            2,
            30,
            **kept("train_symbols", 10),
            help="How many different symbols (0, 1, 2, ...) sequences use. The vocabulary is "
            "3 tokens larger: PAD, BOS and EOS come on top.",
        )
    with model_col:
        st.markdown("**Model**")
        d_model = st.number_input(
            "d_model",
            8,
            128,
            **kept("train_d_model", MODEL.d_model),
            help="Width of every token vector (the paper: 512).",
        )
        n_heads = st.number_input(
            "Heads",
            1,
            8,
            **kept("train_heads", MODEL.n_heads),
            help="Attention heads per layer; d_model must be divisible by it (the paper: 8).",
        )
        n_layers = st.number_input(
            "Layers per stack",
            1,
            3,
            **kept("train_layers", MODEL.n_layers),
            help="Encoder layers, and as many decoder layers (the paper: 6).",
        )
        d_ff = st.number_input(
            "d_ff",
            16,
            512,
            **kept("train_d_ff", MODEL.d_ff),
            help="Hidden width of the position-wise feed-forward network (the paper: 2048).",
        )
        dropout = st.number_input(
            "Dropout",
            0.0,
            0.5,
            step=0.05,
            **kept("train_dropout", MODEL.dropout),
            help="Fraction of activations zeroed during training (the paper: 0.1).",
        )
    with opt_col:
        st.markdown("**Optimization**")
        lr = st.number_input(
            "Peak learning rate",
            1e-4,
            0.05,
            step=1e-3,
            format="%.4f",
            **kept("train_lr", TRAIN.lr),
            help="The learning rate at the end of warm-up.",
        )
        warmup = st.number_input(
            "Warm-up steps",
            0,
            1000,
            **kept("train_warmup", TRAIN.warmup),
            help="Steps over which the learning rate grows linearly from 0 to its peak (the paper: 4000).",
        )
        schedule = st.selectbox(
            "After warm-up",
            SCHEDULES,
            **kept("train_schedule", TRAIN.schedule, SCHEDULES),
            format_func={"noam": "decay as 1/√step (paper)", "constant": "stay at the peak"}.get,
            help="What the learning rate does once warm-up is over.",
        )
        batch_size = st.number_input(
            "Batch size", 8, 256, **kept("train_batch", TRAIN.batch_size), help="Sequences per training step."
        )
        label_smoothing = st.number_input(
            "Label smoothing",
            0.0,
            0.5,
            step=0.05,
            **kept("train_label_smoothing", TRAIN.label_smoothing),
            help="The loss's target mixes in this much of a uniform distribution "
            "over the vocabulary instead of all on the right token (the paper: "
            "0.1).",
        )
        ema_decay = st.number_input(
            "Weight averaging (EMA decay)",
            0.0,
            0.999,
            step=0.01,
            format="%.3f",
            **kept("train_ema_decay", TRAIN.ema_decay),
            help="The model you get is a running average of the trained weights, which "
            "jitter from step to step at a high learning rate. 0 keeps the raw weights.",
        )

    st.markdown("**Teaching switches**")  # a row of their own: the parts of the design students switch off
    positional_col, norm_col, mask_col = st.columns([1, 1, 2])  # toggle labels do not wrap: the widest column
    positional = positional_col.radio(
        "Positional encoding",
        POSITIONALS,
        **kept("train_positional", MODEL.positional, POSITIONALS),
        help="How the model knows token order: the paper's sine waves, a learned "
        "table, or nothing (try reverse without it).",
    )
    norm_first = norm_col.radio(
        "LayerNorm",
        [False, True],
        **kept("train_norm", MODEL.norm_first, [False, True]),
        format_func=lambda pre: "pre-norm" if pre else "post-norm (paper)",
        help="Post-norm: LayerNorm(x + Sublayer(x)); pre-norm: x + Sublayer(LayerNorm(x)).",
    )
    causal_mask = mask_col.toggle(
        "Causal mask",
        **kept("train_causal", MODEL.causal_mask),
        help="The decoder's look-ahead mask. Off lets the decoder peek at the answer during "
        "training: watch greedy decoding fail.",
    )
    scale_scores = mask_col.toggle(
        "Scale scores by 1/√d_k",
        **kept("train_scale", MODEL.scale_scores),
        help="Off drops the scaling of QKᵀ, so softmax saturates as d_k grows.",
    )

    st.markdown("**Run**")
    steps_col, budget_col, seed_col, device_col = st.columns(4)
    steps = steps_col.number_input(
        "Steps (at most)",
        10,
        5000,
        **kept("train_steps", TRAIN.steps),
        help="Training ends here, or earlier once every held-out sequence is right.",
    )
    time_budget_s = budget_col.number_input(
        "Time budget (s)",
        5,
        120,
        **kept("train_time_budget", 60),
        help="Training ends after this many seconds whatever happens.",
    )
    seed = seed_col.number_input(
        "Seed",
        0,
        10_000,
        **kept("train_seed", TRAIN.seed),
        help="Same seed, same settings: same data and same starting weights.",
    )
    device = device_col.selectbox(
        "Device",
        DEVICES,
        **kept("train_device", "auto", DEVICES),
        help="Where to compute; auto takes a GPU when there is one.",
    )
    start = st.form_submit_button(
        "Start training",
        key="start_training",
        type="primary",
        disabled=running or elsewhere is not None,
        help=elsewhere or "Trains with these settings. Disabled while a run is training.",
    )

st.session_state["train_kept"] = {key: st.session_state[key] for key in form_keys}

if start:
    if running or elsewhere:
        st.info(elsewhere or "A run is already training: stop it first, or wait for it to finish.")
    else:
        try:
            model_config, data_config, train_config = build_configs(
                data=dict(task=task, min_len=min_len, max_len=max_len, n_symbols=n_symbols, seed=seed),
                model=dict(
                    d_model=d_model,
                    n_heads=n_heads,
                    n_layers=n_layers,
                    d_ff=d_ff,
                    dropout=dropout,
                    positional=positional,
                    norm_first=norm_first,
                    causal_mask=causal_mask,
                    scale_scores=scale_scores,
                ),
                train=dict(
                    steps=steps,
                    time_budget_s=float(time_budget_s),
                    batch_size=batch_size,
                    lr=lr,
                    warmup=warmup,
                    schedule=schedule,
                    label_smoothing=label_smoothing,
                    ema_decay=ema_decay,
                    seed=seed,
                    device=device,
                ),
            )
            job = TrainingJob(
                model_config, data_config, train_config, slots=training_slots(), idle_timeout_s=JOB_IDLE_TIMEOUT_S
            ).start()
        except ServerBusy:
            st.warning(BUSY_MESSAGE)
        except ValueError as err:
            st.error(f"These settings don't work: {err}")
        else:
            st.session_state["job"] = job
            st.session_state["follow_job"] = True  # the run is the model in hand while it trains
            # the run is in hand, and the Train form shows its settings, after a reload too
            remember_run("job", job, {"follow_job": True, "train_kept": st.session_state["train_kept"]})
            st.rerun()  # redraw with Start disabled and the live view polling


def stop_job() -> None:
    if (current := st.session_state.get("job")) is not None:
        current.stop(wait_s=5.0)


st.button(
    "Stop",
    key="stop_training",
    disabled=not running,
    on_click=stop_job,
    help="Stops training after the current step; the model trained so far is kept.",
)


@st.fragment(run_every=1.0 if running else None)
def live_view(job: TrainingJob, polling: bool) -> None:
    """Progress, curves and a few decoded examples; reruns the whole page once the run ends."""
    job.touch()
    if polling and not job.running:
        st.rerun()
    rows = job.rows()
    p = progress(rows, job.train_config)
    if job.running:
        eta = "" if p.eta_s is None else f" · {p.steps_per_s:.1f} steps/s · at most {p.eta_s:.0f} s left"
        st.progress(p.fraction, text=f"Training: step {p.step} of {job.train_config.steps}{eta}")
    if not rows:
        if job.running:
            st.caption("The first metric row comes after a few steps...")
        return
    loss_col, acc_col = st.columns(2)
    smoothing, vocab_size = job.train_config.label_smoothing, len(job.trainer.vocab)
    floor = smoothed_loss_floor(smoothing, vocab_size)
    loss_col.plotly_chart(loss_figure(rows, train_floor=floor), key="train_loss_chart")
    if floor:
        loss_col.caption(
            f"With label smoothing {smoothing:g}, training aims at a target that is not all on the right "
            f"token, so even a perfect model's training loss is {floor:.2f} (dotted line). The held-out "
            "loss is plain cross-entropy and can go to 0."
        )
    acc_col.plotly_chart(accuracy_figure(rows), key="train_accuracy_chart")
    with st.expander("Learning rate over the run"):
        st.plotly_chart(lr_figure(job.train_config, p.step), key="train_lr_chart")
        st.caption(
            "The schedule above, step by step over the whole step budget; the dashed line is where the run "
            "is. Adam's steps are this rate times its own per-weight scaling."
        )
    model = job.model_snapshot()
    if model is not None:
        st.markdown(f"**Five held-out inputs**, decoded greedily by the model as of step {p.step}:")
        st.dataframe(live_examples(model, job.trainer.data), hide_index=True)


if job is not None:
    live_view(job, polling=running)
    if job.error:
        st.error(f"Training stopped with an error: {job.error}. Change the settings above and start again.")
    elif job.done and job.result is not None and job.result.steps == 0:
        st.info("Stopped before the first training step: nothing was trained or saved.")
    elif job.done and job.result is not None:
        save_finished_job()  # usually done already by the sidebar, unless the run ended during this rerun
        saved, result = st.session_state["train_saved"], job.result
        scores = f"exact match {result.exact_match:.1%} and token accuracy {result.token_acc:.1%} on the held-out set"
        if result.reason == "stopped":
            st.info(
                f"Stopped at step {result.steps} after {result.seconds:.1f} s (by you, or because no page watched "
                f"the run for {JOB_IDLE_TIMEOUT_S:.0f} s): {scores}."
            )
        else:
            st.success(
                f"Finished after {result.steps} steps in {result.seconds:.1f} s, because "
                f"{REASONS[result.reason]}: {scores}."
            )
        table = metrics_table(job.rows())
        st.dataframe(table, hide_index=True, column_config=METRIC_FORMATS)
        csv_col, ckpt_col = st.columns(2)
        csv_col.download_button(
            "Download metrics (CSV)",
            table.to_csv(index=False),
            f"{saved['name']}-metrics.csv",
            "text/csv",
            key="download_metrics",
        )
        if saved["error"]:
            st.error(f"The trained model could not be saved as a checkpoint: {saved['error']}")
        else:
            ckpt_col.download_button(
                "Download checkpoint",
                saved["data"],
                f"{saved['name']}.pt",
                "application/octet-stream",
                key="download_checkpoint",
            )
            if saved["in_hand"]:
                st.info(f"The model is now **in hand** as *trained: {saved['name']}*: open it up on the other pages.")
                for col, (path, label, icon) in zip(st.columns(3), NEXT_PAGES):
                    col.page_link(path, label=label, icon=icon)
            else:
                st.info(
                    f"Saved as *{saved['name']}* on the Checkpoints page. The model in hand is still the one you "
                    "loaded during the run."
                )
