"""Plain-data helpers behind the Train and Checkpoints pages: configs from form values, progress and ETA of a
run, curves thinned for plotting, a few held-out examples decoded by the model as it trains, metric tables,
and one-line summaries of checkpoints."""

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, replace

import pandas as pd
import torch

from .checkpoint import Checkpoint, load_checkpoint
from .decoding import greedy_decode
from .limits import check_limits, check_train_memory
from .model import ModelConfig, Transformer
from .tasks import DataConfig, TaskData
from .training import METRIC_COLUMNS, MetricRow, TrainConfig, suggested_lr
from .vocab import N_SPECIAL

# Model size (token-steps x weights per layer pair) at which one metric row every 25 steps comes about once a second.
_REFERENCE_COST = 128 * 10 * (32 * 32 + 32 * 128)
# The Train page's default data and time budget; its model and training defaults are ModelConfig's and TrainConfig's.
DEFAULT_DATA = DataConfig(task="reverse", min_len=6, max_len=8, n_symbols=10)
DEFAULT_TIME_BUDGET_S = 60  # whole seconds, as the page's number field steps them
CHOSEN_FOR_THE_PAGE = ("eval_every", "record_attention")  # TrainConfig fields build_configs sets


def default_configs(seed: int, device: str = "auto", **changes: object) -> tuple[ModelConfig, DataConfig, TrainConfig]:
    """The configs of the Train page's run with every setting at its default but the seed and `changes` (fields of
    ModelConfig or TrainConfig), as the page builds them."""
    data = asdict(replace(DEFAULT_DATA, seed=seed))
    model = {k: v for k, v in asdict(ModelConfig()).items() if k != "vocab_size"}
    train = TrainConfig(time_budget_s=float(DEFAULT_TIME_BUDGET_S), seed=seed, device=device)
    train = {k: v for k, v in asdict(train).items() if k not in CHOSEN_FOR_THE_PAGE}
    for name, value in changes.items():
        (model if name in model else train)[name] = value
    return build_configs(data, model, train)


def build_configs(data: Mapping, model: Mapping, train: Mapping) -> tuple[ModelConfig, DataConfig, TrainConfig]:
    """The three configs of a run from form values; ValueError with what to change when they do not fit.

    `data` holds DataConfig fields; `model` ModelConfig fields other than vocab_size (it follows from the data)
    and max_len (its default is long enough); `train` TrainConfig fields other than eval_every and
    record_attention (chosen here), its lr None for the peak that suits the model's size (`suggested_lr`).
    """
    if data["min_len"] > data["max_len"]:
        raise ValueError(f"the shortest input ({data['min_len']}) is longer than the longest ({data['max_len']})")
    data_config = DataConfig(**data)
    if train.get("lr") is None:  # left empty on the form: the peak for the model's size
        check_limits({name: model[name] for name in ("d_model", "n_layers")})
        train = {**train, "lr": suggested_lr(model["d_model"], model["n_layers"])}
    check_limits({**model, **train})
    d_model, n_heads = model["d_model"], model["n_heads"]
    if d_model % n_heads:
        fits = [h for h in range(1, 9) if d_model % h == 0]
        raise ValueError(
            f"d_model ({d_model}) must be divisible by the number of heads ({n_heads}): each head works on "
            f"d_model / heads dimensions. With d_model {d_model}, use {', '.join(map(str, fits))} heads."
        )
    model_config = ModelConfig(vocab_size=data_config.n_symbols + N_SPECIAL, **model)
    if model_config.max_len < data_config.max_len + 2:  # greedy decoding needs BOS + the symbols + EOS
        raise ValueError(f"sequences of length {data_config.max_len} are too long for this model")
    check_train_memory(model_config, train["batch_size"], data_config.max_len)
    eval_every = eval_every_for(model_config, data_config, train["batch_size"])
    train_config = TrainConfig(**train, eval_every=eval_every, record_attention=True)
    return model_config, data_config, train_config


def eval_every_for(model_config: ModelConfig, data_config: DataConfig, batch_size: int) -> int:
    """Steps between metric rows so that rows come about once a second on a small CPU: fewer for bigger runs."""
    d, layers = model_config.d_model, model_config.n_layers
    mean_len = (data_config.min_len + data_config.max_len) / 2
    cost = batch_size * mean_len * layers * (d * d + d * model_config.d_ff)
    return max(5, min(25, round(25 * _REFERENCE_COST / cost)))


@dataclass
class Progress:
    step: int  # steps done, as of the latest metric row
    fraction: float  # of the step budget, 0..1
    steps_per_s: float  # 0 before the first row
    eta_s: float | None  # seconds left at most (early stopping may end sooner); None before the first row


def progress(rows: Sequence[MetricRow], train_config: TrainConfig) -> Progress:
    """How far a run is, from its metric rows: the step and time budgets bound the ETA."""
    if not rows:
        return Progress(0, 0.0, 0.0, None)
    step, elapsed = int(rows[-1]["step"]), rows[-1]["elapsed_s"]
    rate = step / elapsed if elapsed > 0 else 0.0
    by_steps = (train_config.steps - step) / rate if rate else float("inf")
    eta = max(0.0, min(by_steps, train_config.time_budget_s - elapsed))
    return Progress(step, min(step / train_config.steps, 1.0), rate, eta)


