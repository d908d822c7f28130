"""Experiments: runs that differ in one switch, from the same seed and data, and how their attention forms.

An `Experiment` is a base configuration and one switch (positional encoding, pre/post-norm, causal mask, ...)
with the values to try; each value is one variant. `run_experiment` trains the variants one after the other,
`ExperimentJob` does the same in the background for a page to poll. Both record, on a fixed probe input (the
first held-out example), the cross-attention of every head over training and its `alignment_score`: how much
of its attention lands where the task says it should (the diagonal for copy, the anti-diagonal for reverse).

Also here: the page's settings as URL query parameters (`to_query_params`, `from_query_params`), and a whole
experiment run as one JSON file (`experiment_to_json`, `experiment_from_json`).

`python -m transformer.experiments [key ...]` reruns the ready-made experiments and writes the result sets the
Compare page ships with to checkpoints/experiments/<key>.json.
"""

import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from .model import ModelConfig
from .tasks import TASKS, DataConfig
from .training import METRIC_COLUMNS, MetricRow, TrainConfig, Trainer, TrainingJob
from .vocab import N_SPECIAL

RESULTS_DIR = Path(__file__).resolve().parent.parent / "checkpoints" / "experiments"
FORMAT, FORMAT_VERSION = "transformer-lab-experiment", 1
MAX_JSON_BYTES = 5 * 2**20  # the upload limit of the app
MAX_VARIANTS = 4
SwitchValue = str | bool | int | float

# ------------------------------------------------------------------------------------------------- switches


@dataclass(frozen=True)
class Switch:
    """One setting an experiment varies: a ModelConfig or TrainConfig field, and the values it may take."""

    field: str
    part: str  # "model" or "train": which config the field belongs to
    title: str
    names: Mapping[SwitchValue, str]  # each value it may take -> how a variant with it is named

    @property
    def choices(self) -> tuple[SwitchValue, ...]:
        return tuple(self.names)

    def label(self, value: SwitchValue) -> str:
        """How a variant with this value is named in legends and tables."""
        return self.names[value]

    def token(self, value: SwitchValue) -> str:
        """The value as written in a URL: on/off for booleans."""
        return ("on" if value else "off") if isinstance(value, bool) else str(value)

    def parse(self, text: str) -> SwitchValue:
        """The choice written as `text` in a URL; ValueError when there is none."""
        for value in self.choices:
            if self.token(value) == text.strip().lower():
                return value
        raise ValueError(f"{self.title} takes {', '.join(map(self.token, self.choices))}")


SWITCHES: dict[str, Switch] = {
    s.field: s
    for s in [
        Switch(
            "positional",
            "model",
            "positional encoding",
            {"sinusoidal": "sinusoidal PE", "learned": "learned PE", "none": "no PE"},
        ),
        Switch("norm_first", "model", "LayerNorm placement", {False: "post-norm", True: "pre-norm"}),
        Switch("causal_mask", "model", "causal mask", {True: "causal mask", False: "no causal mask"}),
        Switch("scale_scores", "model", "score scaling", {True: "scaled by 1/√d_k", False: "unscaled"}),
        Switch(
            "label_smoothing",
            "train",
            "label smoothing",
            {0.0: "no smoothing", 0.1: "smoothing 0.1", 0.2: "smoothing 0.2"},
        ),
        Switch(
            "warmup", "train", "warm-up", {0: "no warm-up", 50: "warm-up 50", 100: "warm-up 100", 400: "warm-up 400"}
        ),
        Switch("n_heads", "model", "heads", {1: "1 head", 2: "2 heads", 4: "4 heads", 8: "8 heads"}),
        Switch("n_layers", "model", "layers", {1: "1 layer", 2: "2 layers", 3: "3 layers"}),
        Switch("ema_decay", "train", "weight averaging", {0.0: "raw weights", 0.99: "averaged weights (EMA 0.99)"}),
    ]
}

# ---------------------------------------------------------------------------------------------- experiments


