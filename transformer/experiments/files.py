"""Experiment files: a whole run as one JSON document (`experiment_to_json`, `experiment_from_json`, which checks
every part), and the result sets the Compare page ships with, one file per ready-made experiment.
"""

import json
import math
import os
import sys
import tempfile
from dataclasses import asdict, fields, replace
from pathlib import Path
from typing import Any

from ..alignment import head_labels
from ..checkpoint import check_model_size
from ..i18n import N_, Message, bounded
from ..limits import (
    MAX_EXPERIMENT_ROWS,
    MAX_EXPERIMENT_SNAPSHOTS,
    MAX_EXPERIMENT_STEP,
    MAX_JSON_BYTES,
    MAX_SEQ_LEN,
    MAX_TOKEN_CHARS,
    MAX_VARIANTS,
    check_train_memory,
)
from ..model import ModelConfig
from ..recurrent import cross_attention_shape
from ..settings import check_limits
from ..tasks import DataConfig, longest_sequence
from ..training import METRIC_COLUMNS, TrainConfig
from ..vocab import N_SPECIAL, Vocab
from .definitions import CUSTOM, READY, SWITCHES, Configs, Experiment, SwitchValue, custom_text
from .runs import ExperimentRun, VariantRun

RESULTS_DIR = Path(__file__).resolve().parent.parent.parent / "checkpoints" / "experiments"
FORMAT, FORMAT_VERSION = "transformer-lab-experiment", 2
# Version 2 holds each variant's own model and training settings (a learning rate on auto follows the variant's
# model); a version 1 file's variants share the experiment's, but for the switch.
READ_VERSIONS = (1, 2)
TOO_MUCH = N_("asks for more than a run on this server may: {problem}")


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
                "lengths": v.lengths,
                "model": asdict(e.configs(v.value)[0]),
                "train": asdict(e.configs(v.value)[2]),
            }
            for v in run.variants
        ],
    }
    return json.dumps(document, separators=(",", ":"), allow_nan=False, ensure_ascii=False)


class _Reader:
    """Checks one part of an experiment document; every failure is a ValueError naming the part."""

    def __init__(self, where: str):
        self.where = where  # the part, a Message or a sentence marked with N_

    def fail(self, why: str) -> None:
        """ValueError: the part, and `why` (a Message or a sentence marked with N_) it is not what this lab writes."""
        problem = N_("not an experiment file of this lab: {where} {why}")
        raise ValueError(Message(problem, where=Message(self.where), why=Message(why)))

    def dict(self, value: Any, keys: set[str]) -> dict:
        if not isinstance(value, dict) or set(value) != keys:
            self.fail(Message(N_("must have exactly the keys {keys}"), keys=", ".join(sorted(keys))))
        return value

    def list(self, value: Any, length: int | None = None, most: int = MAX_EXPERIMENT_ROWS) -> list:
        if not isinstance(value, list) or (length is not None and len(value) != length) or len(value) > most:
            self.fail(N_("has the wrong length") if isinstance(value, list) else N_("must be a list"))
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
            belongs = N_("holds {value} where a finite number in [{low}, {high}] belongs")
            self.fail(Message(belongs, value=str(value)[:20], low=low, high=high))
        return number


def _config(cls: type, value: Any, where: str) -> Any:
    reader = _Reader(where)
    if not isinstance(value, dict) or not set(value) <= {f.name for f in fields(cls)}:
        named = ", ".join(f.name for f in fields(cls))
        reader.fail(Message(N_("must hold its settings by name, among: {names}"), names=named))
    try:
        return cls(**value)
    except (TypeError, ValueError) as err:
        reader.fail(Message(N_("has a setting that cannot be: {problem}"), problem=bounded(err, 200)))