def downsample(rows: Sequence[MetricRow], max_points: int = 500) -> list[MetricRow]:
    """At most `max_points` rows, evenly spread, always keeping the first and the last."""
    if len(rows) <= max_points:
        return list(rows)
    if max_points < 2:
        raise ValueError("max_points must be at least 2")
    picks = torch.linspace(0, len(rows) - 1, max_points).round().long().unique().tolist()
    return [rows[i] for i in picks]


def metrics_table(rows: Sequence[MetricRow]) -> pd.DataFrame:
    """The metric rows as a table with the training module's columns, in its order."""
    return pd.DataFrame(list(rows), columns=list(METRIC_COLUMNS))


@torch.no_grad()
def live_examples(model: Transformer, data: TaskData, n: int = 5) -> pd.DataFrame:
    """The first `n` held-out inputs, their targets, and `model`'s greedy outputs, each marked right or wrong."""
    vocab, rows = data.vocab, min(n, len(data.valid_sources))
    batch = data.make_batch(data.valid_sources[:rows])
    device = next(model.parameters()).device
    got = greedy_decode(model, batch.src.to(device), vocab.bos_id, vocab.eos_id, batch.tgt_out.size(1)).cpu()
    width = batch.tgt_out.size(1)
    got = torch.nn.functional.pad(got, (0, width - got.size(1)), value=vocab.pad_id)
    right = (got == batch.tgt_out).all(dim=1).tolist()
    return pd.DataFrame(
        {
            "input": [vocab.decode(ids) for ids in batch.src.tolist()],
            "target": [vocab.decode(ids) for ids in batch.tgt_out.tolist()],
            "model output": [vocab.decode(ids) or "(nothing)" for ids in got.tolist()],
            "right": ["✓" if ok else "✗" for ok in right],  # plain glyphs: every font has them
        }
    )


def run_summary(model_config: ModelConfig, data_config: DataConfig, train_config: TrainConfig) -> str:
    """The settings of a run in one line: task, data, model, the switches set away from the paper, peak learning
    rate, seed."""
    c, d = model_config, data_config
    parts = [
        f"{d.task}, lengths {d.min_len}-{d.max_len}, {d.n_symbols} symbols",
        f"d_model {c.d_model}, {c.n_heads} heads, {c.n_layers}+{c.n_layers} layers",
        f"{c.positional} positions" if c.positional != "none" else "no positional encoding",
        "pre-norm" if c.norm_first else "post-norm",
        *(["no causal mask"] if not c.causal_mask else []),
        *(["unscaled scores"] if not c.scale_scores else []),
        *([f"dropout {c.dropout:g}"] if c.dropout else []),
        f"peak lr {train_config.lr:g}",
        f"seed {train_config.seed}",
    ]
    return " · ".join(parts)


def switches(config: ModelConfig) -> list[str]:
    """The teaching switches set away from the paper's model, as short tags: "noPE", "learnedPE", "prenorm",
    "nocausal", "noscale", "tied" (the paper ties the generator, the lab's default does not)."""
    tags = {"none": ["noPE"], "learned": ["learnedPE"]}.get(config.positional, [])
    return tags + [
        tag
        for tag, on in (
            ("prenorm", config.norm_first),
            ("nocausal", not config.causal_mask),
            ("noscale", not config.scale_scores),
            ("tied", config.tie_weights),
        )
        if on
    ]


def run_name(model_config: ModelConfig, data_config: DataConfig, taken: Collection[str] = ()) -> str:
    """A short name for a trained model, e.g. "reverse-1to10-d32h4n1" or "reverse-1to10-d32h4n1-noPE" when a
    teaching switch is set, made unique against `taken`."""
    d, c = data_config, model_config
    base = "-".join([f"{d.task}-{d.min_len}to{d.max_len}-d{c.d_model}h{c.n_heads}n{c.n_layers}", *switches(c)])
    base = re.sub(r"[^A-Za-z0-9_-]", "_", base)
    name, i = base, 1
    while name in taken:
        i += 1
        name = f"{base}-{i}"
    return name


def checkpoint_summary(name: str, source: str, checkpoint: Checkpoint) -> dict:
    """One row describing a checkpoint: its task, size, and the last exact-match in its history (None if none)."""
    c, t = checkpoint.config, checkpoint.task
    scores = [row["exact_match"] for row in checkpoint.history if "exact_match" in row]
    return {
        "name": name,
        "source": source,
        "task": t.task,
        "lengths": f"{t.min_len}-{t.max_len}",
        "symbols": t.n_symbols,
        "d_model": c.d_model,
        "heads": c.n_heads,
        "layers": c.n_layers,
        "switches": ", ".join(switches(c)) or "-",
        "parameters": checkpoint.model.num_parameters(),
        "exact_match": scores[-1] if scores else None,
    }


def read_upload(filename: str, data: bytes) -> tuple[Checkpoint, str]:
    """An uploaded checkpoint and its label, "uploaded: <filename>"; CheckpointError if the file is not one."""
    return load_checkpoint(data), f"uploaded: {shown_name(filename)}"


def shown_name(filename: str, limit: int = 60) -> str:
    """A user's file name made safe to show: letters, digits, spaces and . - _ only, at most `limit` characters."""
    name = re.sub(r"[^\w. -]", "_", filename).strip() or "file"
    return name if len(name) <= limit else name[: limit - 3] + "..."
