"""The Train page's settings form, drawn from one table: each field once, with its widget key, the config field it
sets, its label, widget, default and place; its bounds come from `TRAIN_FORM_LIMITS` and its help text from `HELP`,
both by name.

The same table turns the submitted widget values into the three configs of a run (`config_values`).
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from transformer.limits import TRAIN_FORM_LIMITS as LIMITS
from transformer.live import DEFAULT_DATA, DEFAULT_TIME_BUDGET_S
from transformer.model import ModelConfig
from transformer.tasks import TASKS
from transformer.training import TrainConfig

MODEL, TRAIN = ModelConfig(), TrainConfig()  # the defaults: the fast classroom model
KEPT = "train_kept"  # session state: the form's values when the student last left the page or pressed Start
ROWS = [  # (expander title or None, column widths): where the form puts its fields, top to bottom
    (None, 5),
    (None, [3, 3, 4]),  # the parts of the design students switch off
    ("Model, optimizer, budgets and device", 3),
]


@dataclass(frozen=True)
class Field:
    """One widget of the form and the config field it sets."""

    key: str  # the widget's key (tests and the browser tests address it: `.st-key-train_seed`)
    configs: tuple[str, ...]  # which configs it sets: "data", "model", "train" (the seed sets two)
    name: str  # the config field; number inputs take their bounds from TRAIN_FORM_LIMITS[name]
    label: str
    widget: str  # "number", "select", "radio" (horizontal) or "toggle"
    default: Any
    place: tuple[int, int]  # (row of ROWS, column in it)
    options: tuple = ()  # the choices of a select or radio
    style: Mapping[str, Any] = field(default_factory=dict)  # more keyword arguments: step, format, format_func
    cast: Callable[[Any], Any] | None = None  # turns the widget's value into the config's

    @property
    def help(self) -> str:
        return HELP[self.key]


FIELDS = [  # key, configs, config field, label, widget, default, (row, column), options, style: in drawing order
    Field("train_task", ("data",), "task", "Task", "select", DEFAULT_DATA.task, (0, 0), tuple(TASKS)),
    Field("train_min_len", ("data",), "min_len", "Shortest input", "number", DEFAULT_DATA.min_len, (0, 1)),
    Field("train_max_len", ("data",), "max_len", "Longest input", "number", DEFAULT_DATA.max_len, (0, 2)),
    Field("train_symbols", ("data",), "n_symbols", "Symbols", "number", DEFAULT_DATA.n_symbols, (0, 3)),
    Field("train_seed", ("data", "train"), "seed", "Seed", "number", TRAIN.seed, (0, 4)),
    Field("train_positional", ("model",), "positional", "Positional encoding", "radio", MODEL.positional, (1, 0),
          ("sinusoidal", "learned", "none")),
    Field("train_norm", ("model",), "norm_first", "LayerNorm", "radio", MODEL.norm_first, (1, 1), (False, True),
          {"format_func": lambda pre: "pre-norm" if pre else "post-norm (paper)"}),
    Field("train_causal", ("model",), "causal_mask", "Causal mask", "toggle", MODEL.causal_mask, (1, 2)),
    Field("train_scale", ("model",), "scale_scores", "Scale scores by 1/√d_k", "toggle", MODEL.scale_scores, (1, 2)),
    Field("train_d_model", ("model",), "d_model", "d_model", "number", MODEL.d_model, (2, 0)),
    Field("train_heads", ("model",), "n_heads", "Heads", "number", MODEL.n_heads, (2, 0)),
    Field("train_layers", ("model",), "n_layers", "Layers per stack", "number", MODEL.n_layers, (2, 0)),
    Field("train_d_ff", ("model",), "d_ff", "d_ff", "number", MODEL.d_ff, (2, 0)),
    Field("train_dropout", ("model",), "dropout", "Dropout", "number", MODEL.dropout, (2, 0), style={"step": 0.05}),
    Field("train_lr", ("train",), "lr", "Peak learning rate", "number", None, (2, 1),
          style={"step": 1e-3, "format": "%.4f", "placeholder": "auto: for the model's size"}),
    Field("train_warmup", ("train",), "warmup", "Warm-up steps", "number", TRAIN.warmup, (2, 1)),
    Field("train_schedule", ("train",), "schedule", "After warm-up", "select", TRAIN.schedule, (2, 1),
          ("noam", "constant"),
          {"format_func": {"noam": "decay as 1/√step (paper)", "constant": "stay at the peak"}.get}),
    Field("train_batch", ("train",), "batch_size", "Batch size", "number", TRAIN.batch_size, (2, 1)),
    Field("train_label_smoothing", ("train",), "label_smoothing", "Label smoothing", "number", TRAIN.label_smoothing,
          (2, 1), style={"step": 0.05}),
    Field("train_ema_decay", ("train",), "ema_decay", "Weight averaging (EMA decay)", "number", TRAIN.ema_decay, (2, 1),
          style={"step": 0.01, "format": "%.3f"}),
    Field("train_steps", ("train",), "steps", "Steps (at most)", "number", TRAIN.steps, (2, 2)),
    Field("train_time_budget", ("train",), "time_budget_s", "Time budget (s)", "number", DEFAULT_TIME_BUDGET_S, (2, 2),
          cast=float),
    Field("train_device", ("train",), "device", "Device", "select", "auto", (2, 2), ("auto", "cpu", "cuda", "mps")),
]  # fmt: skip
FORM_KEYS = [f.key for f in FIELDS]

TASK_HELP = "The function from input sequence to output sequence the model must learn:\n\n" + "\n".join(
    f"- **{name}**: {t.description}" for name, t in TASKS.items()
)
HELP = {  # each field's help text, by widget key
    "train_task": TASK_HELP,
    "train_min_len": "Input lengths are drawn uniformly between the shortest and the longest.",
    "train_max_len": "Longer inputs are harder and slower to learn.",
    "train_symbols": (
        "How many different symbols (0, 1, 2, ...) sequences use. The vocabulary is 3 tokens larger: PAD, "
        "BOS and EOS come on top."
    ),
    "train_seed": "Same seed, same settings: same data, same starting weights, same run.",
    "train_positional": (
        "How the model knows token order: the paper's sine waves, a learned table, or nothing (try reverse without it)."
    ),
    "train_norm": "Post-norm: LayerNorm(x + Sublayer(x)); pre-norm: x + Sublayer(LayerNorm(x)).",
    "train_causal": (
        "The decoder's look-ahead mask. Off lets the decoder peek at the answer during training: watch "
        "greedy decoding fail."
    ),
    "train_scale": "Off drops the scaling of QKᵀ, so softmax saturates as d_k grows.",
    "train_d_model": "Width of every token vector (the paper: 512).",
    "train_heads": "Attention heads per layer; d_model must be divisible by it (the paper: 8).",
    "train_layers": "Encoder layers, and as many decoder layers (the paper: 6).",
    "train_d_ff": "Hidden width of the position-wise feed-forward network (the paper: 2048).",
    "train_dropout": "Fraction of activations zeroed during training (the paper: 0.1).",
    "train_lr": (
        f"The learning rate at the end of warm-up. Empty: picked for the model's size, {TRAIN.lr:g} for the default "
        f"model and {TRAIN.lr:g} × 32 / (d_model × layers) for bigger ones (0.0025 at d_model 128 with 3 layers), "
        "since wide, deep models learn nothing at high rates. The run's summary shows the rate it used."
    ),
    "train_warmup": "Steps over which the learning rate grows linearly from 0 to its peak (the paper: 4000).",
    "train_schedule": "What the learning rate does once warm-up is over.",
    "train_batch": "Sequences per training step.",
    "train_label_smoothing": (
        "The loss's target mixes in this much of a uniform distribution over the vocabulary "
        "instead of all on the right token (the paper: 0.1)."
    ),
    "train_ema_decay": (
        "The model you get is a running average of the trained weights, which jitter from step to step "
        "at a high learning rate. 0 keeps the raw weights."
    ),
    "train_steps": "Training ends here, or earlier once every held-out sequence is right.",
    "train_time_budget": "Training ends after this many seconds of training (pauses not counted) whatever happens.",
    "train_device": "Where to compute; auto takes a GPU when there is one.",
}


def config_values(values: Mapping[str, Any]) -> tuple[dict, dict, dict]:
    """The data, model and training config fields the form's widget `values` (by key) set, for `build_configs`."""
    configs: dict[str, dict] = {"data": {}, "model": {}, "train": {}}
    for f in FIELDS:
        for config in f.configs:
            configs[config][f.name] = values[f.key] if f.cast is None else f.cast(values[f.key])
    return configs["data"], configs["model"], configs["train"]


