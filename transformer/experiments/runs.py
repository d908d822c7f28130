"""Runs of an experiment: `run_experiment` trains the variants one after the other here and now; `LiveExperiment`
has a server's registry train them in the background for a page to poll. Both record, on a fixed probe input (the
first held-out example), the cross-attention of every head over training and its alignment score. Also the tables
a run is read as.
"""

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd
import torch
import torch.nn as nn

from ..alignment import alignment_series, ideal_alignment
from ..lengths import inputs_within_budget, score_lengths
from ..limits import MAX_SEQ_LEN
from ..serving import Chain, RunRegistry
from ..shares import shown_share
from ..tasks import TaskData, task_of
from ..training import METRIC_COLUMNS, MetricRow, Trainer
from ..vocab import Vocab
from .definitions import SWITCHES, Experiment, SwitchValue


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
    lengths: list[dict] | None = None  # the final model's length test (`length_test`); None while it trains


@dataclass
class ExperimentRun:
    """An experiment's variants as trained (some may be missing while it runs), on one probe input."""

    experiment: Experiment
    probe_src: list[str]  # source tokens of the probe: the key axis of cross-attention
    probe_tgt: list[str]  # decoder input tokens (BOS, target): the query axis
    variants: list[VariantRun]

    def probe_ideal(self) -> torch.Tensor | None:
        """The probe's ideal cross-attention (T_query, T_key), as `VariantRun.alignment` scores the heads against;
        None when the task has none (or the probe's tokens are not its symbols)."""
        data = self.experiment.data
        vocab = Vocab(task_of(data).symbols(data.n_symbols))
        try:
            source = [vocab.symbol_index(i) for i in vocab.encode(" ".join(self.probe_src))]
        except ValueError:  # a file of another task's symbols
            return None
        return ideal_alignment(data.task, source, len(self.probe_tgt))


def _probe(data: TaskData) -> tuple[list[str], list[str], int, int]:
    """Source and decoder-input tokens of the probe (held-out row 0), without padding, and their lengths."""
    pad = data.vocab.pad_id
    src, tgt = data.valid.src[0], data.valid.tgt_in[0]
    src_ids, tgt_ids = src[src != pad].tolist(), tgt[tgt != pad].tolist()
    return data.vocab.tokens(src_ids), data.vocab.tokens(tgt_ids), len(src_ids), len(tgt_ids)


LENGTH_TEST_INPUTS = 50  # unseen inputs per length in a variant's length test


def length_test(experiment: Experiment, model: nn.Module, data: TaskData) -> list[dict]:
    """Greedy exact match of a variant's final model at each input length from 1 to twice the longest it trained
    on: {"length", "trained", "exact_match"} per length (`transformer.lengths.score_lengths`)."""
    task = experiment.data
    lengths = list(range(1, min(2 * task.max_len, model.config.longest_sequence, MAX_SEQ_LEN) + 1))
    n = max(1, inputs_within_budget(model.config, lengths, LENGTH_TEST_INPUTS))
    scores = score_lengths(model, data.vocab, task, lengths, n, seed=experiment.train.seed).scores
    return [
        {"length": int(row.length), "trained": bool(row.trained), "exact_match": float(row.exact_match)}
        for row in scores.itertuples()
    ]


def _variant_run(
    experiment: Experiment,
    value: SwitchValue,
    data: TaskData,
    history: list[MetricRow],
    snapshots: list[dict],
    result: Any,
    lengths: list[dict] | None = None,
) -> VariantRun:
    """A VariantRun from a run's rows, attention snapshots and result (cross-attention trimmed to the probe)."""
    _, _, src_len, tgt_len = _probe(data)
    cross = [[layer[:, :tgt_len, :src_len].tolist() for layer in s["maps"]["cross"]] for s in snapshots]
    return VariantRun(
        SWITCHES[experiment.switch].label(value),
        value,
        history,
        None if result is None else asdict(result),
        [s["step"] for s in snapshots],
        cross,
        alignment_series(experiment.data.task, data.valid_sources[0], cross),
        lengths,
    )


def run_experiment(experiment: Experiment, on_variant: Callable[[VariantRun], None] | None = None) -> ExperimentRun:
    """Train every variant in turn, here and now; `on_variant` hears of each as it ends."""
    variants, trainer = [], None
    for value in experiment.values:
        trainer = Trainer(*experiment.configs(value))
        result = trainer.run()
        lengths = length_test(experiment, trainer.model, trainer.data)
        snapshots = trainer.attention_snapshots
        variants.append(_variant_run(experiment, value, trainer.data, trainer.history, snapshots, result, lengths))
        if on_variant is not None:
            on_variant(variants[-1])
    src, tgt, _, _ = _probe(trainer.data)
    return ExperimentRun(experiment, src, tgt, variants)