@dataclass(frozen=True)
class Experiment:
    """Base configs and one switch with the values to compare; every variant shares the seed and the data."""

    key: str  # a ready-made experiment's name in READY (and file name), or "custom"
    title: str
    expectation: str  # one sentence: what to expect, to check against what happens
    switch: str  # a key of SWITCHES
    values: tuple[SwitchValue, ...]
    model: ModelConfig
    data: DataConfig
    train: TrainConfig

    @property
    def variants(self) -> dict[str, SwitchValue]:
        """Variant label -> value of the switch."""
        return {SWITCHES[self.switch].label(v): v for v in self.values}

    def summary(self) -> str:
        """The shared settings in one line."""
        m, d, t = self.model, self.data, self.train
        lengths = str(d.max_len) if d.min_len == d.max_len else f"{d.min_len}-{d.max_len}"
        stopping = ", stopping early once solved" if t.early_stop else ""
        heads = "heads set per variant" if self.switch == "n_heads" else f"{m.n_heads} heads"
        layers = "layers set per variant" if self.switch == "n_layers" else f"{m.n_layers} layer(s) per stack"
        return (
            f"Task {d.task}, inputs of length {lengths} · d_model {m.d_model}, {heads}, {layers} · {t.steps} steps "
            f"per variant{stopping} (a live rerun stops a variant after {t.time_budget_s:.0f} s) · seed {t.seed} "
            "for every variant."
        )

    def configs(self, value: SwitchValue) -> tuple[ModelConfig, DataConfig, TrainConfig]:
        """The configs of the variant with this switch value."""
        switch = SWITCHES[self.switch]
        if switch.part == "model":
            return replace(self.model, **{switch.field: value}), self.data, self.train
        return self.model, self.data, replace(self.train, **{switch.field: value})


# Reverse of inputs of length 10, the classroom model; fixed steps (no early stopping) so curves compare, and raw
# weights, since averaging them would smooth away some of what a switch does.
BASE_MODEL = ModelConfig()
BASE_DATA = DataConfig(task="reverse", min_len=10, max_len=10)
BASE_TRAIN = TrainConfig(
    steps=600, time_budget_s=120.0, early_stop=False, record_attention=True, eval_every=25, ema_decay=0.0
)
CUSTOM = "custom"


def _ready(
    key: str,
    title: str,
    expectation: str,
    switch: str,
    values: tuple,
    steps: int = 600,
    data: DataConfig = BASE_DATA,
    lr: float = BASE_TRAIN.lr,
    **model: Any,
) -> Experiment:
    return Experiment(
        key,
        title,
        expectation,
        switch,
        values,
        replace(BASE_MODEL, **model),
        data,
        replace(BASE_TRAIN, steps=steps, lr=lr),
    )


READY: dict[str, Experiment] = {
    e.key: e
    for e in [
        _ready(
            "no-positional-encoding",
            "Reverse without positional encoding",
            "Without positional encoding the encoder cannot tell source positions apart, so the model never learns to "
            "reverse: exact-match stays at 0% while the loss stalls above 1.",
            "positional",
            ("sinusoidal", "none"),
        ),
        _ready(
            "no-causal-mask",
            "Train without the causal mask",
            "Without the causal mask the decoder reads the answer off its own input while training: the loss falls "
            "to near zero and teacher-forced accuracy to 100%, but greedy decoding, which has no future to peek at, "
            "gets far fewer sequences right.",
            "causal_mask",
            (True, False),
        ),
        _ready(
            "post-vs-pre-norm",
            "Post-norm vs pre-norm",
            "At one layer both placements of LayerNorm learn reverse at about the same pace: the stability that made "
            "later models switch from the paper's post-norm to pre-norm matters for deep stacks, not for this one.",
            "norm_first",
            (False, True),
        ),
        _ready(
            "score-scaling-large-dk",
            "Score scaling at large d_k",
            "With one head of d_k = 64, unscaled dot products are about 8 times larger and the softmax saturates, so "
            "its gradients are tiny: the unscaled model starts slower and hovers short of 100% for longer, while its "
            "head ends up pointing at a single source token.",
            "scale_scores",
            (True, False),
            d_model=64,
            n_heads=1,
            d_ff=128,
        ),
        _ready(
            "label-smoothing",
            "Label smoothing",
            "Label smoothing (the paper uses 0.1) puts a floor under the training loss (about 0.5 here), yet the "
            "model solves the task just as fast.",
            "label_smoothing",
            (0.0, 0.1),
            steps=300,
        ),
        _ready(
            "warm-up",
            "Warm-up",
            "Without warm-up the full learning rate hits the random model at step one (and, with nothing to decay "
            "from, stays there): on this small clipped model it learns faster at first, then hovers just short of "
            "100% while the warmed-up run settles at 100%.",
            "warmup",
            (100, 0),
            steps=300,
        ),
        _ready(
            "heads",
            "One head or four",
            "Reverse needs one alignment, which one head learns as fast as four: watch its single head sharpen on "
            "the anti-diagonal while four heads each hold a blurrier share.",
            "n_heads",
            (1, 4),
            steps=300,
        ),
        _ready(
            "layers",
            "One layer or two",
            "A second layer per stack doubles the cost of every step and, on a task this small, buys nothing: it "
            "solves reverse later, in more than twice the time.",
            "n_layers",
            (1, 2),
            steps=300,
        ),
        _ready(
            "weight-averaging",
            "Raw or averaged weights",
            "Both variants train the very same weights (their training-loss curves coincide); only what is scored "
            "differs. On reverse at lengths 1-16 and a high learning rate the raw weights jitter from step to step, "
            "so their exact-match stalls around 90% and hovers there, while their running average climbs smoothly "
            "and holds 100% from about step 450.",
            "ema_decay",
            (0.0, 0.99),
            steps=800,
            data=replace(BASE_DATA, min_len=1, max_len=16),
            lr=0.01,
            n_layers=2,
            n_heads=2,
        ),
    ]
}

