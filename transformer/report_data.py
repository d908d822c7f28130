"""What a lab report holds, as plain values a class database can keep: a finished run's settings, metric rows and
result, held-out examples with the model's answers, the first held-out input's attention maps at the end, its
alignment over the run, and the length test run on the run's model; and a class student's place in the class.

`gather` reads them from a run; `to_json` and `from_json` keep them within MAX_REPORT_CHARS, the attention maps
within MAX_REPORT_WEIGHTS numbers; `from_json` cuts a text past its bound (a name, an example) rather than refuse it.
"""

from __future__ import annotations

import json
import math
import operator
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd
import torch
from torch.nn import Module

from . import settings as spec
from .alignment import best_head, head_scores, head_series, ideal_alignment
from .curves import downsample
from .i18n import Message
from .lengths import SCORE_COLUMNS
from .limits import MAX_LABEL_CHARS, MAX_REPORT_CHARS, MAX_REPORT_WEIGHTS, MAX_RUN_ROWS, MAX_SEQ_LEN, MAX_SYMBOL_CHARS
from .live_examples import live_examples
from .naming import run_name, task_label
from .serving import Run
from .training import METRIC_COLUMNS, smoothed_loss_floor

KINDS = ("cross", "encoder", "decoder_self")  # the attention a report keeps, as much as fits, in this order
EXAMPLES = 5  # held-out examples a report shows
MAX_TEXT = (MAX_SEQ_LEN + 1) * (MAX_SYMBOL_CHARS + 1)  # a sequence written out, EOS included
MAX_NAME_SHOWN = 160  # a run's name as a report shows it: more than `naming.run_name` makes from any task's name


@dataclass(frozen=True)
class Example:
    """A held-out input, its target and the model's greedy output."""

    source: str
    target: str
    output: str
    right: bool


@dataclass(frozen=True)
class ProbeAttention:
    """The first held-out input's attention in the run's final model: per kind (of KINDS that fit), per layer, the
    (heads, rows, columns) weights, rows and columns named by `source` (its tokens) or `queries` (the decoder's input,
    BOS then the target). `ideal`: the task's ideal cross-attention (queries x source), None where the task has
    none; `scores`: each cross-attention head's alignment with it (layers x heads)."""

    step: int
    source: list[str]
    queries: list[str]
    maps: dict[str, list]
    ideal: list[list[float]] | None
    scores: list[list[float]] | None


@dataclass(frozen=True)
class AlignmentLine:
    """The best-aligned cross-attention head and its score at each snapshot of the run, and uniform attention's."""

    steps: list[int]
    best: list[tuple[str, float]]
    chance: float


@dataclass(frozen=True)
class ReportData:
    """One run's report; `lengths` holds the length test's rows (`lengths.SCORE_COLUMNS`) when one was run."""

    name: str
    settings: dict[str, spec.Value]  # by setting name
    step: int
    result: dict[str, Any] | None  # TrainResult's fields
    rows: list[dict[str, float | None]]  # metric rows, METRIC_COLUMNS
    loss_floor: float  # the lowest training loss label smoothing allows
    examples: list[Example]
    attention: ProbeAttention | None  # None: no attention recorded (a model without attention)
    alignment: AlignmentLine | None  # None: the task has no ideal alignment, or no attention was recorded
    lengths: list[dict[str, Any]] | None = None

    @property
    def task(self) -> str:
        return str(self.settings.get("task", ""))


@dataclass(frozen=True)
class ClassPart:
    """A class student's place in the class's experiment, as a report shows it: the class, their name and group, the
    class's question and their prediction, the choice the class's runs measured right (None until measured), and the
    class's outcomes in words."""

    title: str
    student: str
    group: str | None
    question: str | None
    prediction: str | None
    measured: str | None
    outcome: str


# ------------------------------------------------------------------------------------------------- gathering


def gather(run: Run, tested: tuple[Module, pd.DataFrame] | None = None, name: str | None = None) -> ReportData:
    """The report of an ended run that trained at least one row; `tested`: the model a length test was run on and its
    scores, kept when that model is the run's own; `name`: the name its model is kept under, if not its settings'
    (`run_name`). ValueError when the run has no model."""
    model = run.model()
    if model is None or not run.rows:
        raise ValueError("this run has no trained model to report on")
    configs = {"model": run.model_config, "data": run.data_config, "train": run.train_config}
    settings = {s.name: getattr(configs[s.configs[0]], s.name) for s in spec.SETTINGS.values()}
    settings["task"] = task_label(run.data_config)  # a task from examples by its own name, not "pairs"
    examples = live_examples(model, run.data(), EXAMPLES)
    return ReportData(
        name=name or run_name(run.model_config, run.data_config),
        settings=settings,
        step=run.step,
        result=None if run.result is None else _result(_ending(run)),
        rows=[_metric_row(row) for row in downsample(run.rows[:], MAX_RUN_ROWS)],
        loss_floor=smoothed_loss_floor(run.train_config.label_smoothing, run.model_config.vocab_size),
        examples=[
            Example(row["input"], row["target"], _text_of(row["model output"]), row["right"] == "✓")
            for row in examples.to_dict("records")
        ],
        attention=probe_attention(run),
        alignment=alignment_line(run),
        lengths=length_rows(tested[1]) if tested is not None and same_weights(tested[0], model) else None,
    )