def draw_fields(locked: Mapping[str, Any] | None = None) -> None:
    """Every field of the form, in its row and column, each starting from the value it had when the student last
    left the page (Streamlit forgets widget values then), else its default. A field whose config field is in
    `locked` (a class's settings) shows that value and cannot be changed. Call inside `st.form`."""
    kept, locked = st.session_state.get(KEPT, {}), locked or {}
    columns = []
    for title, spec in ROWS:
        if title is None:
            columns.append(st.columns(spec))
        else:
            with st.expander(title):
                columns.append(st.columns(spec))
    for f in FIELDS:
        row, column = f.place
        if f.name in locked:
            _draw_locked(columns[row][column], f, locked[f.name])
        else:
            _draw(columns[row][column], f, kept.get(f.key, f.default))


def remember_values() -> None:
    """Keep the form's values for the student's next visit to the page."""
    st.session_state[KEPT] = {key: st.session_state[key] for key in FORM_KEYS}


def _draw_locked(container, f: Field, value: Any) -> None:
    """A field set by the teacher: its value, greyed out (set through its key, which a disabled widget keeps)."""
    st.session_state[f.key] = value
    _draw(container, f, FROM_STATE, disabled=True)


FROM_STATE = object()  # `_draw`'s value for a widget that reads it from session state


def _draw(container, f: Field, value: Any, disabled: bool = False) -> None:
    """The field's widget, starting at `value` (FROM_STATE: at what its key holds in session state; None, for a
    number, empty)."""
    common = {"key": f.key, "help": f.help, "disabled": disabled, **f.style}
    if value is FROM_STATE:  # passing a value too would be an error
        start = {}
    elif f.widget in ("select", "radio"):
        start = {"index": f.options.index(value)}
    else:
        start = {"value": value}
    if f.widget == "number":
        container.number_input(f.label, *LIMITS[f.name], **start, **common)
    elif f.widget == "select":
        container.selectbox(f.label, list(f.options), **start, **common)
    elif f.widget == "radio":
        container.radio(f.label, list(f.options), horizontal=True, **start, **common)
    else:
        container.toggle(f.label, **start, **common)