# ------------------------------------------------------------------------------------- page state and URL


@dataclass(frozen=True)
class CompareState:
    """The Compare page's settings: a ready-made experiment, or a custom one built from the other fields."""

    experiment: str = next(iter(READY))
    task: str = "reverse"
    length: int = 10  # every input has this many symbols
    d_model: int = 32
    n_heads: int = 4
    n_layers: int = 1
    steps: int = 600
    seed: int = 0
    switch: str = "positional"
    values: tuple[SwitchValue, ...] = ("sinusoidal", "none")


INT_RANGES = {"length": (2, 16), "n_layers": (1, 3), "steps": (50, 2000), "seed": (0, 9999)}
SIZE_CHOICES = {"d_model": (16, 32, 64, 128), "n_heads": (1, 2, 4, 8)}


def custom_experiment(state: CompareState) -> Experiment:
    """The experiment the custom settings of `state` describe (d_ff = 4 d_model, the paper's ratio)."""
    if len(state.values) < 2:
        raise ValueError("pick at least two values to compare")
    switch = SWITCHES[state.switch]
    model = replace(
        BASE_MODEL, d_model=state.d_model, n_heads=state.n_heads, n_layers=state.n_layers, d_ff=4 * state.d_model
    )
    data = replace(BASE_DATA, task=state.task, min_len=state.length, max_len=state.length, seed=state.seed)
    train = replace(BASE_TRAIN, steps=state.steps, seed=state.seed)
    title, expectation = _custom_text(switch, state.values, state.task)
    return Experiment(CUSTOM, title, expectation, state.switch, tuple(state.values), model, data, train)


def _custom_text(switch: Switch, values: Sequence[SwitchValue], task: str) -> tuple[str, str]:
    """Title and expectation of a custom experiment."""
    return (
        f"{switch.title}: {' vs '.join(map(switch.label, values))} on {task}",
        "Your own experiment: write down what you expect before you run it.",
    )


def experiment_for(state: CompareState) -> Experiment:
    """The ready-made experiment `state` names, or its custom one."""
    return READY[state.experiment] if state.experiment in READY else custom_experiment(state)


def state_for(experiment: Experiment) -> CompareState:
    """Page settings that select `experiment`; a custom one's settings as far as the page offers them."""
    if experiment.key != CUSTOM:
        return CompareState(experiment=experiment.key)
    m, d, switch = experiment.model, experiment.data, SWITCHES[experiment.switch]
    params = {
        "experiment": CUSTOM,
        "task": d.task,
        "length": d.max_len,
        "d_model": m.d_model,
        "n_heads": m.n_heads,
        "n_layers": m.n_layers,
        "steps": experiment.train.steps,
        "seed": experiment.train.seed,
        "switch": switch.field,
        "values": ",".join(map(switch.token, experiment.values)),
    }
    return from_query_params(params)[0]


def to_query_params(state: CompareState) -> dict[str, str]:
    """The settings that differ from the defaults, as URL query parameters (the experiment always)."""
    default, params = CompareState(), {"experiment": state.experiment}
    for f in fields(CompareState):
        value = getattr(state, f.name)
        if f.name != "experiment" and value != getattr(default, f.name):
            params[f.name] = ",".join(map(SWITCHES[state.switch].token, value)) if f.name == "values" else str(value)
    return params