def _experiment(value: Any) -> Experiment:
    reader = _Reader(N_("the experiment"))
    d = reader.dict(value, {"key", "switch", "values", "model", "data", "train"})
    if not isinstance(d["switch"], str) or d["key"] not in [*READY, CUSTOM] or d["switch"] not in SWITCHES:
        reader.fail(N_("names an unknown experiment or switch"))
    switch = SWITCHES[d["switch"]]
    values = reader.list(d["values"], most=MAX_VARIANTS)
    if len(values) < 2 or any(v not in switch.choices or type(v) is not type(switch.choices[0]) for v in values):
        tokens = ", ".join(map(switch.token, switch.choices))
        reader.fail(Message(N_("needs 2-{most} values among {tokens}"), most=MAX_VARIANTS, tokens=tokens))
    model, data = _config(ModelConfig, d["model"], N_("the model")), _config(DataConfig, d["data"], N_("the data"))
    train = _config(TrainConfig, d["train"], N_("the training settings"))
    _check_runnable(reader, model, data, train)
    ready = READY.get(d["key"])
    title, expectation = (ready.title, ready.expectation) if ready else custom_text(switch, values, data.task)
    experiment = Experiment.sharing(d["key"], title, expectation, d["switch"], values, model, data, train)
    for value in experiment.values:  # the switch may add heads or layers: every variant's step must fit
        _check_runnable(reader, *experiment.configs(value))
    return experiment


def _check_runnable(reader: _Reader, model: ModelConfig, data: DataConfig, train: TrainConfig) -> None:
    """Fail unless a rerun may train these configs on this server: within a run's bounds, size and memory (Compare's
    own runs stop by steps, not by a time budget), its vocabulary its task's."""
    try:
        check_limits({**asdict(model), **asdict(train)}, skip={"time_budget_s"})
        check_model_size(model)
        check_train_memory(model, train.batch_size, longest_sequence(data), N_("its settings"))
    except ValueError as err:
        reader.fail(Message(TOO_MUCH, problem=err))
    if model.vocab_size != data.n_symbols + N_SPECIAL:
        reader.fail(N_("has a model vocabulary that does not fit its task"))


def _variant_name(experiment: Experiment, switch_value: SwitchValue) -> Message:
    """A variant as a failure names it: its label in the reader's language (正弦位置编码, not sinusoidal PE)."""
    return Message(N_("variant “{label}”"), label=Message(SWITCHES[experiment.switch].label(switch_value)))


def _variant_configs(value: Any, experiment: Experiment, switch_value: SwitchValue) -> Configs:
    """A version 2 variant's own configs: its model and training settings, the experiment's data, the switch's field
    its value, and runnable here."""
    reader = _Reader(_variant_name(experiment, switch_value))
    model = _config(ModelConfig, value.get("model") if isinstance(value, dict) else None, N_("the model"))
    train = _config(TrainConfig, value.get("train") if isinstance(value, dict) else None, N_("the training settings"))
    switched = model if experiment.switch in ModelConfig.__dataclass_fields__ else train
    if getattr(switched, experiment.switch) != switch_value:
        reader.fail(N_("does not match the experiment's values"))
    _check_runnable(reader, model, experiment.data, train)
    return model, experiment.data, train


def _variant(
    value: Any, experiment: Experiment, switch_value: SwitchValue, src_len: int, tgt_len: int, version: int
) -> VariantRun:
    reader = _Reader(_variant_name(experiment, switch_value))
    parts = {"value", "history", "result", "steps", "cross", "alignment"} | (
        {"model", "train"} if version > 1 else set()
    )
    d = reader.dict(value, parts | ({"lengths"} if isinstance(value, dict) and "lengths" in value else set()))
    if d["value"] != switch_value or type(d["value"]) is not type(switch_value):
        reader.fail(N_("does not match the experiment's values"))
    history = []
    for row in reader.list(d["history"]):
        reader.dict(row, set(METRIC_COLUMNS))
        history.append(
            {
                k: reader.number(row[k], 0, MAX_EXPERIMENT_STEP if k == "step" else math.inf, optional=k != "step")
                for k in METRIC_COLUMNS
            }
        )
    result = d["result"]
    if result is not None:
        reader.dict(result, {"steps", "seconds", "exact_match", "token_acc", "reason"})
        if result["reason"] not in ("solved", "step budget", "time budget", "stopped"):
            reader.fail(N_("has an unknown end reason"))
        result = {k: result[k] if k == "reason" else reader.number(result[k], 0) for k in result}
    steps = [int(reader.number(s, 0, MAX_EXPERIMENT_STEP)) for s in reader.list(d["steps"])]
    model, _, _ = experiment.configs(switch_value)
    n_layers, n_heads = cross_attention_shape(model)
    cross = reader.list(d["cross"], length=len(steps), most=MAX_EXPERIMENT_SNAPSHOTS)
    for snap in cross:
        for layer in reader.list(snap, length=n_layers):
            for head in reader.list(layer, length=n_heads):
                for query in reader.list(head, length=tgt_len):
                    for w in reader.list(query, length=src_len):
                        reader.number(w, 0.0, 1.0)
    alignment = d["alignment"]
    if not isinstance(alignment, dict) or (alignment and set(alignment) != set(head_labels(n_layers, n_heads))):
        reader.fail(N_("has alignment scores for other heads than its model's"))
    alignment = {
        k: [reader.number(s, 0.0, 1.0) for s in reader.list(v, length=len(steps))] for k, v in alignment.items()
    }
    label = SWITCHES[experiment.switch].label(switch_value)
    return VariantRun(label, switch_value, history, result, steps, cross, alignment, _lengths(d.get("lengths"), reader))


