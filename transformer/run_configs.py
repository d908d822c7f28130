"""Settings into a run's configs: the one place that turns the settings of the Train form, a class, Compare or the
command line into a ModelConfig, a DataConfig and a TrainConfig, checking that they fit together and within the
bounds of where the run trains.

The model's max_len follows from the data by one rule (`model_max_len`): the decoder reads BOS + the target, so a
model fits sequences of up to max_len - 1 symbols (`ModelConfig.longest_sequence`, as checkpoints check), sources
and targets alike. Its vocabulary is the task's (`Task.symbols`) and the three special tokens.
"""

from collections.abc import Mapping

from . import settings as spec
from .checkpoint import check_model_size
from .i18n import N_, Message
from .limits import MAX_TRAIN_BYTES, check_train_memory, train_activation_bytes
from .model import ModelConfig
from .pairs import TaskPairs
from .task import spoken
from .tasks import DataConfig, longest_sequence, task_of
from .training import TrainConfig, suggested_lr
from .vocab import N_SPECIAL

Configs = tuple[ModelConfig, DataConfig, TrainConfig]
# Model size (token-steps x weights per layer pair) at which one metric row every 25 steps comes about once a second.
_REFERENCE_COST = 128 * 10 * (32 * 32 + 32 * 128)


def model_max_len(data: DataConfig) -> int:
    """The model's max_len for `data`: ModelConfig's default (64 positions), or one more than the longest input or
    target when that is longer, so that the longest source and BOS + the longest target fit."""
    return max(ModelConfig.max_len, longest_sequence(data) + 1)


def run_configs(
    settings: Mapping[str, spec.Value], shared: bool = True, lower: str | None = None, pairs: TaskPairs | None = None
) -> Configs:
    """The configs of a run with `settings` (by setting name; one left out keeps its config's default); ValueError
    with what to change when they do not fit. With `pairs`, the run learns that task from examples, whose pairs give
    its lengths, symbols and held-out set: the settings of the task and data but the seed do not apply.

    lr None (or left out): the peak for the model's size (`suggested_lr`). `shared`: a run on the shared server (the
    Train form, a class, Compare), held within RUN_LIMITS and MAX_RUN_TRAIN_BYTES (`lower` names the settings to
    lower past it: None, the Train form's), recording attention, its eval_every picked for the model's size unless
    given; else a run on the user's own machine (the command line), held to MAX_TRAIN_BYTES.
    """
    values = dict(settings)
    for name in values:
        spec.setting(name)  # ValueError on a name that is no setting
    if values.get("min_len", 1) > values.get("max_len", DataConfig.max_len):
        low, high = values.get("min_len"), values.get("max_len", DataConfig.max_len)
        template = N_(
            "the shortest input (min_len {low}) is longer than the longest (max_len {high}): lower the first or raise"
            " the second"
        )
        raise ValueError(Message(template, low=low, high=high))
    if shared:
        spec.check_limits(values)
    parts = {config: _fields(values, config) for config in spec.CONFIGS}
    data = DataConfig(**parts["data"]) if pairs is None else DataConfig.from_pairs(pairs, values.get("seed", 0))
    model_values = {"d_model": ModelConfig.d_model, "n_heads": ModelConfig.n_heads, **parts["model"]}
    d_model, n_heads = model_values["d_model"], model_values["n_heads"]
    if isinstance(n_heads, int) and n_heads >= 1 and d_model % n_heads:
        template = N_(
            "d_model ({d_model}) must be divisible by the number of heads ({n_heads}), since each head works on"
            " d_model / heads dimensions: with d_model {d_model}, use {fits} heads"
        )
        fits = spoken([h for h in range(1, 9) if d_model % h == 0])
        raise ValueError(Message(template, d_model=d_model, n_heads=n_heads, fits=fits))
    vocab_size = len(task_of(data).symbols(data.n_symbols)) + N_SPECIAL
    model = ModelConfig(**parts["model"], vocab_size=vocab_size, max_len=model_max_len(data))
    check_model_size(model)
    train = parts["train"]
    if train.get("lr") is None:  # left empty: the peak for the model's size
        train["lr"] = suggested_lr(model.d_model, model.n_layers)
    if shared:
        batch_size = train.get("batch_size", TrainConfig.batch_size)
        train = {"eval_every": eval_every_for(model, data, batch_size), **train, "record_attention": True}
    train_config = spec.CONFIGS["train"](**train)
    if shared:
        check_train_memory(model, train_config.batch_size, longest_sequence(data), lower)
    else:
        _check_own_machine_memory(model, train_config.batch_size, longest_sequence(data))
    return model, data, train_config


def _fields(values: Mapping[str, spec.Value], config: str) -> dict[str, spec.Value]:
    """The values of the settings that set fields of `config` ("data", "model" or "train")."""
    return {name: value for name, value in values.items() if config in spec.setting(name).configs}


def _check_own_machine_memory(model: ModelConfig, batch_size: int, length: int) -> None:
    """ValueError if one training step would keep more than MAX_TRAIN_BYTES of activations, naming the flags to
    lower."""
    if (size := train_activation_bytes(model, batch_size, length)) > MAX_TRAIN_BYTES:
        flags = [spec.setting(name).flag for name in ("batch_size", "n_layers", "d_model", "d_ff")]
        raise ValueError(
            f"one training step would keep about {size / 2**30:.1f} GB of activations, over the "
            f"{MAX_TRAIN_BYTES / 2**30:.0f} GB this lab allows: lower {', '.join(flags[:-1])} or {flags[-1]}"
        )


def eval_every_for(model_config: ModelConfig, data_config: DataConfig, batch_size: int) -> int:
    """Steps between metric rows so that rows come about once a second on a small CPU: fewer for bigger runs."""
    d, layers = model_config.d_model, model_config.n_layers
    mean_len = (data_config.min_len + data_config.max_len) / 2
    cost = batch_size * mean_len * layers * (d * d + d * model_config.d_ff)
    return max(5, min(25, round(25 * _REFERENCE_COST / cost)))


def default_configs(seed: int, device: str = "auto", **changes: spec.Value) -> Configs:
    """The configs of the Train page's run with every setting at its default but the seed, the device and
    `changes` (by setting name), as the page builds them, its peak learning rate TrainConfig's unless changed."""
    return run_configs({**spec.form_defaults(), "lr": TrainConfig.lr, "seed": seed, "device": device, **changes})