def from_query_params(params: Mapping[str, Any]) -> tuple[CompareState, list[str]]:
    """Settings from URL query parameters, each checked; a bad value falls back to its default, with a notice.

    Never raises: unknown parameters are ignored, and notices never repeat the (possibly hostile) value.
    """
    default, notices, state = CompareState(), [], {}

    def text(name: str) -> str | None:
        value = params.get(name)
        if isinstance(value, (list, tuple)):  # a repeated parameter: the last one counts, as in st.query_params
            value = value[-1] if value else None
        return None if value is None else str(value)[:200]

    def fall_back(name: str, why: str) -> None:
        notices.append(f"The link's `{name}` {why}, so the default ({getattr(default, name)}) is used.")

    for name, allowed in [("experiment", [*READY, CUSTOM]), ("task", list(TASKS)), ("switch", list(SWITCHES))]:
        if (value := text(name)) is not None:
            if value.strip() in allowed:
                state[name] = value.strip()
            else:
                fall_back(name, f"is not one of {', '.join(allowed)}")
    for name, (low, high) in INT_RANGES.items():
        if (value := text(name)) is not None:
            try:
                number = int(value.strip()) if len(value) < 12 else None
            except ValueError:
                number = None
            if number is None:
                fall_back(name, "is not a whole number")
            elif not low <= number <= high:
                state[name] = min(max(number, low), high)
                notices.append(f"The link's `{name}` is outside {low}..{high}, so {state[name]} is used.")
            else:
                state[name] = number
    for name, allowed in SIZE_CHOICES.items():
        if (value := text(name)) is not None:
            if value.strip() in map(str, allowed):
                state[name] = int(value)
            else:
                fall_back(name, f"is not one of {', '.join(map(str, allowed))}")
    switch = SWITCHES[state.get("switch", default.switch)]
    fallback = default.values if switch.field == default.switch else switch.choices[:2]
    if (value := text("values")) is not None:
        try:
            values = tuple(dict.fromkeys(switch.parse(v) for v in value.split(",")))
        except ValueError:
            values = ()
        if 2 <= len(values) <= MAX_VARIANTS:
            state["values"] = values
        else:
            notices.append(
                f"The link's `values` are not 2-{MAX_VARIANTS} different choices of {switch.title} "
                f"({', '.join(map(switch.token, switch.choices))}), so "
                f"{' vs '.join(map(switch.label, fallback))} is used."
            )
    state.setdefault("values", fallback)
    return CompareState(**state), notices


# ------------------------------------------------------------------------------------------------ alignment


ALIGNMENTS: dict[str, Callable[[int, int], int]] = {  # task -> (output position i, length n) -> source position
    "copy": lambda i, n: i,
    "increment": lambda i, n: i,
    "reverse": lambda i, n: n - 1 - i,
    "swap_pairs": lambda i, n: i ^ 1 if i < n - n % 2 else i,
}


def ideal_alignment(task: str, src_len: int, tgt_len: int) -> torch.Tensor | None:
    """The (tgt_len, src_len) attention a decoder query should pay to the source for `task`, or None when the
    task has no fixed alignment (sort: where a symbol goes depends on the others).

    Query row i is the decoder input at position i (BOS, then the target), which predicts output token i; it
    should put all its weight on the source token that output comes from. Rows past the source length (the one
    that predicts EOS) have no ideal key and stay zero.
    """
    if task not in ALIGNMENTS:
        return None
    ideal = torch.zeros(tgt_len, src_len)
    for i in range(min(tgt_len, src_len)):
        ideal[i, ALIGNMENTS[task](i, src_len)] = 1.0
    return ideal


def alignment_score(weights: Any, ideal: Any) -> float:
    """Mean over query rows of the attention mass on the ideal keys: 1 for a perfect match, about 1/T_key for
    uniform attention. Rows whose ideal is all zero are skipped. `weights` and `ideal` are (T_query, T_key)."""
    weights, ideal = torch.as_tensor(weights, dtype=torch.float32), torch.as_tensor(ideal, dtype=torch.float32)
    if weights.dim() != 2 or weights.shape != ideal.shape:
        raise ValueError(f"weights {tuple(weights.shape)} and ideal {tuple(ideal.shape)} must be equal 2-D shapes")
    mass = ideal.sum(dim=1)
    rows = mass > 0
    if not rows.any():
        raise ValueError("the ideal alignment has no row to score")
    return ((weights * ideal).sum(dim=1)[rows] / mass[rows]).mean().item()