def _lengths(value: Any, reader: _Reader) -> list[dict] | None:
    """A variant's length test as `runs.length_test` writes it, or None when the file has none."""
    if value is None:
        return None
    rows = []
    for row in reader.list(value, most=MAX_SEQ_LEN):
        reader.dict(row, {"length", "trained", "exact_match"})
        if not isinstance(row["trained"], bool):
            reader.fail(N_("has a length test whose 'trained' is not true or false"))
        length = int(reader.number(row["length"], 1, MAX_SEQ_LEN))
        rows.append(
            {"length": length, "trained": row["trained"], "exact_match": reader.number(row["exact_match"], 0, 1)}
        )
    return rows


def experiment_from_json(text: str | bytes) -> ExperimentRun:
    """An experiment run from `experiment_to_json`'s output; ValueError saying what is wrong for anything else."""
    if len(text) > MAX_JSON_BYTES:
        raise ValueError(Message(N_("the file is larger than {most} MB"), most=MAX_JSON_BYTES // 2**20))
    try:
        document = json.loads(text)
    except UnicodeDecodeError as err:
        raise ValueError(Message(N_("not a JSON file: it is not UTF-8 text (byte {at})"), at=err.start + 1)) from None
    except json.JSONDecodeError as err:  # said in the lab's words: the json module's are English only
        if not text.strip():
            raise ValueError(Message(N_("not a JSON file: it is empty"))) from None
        # JSON up to its end, or a string still open there: the rest is missing
        if err.pos >= len(err.doc.rstrip()) or err.msg.startswith("Unterminated string"):
            raise ValueError(
                Message(N_("the file stops part-way, as one cut short while it downloaded: download it again"))
            ) from None
        raise ValueError(Message(N_("not a JSON file: it cannot be read from line {line}"), line=err.lineno)) from None
    except RecursionError:
        raise ValueError(Message(N_("not a JSON file: its lists or objects are nested too deep"))) from None
    except ValueError:  # json reads a number with int(), which refuses one of more digits than Python converts
        most = sys.get_int_max_str_digits()
        raise ValueError(
            Message(N_("not a JSON file: it holds a number of more than {most} digits"), most=most)
        ) from None
    reader = _Reader(N_("the file"))
    d = reader.dict(document, {"format", "version", "experiment", "probe", "variants"})
    if d["format"] != FORMAT or d["version"] not in READ_VERSIONS or type(d["version"]) is not int:
        reader.fail(Message(N_("is not in format {format} version {version}"), format=FORMAT, version=FORMAT_VERSION))
    experiment = _experiment(d["experiment"])
    probe = _Reader(N_("the probe")).dict(d["probe"], {"src", "tgt"})
    src, tgt = (reader.list(probe[k], most=experiment.data.max_len + 1) for k in ("src", "tgt"))
    if not src or not tgt or not all(isinstance(t, str) and len(t) <= MAX_TOKEN_CHARS for t in src + tgt):
        reader.fail(N_("has a probe that is not a short list of tokens"))
    tgt = [Vocab.BOS, *tgt[1:]]  # the decoder's input starts with BOS, named as every page names it (version 1: <s>)
    variants = reader.list(d["variants"], most=len(experiment.values))
    if not variants:
        reader.fail(N_("holds no runs"))
    if d["version"] > 1:  # each variant's own configs; a variant the file holds no run of shares the first's
        own = [_variant_configs(v, experiment, value) for v, value in zip(variants, experiment.values)]
        shared = experiment.variant_configs[len(own) :]
        experiment = replace(experiment, variant_configs=(*own, *shared))
    version, values = d["version"], experiment.values
    return ExperimentRun(
        experiment,
        src,
        tgt,
        [_variant(v, experiment, value, len(src), len(tgt), version) for v, value in zip(variants, values)],
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