def _text_of(output: str) -> str:
    """A decoded output as text: "" for an empty one (which a live example says in words, a Message)."""
    return "" if isinstance(output, Message) else str(output)


def same_weights(one: Module, other: Module) -> bool:
    """Whether two models hold the same weights (a run's model, and a checkpoint saved of it and loaded again)."""
    if one is other:
        return True
    mine, theirs = one.state_dict(), other.state_dict()
    return mine.keys() == theirs.keys() and all(
        mine[k].shape == theirs[k].shape and torch.equal(mine[k], theirs[k]) for k in mine
    )


def length_rows(scores: pd.DataFrame) -> list[dict[str, Any]]:
    """A length test's scores (`lengths.SCORE_COLUMNS`) as plain rows, at most one per length."""
    return [_length_row(row) for row in scores.to_dict("records")[:MAX_SEQ_LEN]]


def _probe(run: Run) -> tuple[list[int], int, int]:
    """The probe input (held-out row 0) as symbol indices, and its source and decoder-input lengths."""
    data = run.data()
    pad = data.vocab.pad_id
    return data.valid_sources[0], int((data.valid.src[0] != pad).sum()), int((data.valid.tgt_in[0] != pad).sum())


def probe_attention(run: Run) -> ProbeAttention | None:
    """The probe's attention at the run's last snapshot, as many kinds (KINDS, in order) as fit within
    MAX_REPORT_WEIGHTS; None when the run recorded no attention."""
    if not run.attention or not run.attention[-1]["maps"].get("cross"):
        return None
    snapshot, data = run.attention[-1], run.data()
    source, S, T = _probe(run)
    sizes = {"cross": (T, S), "encoder": (S, S), "decoder_self": (T, T)}
    maps, left = {}, MAX_REPORT_WEIGHTS
    for kind in KINDS:
        layers = [layer[:, : sizes[kind][0], : sizes[kind][1]] for layer in snapshot["maps"].get(kind, [])]
        count = sum(layer.numel() for layer in layers)
        if layers and count <= left:
            maps[kind], left = [_rounded(layer) for layer in layers], left - count
    task = run.data_config.task
    ideal = ideal_alignment(task, source, T)
    scores = head_scores(task, source, [layer[:, :T, :S] for layer in snapshot["maps"]["cross"]])
    return ProbeAttention(
        step=int(snapshot["step"]),
        source=data.vocab.tokens(data.valid.src[0, :S].tolist()),
        queries=data.vocab.tokens(data.valid.tgt_in[0, :T].tolist()),
        maps=maps,
        ideal=None if ideal is None else ideal.tolist(),
        scores=None if scores is None else _rounded(scores),
    )


def alignment_line(run: Run) -> AlignmentLine | None:
    """The best head's alignment at each of (at most MAX_RUN_ROWS of) the run's snapshots; None when the task has no
    alignment or the run recorded no cross-attention."""
    if not run.attention or not run.attention[-1]["maps"].get("cross"):
        return None
    source, S, T = _probe(run)
    snapshots = downsample(run.attention[:], MAX_RUN_ROWS)
    scores = [head_scores(run.data_config.task, source, [m[:, :T, :S] for m in s["maps"]["cross"]]) for s in snapshots]
    if not scores or scores[0] is None:
        return None
    best = [(label, round(score, 4)) for label, score in best_head(head_series(scores))]
    return AlignmentLine([int(s["step"]) for s in snapshots], best, _number(1 / S))


def _rounded(weights: Any) -> list:
    """Weights as nested lists of numbers with 4 decimals: what a chart shows, in a fraction of the text."""
    return torch.as_tensor(weights, dtype=torch.float64).mul(10_000).round().div(10_000).tolist()


def _metric_row(row: Mapping[str, Any]) -> dict[str, float | None]:
    return {name: _number(row.get(name)) for name in METRIC_COLUMNS}


def _length_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A length test's row: whole numbers for the length and the inputs tested (TypeError otherwise)."""
    counts = {name: operator.index(row[name]) for name in ("length", "n")}
    return {name: counts[name] if name in counts else _number(row[name]) for name in SCORE_COLUMNS} | {
        "trained": bool(row["trained"])
    }