def head_labels(n_layers: int, n_heads: int) -> list[str]:
    """'L0 H0', 'L0 H1', ...: one label per cross-attention head, layer by layer (0-based, as the heatmaps)."""
    return [f"L{layer} H{head}" for layer in range(n_layers) for head in range(n_heads)]


def alignment_series(task: str, cross: Sequence[Sequence[Any]]) -> dict[str, list[float]]:
    """Per head, its alignment score at each snapshot; {} when the task has no ideal alignment.

    `cross` holds one snapshot per step, each a list of per-layer (H, T_query, T_key) cross-attention maps.
    """
    if not cross:
        return {}
    first = torch.as_tensor(cross[0][0])
    ideal = ideal_alignment(task, first.shape[2], first.shape[1])
    if ideal is None:
        return {}
    labels = head_labels(len(cross[0]), first.shape[0])
    series: dict[str, list[float]] = {label: [] for label in labels}
    for layers in cross:
        heads = [head for layer in layers for head in torch.as_tensor(layer)]
        for label, head in zip(labels, heads):
            series[label].append(alignment_score(head, ideal))
    return series


# ------------------------------------------------------------------------------------------------- running


@dataclass
class VariantRun:
    """One variant's training: metric rows, the end result, and the probe's cross-attention over training."""

    label: str
    value: SwitchValue
    history: list[MetricRow]
    result: dict | None  # TrainResult fields once it ended; None while it trains
    steps: list[int]  # the step of each attention snapshot
    cross: list[list[list]]  # per snapshot, per layer: the (H, T_query, T_key) cross-attention as nested lists
    alignment: dict[str, list[float]]  # head label -> score per snapshot; {} when the task has no ideal


@dataclass
class ExperimentRun:
    """An experiment's variants as trained (some may be missing while it runs), on one probe input."""

    experiment: Experiment
    probe_src: list[str]  # source tokens of the probe: the key axis of cross-attention
    probe_tgt: list[str]  # decoder input tokens (BOS, target): the query axis
    variants: list[VariantRun]


def _probe(trainer: Trainer) -> tuple[list[str], list[str], int, int]:
    """Source and decoder-input tokens of the probe (held-out row 0), without padding, and their lengths."""
    pad = trainer.vocab.pad_id
    src, tgt = trainer.valid.src[0], trainer.valid.tgt_in[0]
    src_ids, tgt_ids = src[src != pad].tolist(), tgt[tgt != pad].tolist()
    return trainer.vocab.tokens(src_ids), trainer.vocab.tokens(tgt_ids), len(src_ids), len(tgt_ids)


def _variant_run(
    experiment: Experiment,
    value: SwitchValue,
    trainer: Trainer,
    history: list[MetricRow],
    snapshots: list[dict],
    result: Any,
) -> VariantRun:
    """A VariantRun from a trainer's rows, attention snapshots and result (cross-attention trimmed to the probe)."""
    _, _, src_len, tgt_len = _probe(trainer)
    cross = [[layer[:, :tgt_len, :src_len].tolist() for layer in s["maps"]["cross"]] for s in snapshots]
    return VariantRun(
        SWITCHES[experiment.switch].label(value),
        value,
        history,
        None if result is None else asdict(result),
        [s["step"] for s in snapshots],
        cross,
        alignment_series(experiment.data.task, cross),
    )


def run_experiment(experiment: Experiment, on_variant: Callable[[VariantRun], None] | None = None) -> ExperimentRun:
    """Train every variant in turn, here and now; `on_variant` hears of each as it ends."""
    variants, trainer = [], None
    for value in experiment.values:
        trainer = Trainer(*experiment.configs(value))
        result = trainer.run()
        variants.append(_variant_run(experiment, value, trainer, trainer.history, trainer.attention_snapshots, result))
        if on_variant is not None:
            on_variant(variants[-1])
    src, tgt, _, _ = _probe(trainer)
    return ExperimentRun(experiment, src, tgt, variants)