@dataclass
class LiveExperiment:
    """An experiment whose variants a server's `RunRegistry` trains one after the other, as a `Chain`: a variant
    another student trains or has trained with the same settings is joined, a distinct one waits in the queue."""

    experiment: Experiment
    chain: Chain
    _lengths: dict[int, list[dict]] = field(default_factory=dict)  # variant index -> its length test, once trained

    @classmethod
    def start(
        cls,
        experiment: Experiment,
        registry: RunRegistry,
        watcher: str,
        connected: Callable[[], bool] | None = None,
        address: str | None = None,
    ) -> "LiveExperiment":
        """Submit the variants, each its own configs (checked as the experiment was built), for `watcher` at network
        `address`; ServerBusy when the first variant cannot be queued."""
        configs = [experiment.configs(value) for value in experiment.values]
        return cls(experiment, registry.submit_chain(watcher, configs, connected, address))

    @property
    def done(self) -> bool:
        """Stopped, failed, or every variant trained."""
        return self.chain.done

    @property
    def error(self) -> str | None:
        """Why the experiment ended early: a variant's error, or why the server stopped it (`Run.notice`)."""
        ended_early = (run.error or run.notice for run in self.chain.runs)
        return self.chain.error or next((why for why in ended_early if why), None)

    def cut_short(self) -> list[str]:
        """The variants, by label, that a stopped experiment did not train to their end (the one stopped, and those
        it never started); [] while it trains, once every variant has, or when it failed (`error` says why)."""
        if not self.done or self.error:
            return []
        runs = [*self.chain.runs, *[None] * (len(self.experiment.values) - len(self.chain.runs))]
        label = SWITCHES[self.experiment.switch].label
        return [
            label(v) for v, run in zip(self.experiment.values, runs) if run is None or not run.ended_on_its_own_terms()
        ]

    def _length_test(self, index: int) -> list[dict] | None:
        """Variant `index`'s length test once its run has ended with a model (computed once), else None."""
        run = self.chain.runs[index]
        if index not in self._lengths and run.result is not None and (model := run.model()) is not None:
            self._lengths[index] = length_test(self.experiment, model, run.data())
        return self._lengths.get(index)

    def progress(self) -> tuple[int, int]:
        """(steps done, steps planned) over all variants."""
        done = sum(run.step for run in self.chain.runs)
        return done, self.experiment.train.steps * len(self.experiment.values)

    def so_far(self) -> ExperimentRun | None:
        """The variants trained so far as an ExperimentRun; None before the first one has trained a step."""
        variants = []
        for i, (value, run) in enumerate(zip(self.experiment.values, self.chain.runs)):
            if run.status in ("training", "paused") or run.result is not None:
                lengths = self._length_test(i)
                variants.append(
                    _variant_run(self.experiment, value, run.data(), run.rows[:], run.attention[:], run.result, lengths)
                )
        if not variants:
            return None
        src, tgt, _, _ = _probe(self.chain.runs[0].data())
        return ExperimentRun(self.experiment, src, tgt, variants)


# --------------------------------------------------------------------------------------------------- tables


def solved_at(history: Sequence[MetricRow]) -> MetricRow | None:
    """The first metric row where held-out exact-match reached 100%, or None."""
    return next((row for row in history if row["exact_match"] >= 1.0), None)


def summary_table(run: ExperimentRun) -> pd.DataFrame:
    """Per variant: when it first solved the held-out set (step and seconds), and where it ended (speed, held-out
    scores, training loss, steps, seconds)."""
    records = []
    for v in run.variants:
        last = v.history[-1] if v.history else {}
        final = v.result or last
        solved = solved_at(v.history)
        records.append(
            {
                "variant": v.label,
                "solved at step": None if solved is None else int(solved["step"]),
                "solved at (s)": None if solved is None else round(solved["elapsed_s"], 1),
                "steps/s": None if not last or not last["elapsed_s"] else round(last["step"] / last["elapsed_s"], 1),
                "exact match (%)": None if not final else round(100 * shown_share(final["exact_match"]), 1),
                "token acc. (%)": None if not final else round(100 * shown_share(final["token_acc"]), 1),
                "train loss": last.get("train_loss"),
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