def _number(value: Any) -> float | None:
    """A finite number as a float with 6 significant digits, anything else as None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(f"{value:.6g}")


# ------------------------------------------------------------------------------------------- kept as JSON


def to_json(report: ReportData) -> str:
    """The report as JSON text; ValueError past MAX_REPORT_CHARS."""
    text = json.dumps(asdict(report), separators=(",", ":"), allow_nan=False)
    if len(text) > MAX_REPORT_CHARS:
        raise ValueError(f"a lab report takes at most {MAX_REPORT_CHARS:,} characters, this one {len(text):,}")
    return text


def from_json(text: str) -> ReportData:
    """The report `to_json` wrote; ValueError, saying what is wrong, on anything else."""
    if not isinstance(text, str) or len(text) > MAX_REPORT_CHARS:
        raise ValueError(f"a lab report is JSON text of at most {MAX_REPORT_CHARS:,} characters")
    try:
        data = json.loads(text)
        return ReportData(
            name=_text(data["name"], MAX_NAME_SHOWN),
            settings=_settings(data["settings"]),
            step=_count(data["step"]),
            result=None if data["result"] is None else _result(data["result"]),
            rows=[_metric_row(_mapping(row)) for row in _list(data["rows"], MAX_RUN_ROWS)],
            loss_floor=_float(data["loss_floor"]),
            examples=[_example(e) for e in _list(data["examples"], EXAMPLES)],
            attention=None if data["attention"] is None else _attention(data["attention"]),
            alignment=None if data["alignment"] is None else _alignment(data["alignment"]),
            lengths=None if data["lengths"] is None else [_length_row(r) for r in _list(data["lengths"], MAX_SEQ_LEN)],
        )
    except (KeyError, TypeError, AttributeError, json.JSONDecodeError) as err:
        raise ValueError(f"not a lab report: {type(err).__name__} {str(err)[:80]}") from None


def _settings(values: Any) -> dict[str, spec.Value]:
    """The known settings of `values` whose values are plain JSON scalars."""
    return {
        name: value
        for name, value in _mapping(values).items()
        if name in spec.SETTINGS and (value is None or type(value) in (bool, int, float, str))
    }


def _ending(run: Run) -> dict[str, Any]:
    """The run's result, a stop before its settings ended it named by why (`Run.stop_reason`), as its class records
    it."""
    result = asdict(run.result)
    return result if result["reason"] != "stopped" else {**result, "reason": run.stop_reason()}


def _result(values: Any) -> dict[str, Any]:
    """A TrainResult's fields: steps, seconds, exact match and token accuracy, and the reason it ended."""
    result = _mapping(values)
    numbers = {name: _float(result[name]) for name in ("seconds", "exact_match", "token_acc")}
    return {"steps": _count(result["steps"]), **numbers, "reason": _text(result["reason"], MAX_LABEL_CHARS)}


def _example(values: Any) -> Example:
    e = _mapping(values)
    return Example(*(_text(e[name], MAX_TEXT) for name in ("source", "target", "output")), bool(e["right"]))


def _attention(values: Any) -> ProbeAttention:
    a = _mapping(values)
    tokens = {
        name: [_text(t, MAX_SYMBOL_CHARS) for t in _list(a[name], MAX_SEQ_LEN + 1)] for name in ("source", "queries")
    }
    maps = {kind: _weights(layers) for kind, layers in _mapping(a["maps"]).items() if kind in KINDS}
    if sum(torch.tensor(layers).numel() for layers in maps.values()) > MAX_REPORT_WEIGHTS:
        raise ValueError(f"a lab report keeps at most {MAX_REPORT_WEIGHTS:,} attention weights")
    ideal, scores = (None if a[name] is None else _weights(a[name]) for name in ("ideal", "scores"))
    return ProbeAttention(_count(a["step"]), tokens["source"], tokens["queries"], maps, ideal, scores)


def _alignment(values: Any) -> AlignmentLine:
    a = _mapping(values)
    steps = [_count(step) for step in _list(a["steps"], MAX_RUN_ROWS)]
    best = [(_text(label, MAX_LABEL_CHARS), _float(score)) for label, score in _list(a["best"], MAX_RUN_ROWS)]
    if len(best) != len(steps):
        raise ValueError("an alignment line has a best head at each of its steps")
    return AlignmentLine(steps, best, _float(a["chance"]))


def _weights(values: Any) -> list:
    """Nested lists of finite numbers, as a tensor reads them (ValueError on ragged lists or other values)."""
    tensor = torch.tensor(values, dtype=torch.float64)
    if not bool(torch.isfinite(tensor).all()):
        raise ValueError("attention weights must be finite numbers")
    return tensor.tolist()


def _mapping(value: Any) -> Mapping:
    if not isinstance(value, Mapping):
        raise TypeError("expected an object")
    return value


def _list(value: Any, longest: int) -> list:
    if not isinstance(value, list) or len(value) > longest:
        raise TypeError(f"expected a list of at most {longest} items")
    return value


def _text(value: Any, longest: int) -> str:
    """Text as a report shows it: cut to `longest` characters, the last an ellipsis, when longer (a bound on what is
    shown never refuses the report). TypeError on anything but text."""
    if not isinstance(value, str):
        raise TypeError("expected text")
    return value if len(value) <= longest else value[: longest - 1] + "…"


def _count(value: Any) -> int:
    if type(value) is not int or value < 0:
        raise TypeError("expected a whole number")
    return value


def _float(value: Any) -> float:
    if (number := _number(value)) is None:
        raise TypeError("expected a finite number")
    return number