class ExperimentJob:
    """Trains an experiment's variants one after the other in the background, each a `TrainingJob` that holds
    one training slot while it runs. Driven by the page: `poll()` starts the next variant once the last ended.
    """

    def __init__(self, experiment: Experiment, slots: Any = None, idle_timeout_s: float | None = None):
        self.experiment = experiment
        self.jobs: list[TrainingJob] = []
        self._slots, self._idle_timeout_s = slots, idle_timeout_s
        self._stopped, self._config_error = False, None

    def poll(self) -> None:
        """Note that the page still watches; start the next variant when the current one has ended.

        Raises ServerBusy when no training slot is free (call again later) and ValueError for bad configs, which
        also end the experiment with that error.
        """
        if self.jobs:
            self.jobs[-1].touch()
        if self.done or (self.jobs and not self.jobs[-1].done):
            return
        value = self.experiment.values[len(self.jobs)]
        try:
            job = TrainingJob(*self.experiment.configs(value), slots=self._slots, idle_timeout_s=self._idle_timeout_s)
        except ValueError as err:
            self._config_error = str(err)
            raise
        self.jobs.append(job.start())

    def stop(self) -> None:
        """Stop the running variant and start no other."""
        self._stopped = True
        for job in self.jobs:
            job.stop()

    @property
    def error(self) -> str | None:
        return self._config_error or next((job.error for job in self.jobs if job.error), None)

    @property
    def done(self) -> bool:
        """Stopped, failed, or every variant trained."""
        if self._stopped or self.error:
            return True
        if any(job.result is not None and job.result.reason == "stopped" for job in self.jobs):
            return True  # a variant stopped for lack of a watcher: the comparison is incomplete
        return len(self.jobs) == len(self.experiment.values) and self.jobs[-1].done

    @property
    def running(self) -> bool:
        return not self.done

    def progress(self) -> tuple[int, int]:
        """(steps done, steps planned) over all variants."""
        done = sum(int(rows[-1]["step"]) if (rows := job.rows()) else 0 for job in self.jobs)
        return done, self.experiment.train.steps * len(self.experiment.values)

    def run(self) -> ExperimentRun | None:
        """The variants so far as an ExperimentRun; None before the first one has its model and data."""
        if not self.jobs or self.jobs[0].trainer is None:
            return None
        variants = [
            _variant_run(self.experiment, value, job.trainer, job.rows(), job.attention_snapshots, job.result)
            for value, job in zip(self.experiment.values, self.jobs)
            if job.trainer is not None  # a variant still preparing has nothing to show yet
        ]
        src, tgt, _, _ = _probe(self.jobs[0].trainer)
        return ExperimentRun(self.experiment, src, tgt, variants)


# --------------------------------------------------------------------------------------------------- tables


def solved_at(history: Sequence[MetricRow]) -> MetricRow | None:
    """The first metric row where held-out exact-match reached 100%, or None."""
    return next((row for row in history if row["exact_match"] >= 1.0), None)


def summary_table(run: ExperimentRun) -> pd.DataFrame:
    """Per variant: when it first solved the held-out set (step and seconds), and where it ended."""
    records = []
    for v in run.variants:
        last = v.history[-1] if v.history else {}
        final = v.result or last
        solved = solved_at(v.history)
        records.append(
            {
                "variant": v.label,
                "solved at step": None if solved is None else int(solved["step"]),
                "solved after (s)": None if solved is None else round(solved["elapsed_s"], 1),
                "final exact match (%)": None if not final else round(100 * final["exact_match"], 1),
                "final token accuracy (%)": None if not final else round(100 * final["token_acc"], 1),
                "final training loss": last.get("train_loss"),
                "steps": None if not last else int(last["step"]),
                "time (s)": None if not last else round(last["elapsed_s"], 1),
            }
        )
    return pd.DataFrame(records)


def runs_frame(run: ExperimentRun) -> pd.DataFrame:
    """Every metric row of every variant, with a first column naming the variant: the CSV of a run."""
    frames = [pd.DataFrame(v.history, columns=list(METRIC_COLUMNS)).assign(variant=v.label) for v in run.variants]
    table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(METRIC_COLUMNS) + ["variant"])
    return table[["variant", *METRIC_COLUMNS]]


# ------------------------------------------------------------------------------------------------------ JSON


def _number(x: Any, digits: int) -> float | None:
    """A float rounded for the file; None for NaN or infinity (which JSON cannot hold)."""
    return round(float(x), digits) if math.isfinite(x) else None


