"""Runs of an experiment: `run_experiment` trains the variants one after the other, `ExperimentJob` does the same
in the background for a page to poll. Both record, on a fixed probe input (the first held-out example), the
cross-attention of every head over training and its alignment score. Also the tables a run is read as.
"""

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from ..alignment import alignment_series
from ..runs import RunRegistry
from ..training import METRIC_COLUMNS, MetricRow, Trainer, TrainingJob
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

    With a server's `runs` (a RunRegistry), each variant is asked of it for `watcher`: a variant another student
    is training or has trained with the same settings is joined, and a distinct one waits in the queue.
    """

    def __init__(
        self,
        experiment: Experiment,
        slots: Any = None,
        idle_timeout_s: float | None = None,
        runs: RunRegistry | None = None,
        watcher: str = "",
    ):
        self.experiment = experiment
        self.jobs: list[TrainingJob] = []
        self._slots, self._idle_timeout_s = slots, idle_timeout_s
        self._runs, self._watcher = runs, watcher
        self._stopped, self._config_error = False, None

    def poll(self, connected: Callable[[], bool] | None = None) -> None:
        """Note that the page still watches (`connected`: see `TrainingJob.touch`); start the next variant when the
        current one has ended.

        Raises ServerBusy when no training slot is free (call again later) and ValueError for bad configs, which
        also end the experiment with that error.
        """
        if self.jobs:
            self.jobs[-1].touch(self._watcher, connected)
        if self.done or (self.jobs and not self.jobs[-1].done):
            return
        try:
            configs = self.experiment.configs(self.experiment.values[len(self.jobs)])
            if self._runs is not None:
                self.jobs.append(self._runs.start(self._watcher, *configs))
                return
            job = TrainingJob(*configs, slots=self._slots, idle_timeout_s=self._idle_timeout_s)
        except ValueError as err:
            self._config_error = str(err)
            raise
        self.jobs.append(job.start())

    def stop(self) -> None:
        """Stop the running variant and start no other."""
        self._stopped = True
        for job in self.jobs:
            if self._runs is not None:
                self._runs.leave(self._watcher, job)  # a variant other students watch goes on for them
            else:
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
