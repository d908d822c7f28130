"""Names and one-line descriptions of runs and checkpoints: a run's settings in a line, its teaching switches as
short tags, a unique name for a trained model, and a table row for a checkpoint. Switch values are said in the
words of `settings`."""

import re
from collections.abc import Collection

from . import settings as spec
from .checkpoint import FINAL, Checkpoint
from .i18n import N_, Message, joined
from .model import ModelConfig
from .tasks import DataConfig
from .training import TrainConfig


def task_label(data: DataConfig) -> str:
    """What a run learns, in a word: its task's name, or the name of its task from examples (literal text)."""
    return data.task if data.pairs is None else data.pairs.name


# The settings run_summary always says, in its own words: the task and data, the model's size, the peak rate, the seed;
# and those it never lists: how long and where a run trains, not what it trains.
_IN_EVERY_SUMMARY = {"task", "min_len", "max_len", "n_symbols", "d_model", "n_heads", "n_layers", "lr", "seed"}
_NOT_WHAT_IT_TRAINS = {"steps", "time_budget_s", "device"}


def length_span(data: DataConfig) -> str:
    """The input lengths a run trains on, as its summaries say them: "6-8", or "3" when there is one."""
    return str(data.min_len) if data.min_len == data.max_len else f"{data.min_len}-{data.max_len}"


def run_summary(model_config: ModelConfig, data_config: DataConfig, train_config: TrainConfig) -> Message:
    """The settings of a run in one line: task, data, model, each other setting a student chooses (on the Train
    form, or a switch of Compare) that the run sets away from where the form starts, but its budgets and device,
    peak learning rate, seed."""
    c, d = model_config, data_config
    configs = {"data": data_config, "model": model_config, "train": train_config}
    data = N_("{task}, lengths {lengths}, {symbols} symbols")
    if c.n_heads == 1:
        sizes = N_("d_model {d_model}, {heads} head, {layers}+{layers} layers")
    else:
        sizes = N_("d_model {d_model}, {heads} heads, {layers}+{layers} layers")
    changed = [
        _said(s, value)
        for s in spec.SETTINGS.values()
        if (s.form or s.compare)
        and s.name not in _IN_EVERY_SUMMARY | _NOT_WHAT_IT_TRAINS
        and (value := getattr(configs[s.configs[0]], s.name)) != s.default
    ]
    return joined(
        [
            Message(data, task=task_label(d), lengths=length_span(d), symbols=d.n_symbols),
            Message(sizes, d_model=c.d_model, heads=c.n_heads, layers=c.n_layers),
            *changed,
            Message(N_("peak lr {lr:g}"), lr=train_config.lr),
            Message(N_("seed {seed}"), seed=train_config.seed),
        ]
    )


def _said(s: spec.Setting, value: spec.Value) -> str | Message:
    """Setting `s` at `value` in a run's summary: the value's words, else the setting's summary of a number ("batch
    128"), else its label and the value."""
    if value in s.words:
        return s.word(value)
    shown = value if isinstance(value, str) else f"{value:g}"
    if s.summary is not None:
        return Message(s.summary, value=shown)
    return Message(N_("{setting}: {value}"), setting=Message(s.label), value=shown)


def _switch_names() -> list[str]:
    """The model's teaching switches: its settings that are a choice or a bool."""
    return [s.name for s in spec.SETTINGS.values() if s.configs == ("model",) and s.options]


def switch_words(config: ModelConfig) -> list[str]:
    """The teaching switches set away from the lab's default model, each in its words (untranslated): "no PE",
    "pre-norm", "tied"."""
    default = ModelConfig()
    return [
        spec.setting(name).word(getattr(config, name))
        for name in _switch_names()
        if getattr(config, name) != getattr(default, name)
    ]


def switches(config: ModelConfig) -> list[str]:
    """The teaching switches set away from the lab's default model, as short tags: their words without spaces or
    hyphens, e.g. "noPE", "learnedPE", "prenorm", "tied" (the paper ties the generator, the lab's default does
    not)."""
    return [re.sub(r"[^A-Za-z0-9]", "", words) for words in switch_words(config)]


def run_name(model_config: ModelConfig, data_config: DataConfig, taken: Collection[str] = ()) -> str:
    """A short name for a trained model, e.g. "reverse-1to10-d32h4n1" or "reverse-1to10-d32h4n1-noPE" when a
    teaching switch is set, made unique against `taken`."""
    d, c = data_config, model_config
    base = "-".join([f"{task_label(d)}-{d.min_len}to{d.max_len}-d{c.d_model}h{c.n_heads}n{c.n_layers}", *switches(c)])
    base = re.sub(r"[^\w-]", "_", base)  # letters of any script stay: a task file named in Chinese keeps its name
    name, i = base, 1
    while name in taken:
        i += 1
        name = f"{base}-{i}"
    return name


def final_exact_match(checkpoint: Checkpoint) -> float | None:
    """The held-out exact match a checkpoint's run ended with: its score on the whole held-out set where the file
    keeps it (`meta[FINAL]`, as the Train page said it), else its last metric row's, on a sample of that set; None
    if neither."""
    kept = checkpoint.meta.get(FINAL)
    if isinstance(kept, int | float) and not isinstance(kept, bool) and 0 <= kept <= 1:  # an upload's may be anything
        return float(kept)
    scores = [row["exact_match"] for row in checkpoint.history if "exact_match" in row]
    return scores[-1] if scores else None


def checkpoint_summary(name: str, source: str, checkpoint: Checkpoint) -> dict:
    """One row describing a checkpoint: its task, size, and the exact match its run ended with (None if unknown)."""
    c, t = checkpoint.config, checkpoint.task
    return {
        "name": name,
        "source": source,
        "task": task_label(t),
        "lengths": length_span(t),
        "symbols": t.n_symbols,
        "d_model": c.d_model,
        "heads": c.n_heads,
        "layers": c.n_layers,
        "switches": ", ".join(switches(c)) or "-",
        "parameters": checkpoint.model.num_parameters(),
        "exact_match": final_exact_match(checkpoint),
    }