def experiment_to_json(run: ExperimentRun) -> str:
    """The whole run as one compact JSON document: settings, metric histories, attention and alignment."""
    e = run.experiment
    document = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "experiment": {
            "key": e.key,
            "switch": e.switch,
            "values": list(e.values),
            "model": asdict(e.model),
            "data": asdict(e.data),
            "train": asdict(e.train),
        },
        "probe": {"src": run.probe_src, "tgt": run.probe_tgt},
        "variants": [
            {
                "value": v.value,
                "history": [{k: _number(x, 6) for k, x in row.items()} for row in v.history],
                "result": v.result,
                "steps": v.steps,
                "cross": [
                    [[[[_number(w, 2) for w in q] for q in head] for head in layer] for layer in snap]
                    for snap in v.cross
                ],
                "alignment": {label: [_number(s, 4) for s in series] for label, series in v.alignment.items()},
            }
            for v in run.variants
        ],
    }
    return json.dumps(document, separators=(",", ":"), allow_nan=False, ensure_ascii=False)


class _Reader:
    """Checks one part of an experiment document; every failure is a ValueError naming the part."""

    def __init__(self, where: str):
        self.where = where

    def fail(self, why: str) -> None:
        raise ValueError(f"not an experiment file of this lab: {self.where} {why}")

    def dict(self, value: Any, keys: set[str]) -> dict:
        if not isinstance(value, dict) or set(value) != keys:
            self.fail(f"must have exactly the keys {', '.join(sorted(keys))}")
        return value

    def list(self, value: Any, length: int | None = None, most: int = 10_000) -> list:
        if not isinstance(value, list) or (length is not None and len(value) != length) or len(value) > most:
            self.fail("has the wrong length" if isinstance(value, list) else "must be a list")
        return value

    def number(self, value: Any, low: float = -math.inf, high: float = math.inf, optional: bool = False) -> float:
        """A number in [low, high]; with `optional`, None (a NaN in the file) reads as NaN."""
        if value is None and optional:
            return math.nan
        try:
            number = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
        except OverflowError:  # an integer beyond float range
            number = math.nan
        if not (math.isfinite(number) and low <= number <= high):
            self.fail(f"holds {str(value)[:20]} where a finite number in [{low}, {high}] belongs")
        return number


def _config(cls: type, value: Any, where: str) -> Any:
    reader = _Reader(where)
    if not isinstance(value, dict) or not set(value) <= {f.name for f in fields(cls)}:
        reader.fail(f"must be a dict of {cls.__name__} fields")
    try:
        return cls(**value)
    except (TypeError, ValueError) as err:
        reader.fail(f"is not a valid {cls.__name__}: {str(err)[:200]}")


def _experiment(value: Any) -> Experiment:
    reader = _Reader("the experiment")
    d = reader.dict(value, {"key", "switch", "values", "model", "data", "train"})
    if d["key"] not in [*READY, CUSTOM] or d["switch"] not in SWITCHES:
        reader.fail("names an unknown experiment or switch")
    switch = SWITCHES[d["switch"]]
    values = reader.list(d["values"], most=MAX_VARIANTS)
    if len(values) < 2 or any(v not in switch.choices or type(v) is not type(switch.choices[0]) for v in values):
        reader.fail(f"needs 2-{MAX_VARIANTS} values among {', '.join(map(switch.token, switch.choices))}")
    model, data = _config(ModelConfig, d["model"], "the model"), _config(DataConfig, d["data"], "the data")
    train = _config(TrainConfig, d["train"], "the training settings")
    if model.vocab_size != data.n_symbols + N_SPECIAL:
        reader.fail("has a model vocabulary that does not fit its task")
    ready = READY.get(d["key"])
    title, expectation = (ready.title, ready.expectation) if ready else _custom_text(switch, values, data.task)
    return Experiment(d["key"], title, expectation, d["switch"], tuple(values), model, data, train)


def _variant(value: Any, experiment: Experiment, switch_value: SwitchValue, src_len: int, tgt_len: int) -> VariantRun:
    reader = _Reader(f"variant {SWITCHES[experiment.switch].label(switch_value)!r}")
    d = reader.dict(value, {"value", "history", "result", "steps", "cross", "alignment"})
    if d["value"] != switch_value or type(d["value"]) is not type(switch_value):
        reader.fail("does not match the experiment's values")
    history = []
    for row in reader.list(d["history"]):
        reader.dict(row, set(METRIC_COLUMNS))
        history.append(
            {
                k: reader.number(row[k], 0, 10**7 if k == "step" else math.inf, optional=k != "step")
                for k in METRIC_COLUMNS
            }
        )
    result = d["result"]
    if result is not None:
        reader.dict(result, {"steps", "seconds", "exact_match", "token_acc", "reason"})
        if result["reason"] not in ("solved", "step budget", "time budget", "stopped"):
            reader.fail("has an unknown end reason")
        result = {k: result[k] if k == "reason" else reader.number(result[k], 0) for k in result}
    steps = [int(reader.number(s, 0, 10**7)) for s in reader.list(d["steps"])]
    model, _, _ = experiment.configs(switch_value)
    cross = reader.list(d["cross"], length=len(steps), most=1000)
    for snap in cross:
        for layer in reader.list(snap, length=model.n_layers):
            for head in reader.list(layer, length=model.n_heads):
                for query in reader.list(head, length=tgt_len):
                    for w in reader.list(query, length=src_len):
                        reader.number(w, 0.0, 1.0)
    alignment = d["alignment"]
    if not isinstance(alignment, dict) or (
        alignment and set(alignment) != set(head_labels(model.n_layers, model.n_heads))
    ):
        reader.fail("has alignment scores for other heads than its model's")
    alignment = {
        k: [reader.number(s, 0.0, 1.0) for s in reader.list(v, length=len(steps))] for k, v in alignment.items()
    }
    return VariantRun(
        SWITCHES[experiment.switch].label(switch_value), switch_value, history, result, steps, cross, alignment
    )


def experiment_from_json(text: str | bytes) -> ExperimentRun:
    """An experiment run from `experiment_to_json`'s output; ValueError saying what is wrong for anything else."""
    if len(text) > MAX_JSON_BYTES:
        raise ValueError(f"the file is larger than {MAX_JSON_BYTES // 2**20} MB")
    try:
        document = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as err:
        raise ValueError(f"not a JSON file: {str(err)[:120]}") from None
    reader = _Reader("the file")
    d = reader.dict(document, {"format", "version", "experiment", "probe", "variants"})
    if d["format"] != FORMAT or d["version"] != FORMAT_VERSION:
        reader.fail(f"is not in format {FORMAT} version {FORMAT_VERSION}")
    experiment = _experiment(d["experiment"])
    probe = _Reader("the probe").dict(d["probe"], {"src", "tgt"})
    src, tgt = (reader.list(probe[k], most=experiment.data.max_len + 1) for k in ("src", "tgt"))
    if not src or not tgt or not all(isinstance(t, str) and len(t) <= 10 for t in src + tgt):
        reader.fail("has a probe that is not a short list of tokens")
    variants = reader.list(d["variants"], most=len(experiment.values))
    if not variants:
        reader.fail("holds no runs")
    return ExperimentRun(
        experiment,
        src,
        tgt,
        [_variant(v, experiment, value, len(src), len(tgt)) for v, value in zip(variants, experiment.values)],
    )


# ----------------------------------------------------------------------------------------- shipped results


def result_path(key: str) -> Path:
    return RESULTS_DIR / f"{key}.json"


def load_shipped(key: str) -> ExperimentRun | None:
    """The shipped result set of a ready-made experiment, or None when there is none."""
    path = result_path(key)
    return experiment_from_json(path.read_bytes()) if key in READY and path.is_file() else None


def write_shipped(run: ExperimentRun) -> Path:
    """Write a run as its experiment's shipped result set, atomically; returns the path."""
    path = result_path(run.experiment.key)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False, encoding="utf-8") as f:
        f.write(experiment_to_json(run))
    os.chmod(f.name, 0o644)  # a temporary file is private; the result set is for everyone
    os.replace(f.name, path)
    return path


def main(keys: Sequence[str] = ()) -> None:
    """Rerun the ready-made experiments named in `keys` (all by default) and write their result sets.

    The time budget is lifted so that every variant trains all its steps, however busy the machine is.
    """
    torch.set_num_threads(1)  # the models are tiny: one thread is fastest on a shared CPU
    for key in keys or READY:
        if key not in READY:
            raise SystemExit(f"unknown experiment {key!r}; choose from: {', '.join(READY)}")
        start, experiment = time.perf_counter(), READY[key]
        experiment = replace(experiment, train=replace(experiment.train, time_budget_s=3600.0))
        run = run_experiment(experiment, lambda v: print(f"  {v.label}: {v.result}", flush=True))
        path = write_shipped(run)
        print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KB) in {time.perf_counter() - start:.0f} s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
