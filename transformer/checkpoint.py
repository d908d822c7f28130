"""Save a trained model with everything needed to use it again, in one file, and load it back safely.

A checkpoint is a `torch.save`d dict of plain Python values and tensors only, so it loads with
`torch.load(weights_only=True)`, which never runs code from the file. Loading checks every part before it
builds the model (the task fits the model; each tensor owns its bytes, so a file cannot build more weights than
it holds), then that the model's outputs on a probe batch are finite, and refuses anything else with a
CheckpointError whose message says why.
"""

from __future__ import annotations

import hashlib
import io
import math
import os
import pickle
import stat
import tempfile
import weakref
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

import torch

from .i18n import N_, Message
from .limits import (
    MAX_CHECKPOINT_BYTES,
    MAX_HISTORY_ROWS,
    MAX_LAYERS,
    MAX_POSITIONS,
    MAX_WEIGHTS,
)
from .model import ModelConfig, Transformer
from .pairs import TaskPairs
from .plain_data import check_keys, check_plain, config_from
from .tasks import DataConfig, longest_sequence, task_of
from .vocab import N_SPECIAL, Vocab

FORMAT = "transformer-lab"
FORMAT_VERSION = 2  # 2: a task from examples carries its pairs (`DataConfig.pairs`); other checkpoints are still 1
FINAL = "exact_match"  # in `meta`: the held-out exact match its run ended with, on the whole held-out set
SHARES = ("exact_match", "token_acc")  # metrics of a history row that are shares of the held-out set: 0..1

# The task of each checkpoint file loaded and still held somewhere, by the SHA-256 of the file's bytes: the same file
# loaded again (the Checkpoints page lists a session's files on every visit) reuses its parsed task, pairs and all.
_TASKS: weakref.WeakValueDictionary[bytes, DataConfig] = weakref.WeakValueDictionary()
_PLAIN_PARTS = ("model_config", "vocab", "task", "history", "train_config", "meta")
_PARTS = (*_PLAIN_PARTS, "state_dict")
_NOT_OURS = N_("not a checkpoint file of this lab (or it is damaged); choose a checkpoint saved by this lab")
_LIMIT = f"{MAX_CHECKPOINT_BYTES // 2**20} MB limit for checkpoints"

Source = str | os.PathLike | bytes | bytearray | memoryview | BinaryIO


class CheckpointError(ValueError):
    """A file that is not a valid checkpoint of this project; the message says why and what to do."""


@dataclass
class Checkpoint:
    """A loaded checkpoint: the model and everything it was trained with."""

    model: Transformer  # in eval mode
    vocab: Vocab
    config: ModelConfig
    task: DataConfig  # the task and data settings it was trained on
    history: list[dict]  # metric rows (plain str -> float/int dicts)
    train_config: dict  # training settings as saved, plain JSON-able dict (may be empty)
    meta: dict = field(default_factory=dict)  # e.g. {"created": iso time, "torch": version, "name": ..., FINAL: 0.995}


def save_checkpoint(path: str | os.PathLike, *parts: Any, **named_parts: Any) -> Path:
    """Write a checkpoint to `path` atomically (parent folders are created); returns the path.

    The arguments after `path` are those of `checkpoint_bytes` (model, vocab, task, history=(), train_config=None,
    meta=None), whose content it writes. Either the whole new file replaces `path`, or, on any error, `path` is left
    as it was.
    """
    data = checkpoint_bytes(*parts, **named_parts)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return path


def checkpoint_bytes(
    model: Transformer,
    vocab: Vocab,
    task: DataConfig,
    history: Iterable[Mapping[str, float]] = (),
    train_config: dict | None = None,
    meta: dict | None = None,
) -> bytes:
    """The content `save_checkpoint` writes, in memory (e.g. for a download button).

    ValueError if the parts do not fit together or are not plain data, so no file is made that would not load.
    """
    _check_consistent(model.config, vocab, task)
    created = datetime.now(UTC).isoformat(timespec="seconds")
    payload = {
        "format": FORMAT,
        "version": 1 if task.pairs is None else FORMAT_VERSION,
        "model_config": model.config.to_dict(),
        "vocab": vocab.to_dict(),
        "task": _task_dict(task),
        "history": [dict(row) for row in history],
        "train_config": dict(train_config or {}),
        "meta": {"created": created, "torch": str(torch.__version__), **(meta or {})},
        "state_dict": _cpu_weights(model),
    }
    _check_plain_parts(payload)
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    if buffer.tell() > MAX_CHECKPOINT_BYTES:
        raise ValueError(f"the checkpoint would be {buffer.tell():,} bytes, over the {_LIMIT}; use a smaller model")
    return buffer.getvalue()


def load_checkpoint(source: Source, device: torch.device | str = "cpu") -> Checkpoint:
    """Read a checkpoint from a path, bytes or binary file object; its model goes to `device` in eval mode.

    CheckpointError for anything that is not a valid checkpoint of this lab. No code in the file ever runs.
    """
    data = _read(source)
    payload = _unpickle(data)
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        no_marker = N_(
            "not a checkpoint file of this lab (or it is damaged): it has no {marker} format marker; choose a "
            "checkpoint saved by this lab"
        )
        raise CheckpointError(Message(no_marker, marker=repr(FORMAT)))
    version = payload.get("version")
    if type(version) is not int or version < 1:
        unknown = N_("checkpoint has an unknown format version {version}; choose a checkpoint saved by this lab")
        raise CheckpointError(Message(unknown, version=repr(version)[:20]))
    if version > FORMAT_VERSION:
        newer = N_(
            "checkpoint format version {version} is newer than this lab reads ({ours}); upgrade the lab to open it"
        )
        raise CheckpointError(Message(newer, version=version, ours=FORMAT_VERSION))
    try:
        checkpoint = _unpack(payload, hashlib.sha256(data).digest())
    except (TypeError, ValueError, RuntimeError) as e:
        invalid = N_("invalid checkpoint: {reason}; choose a checkpoint saved by this lab, or save the model again")
        raise CheckpointError(Message(invalid, reason=e)) from e
    checkpoint.model.to(device)
    return checkpoint


def _read(source: Source) -> bytes:
    """The bytes of `source`, refusing more than MAX_CHECKPOINT_BYTES (files by their size, before reading)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        _check_length(memoryview(source).nbytes)
        return bytes(source)
    if isinstance(source, (str, os.PathLike)):
        if not stat.S_ISREG(os.stat(source).st_mode):  # a folder, a device or a pipe that could block or never end
            not_a_file = N_("{path} is not an ordinary file; choose a checkpoint saved by this lab")
            raise CheckpointError(Message(not_a_file, path=repr(os.fspath(source))[:80]))
        with open(source, "rb") as f:
            _check_length(os.fstat(f.fileno()).st_size)
            return _read_limited(f)
    return _read_limited(source)


def _read_limited(f: BinaryIO) -> bytes:
    """All of `f`, refusing more than MAX_CHECKPOINT_BYTES."""
    data = f.read(MAX_CHECKPOINT_BYTES + 1)
    _check_length(len(data))
    return data


def _check_length(n_bytes: int) -> None:
    """CheckpointError if `n_bytes` is over the size limit."""
    if n_bytes > MAX_CHECKPOINT_BYTES:
        too_big = N_("the file is larger than the {mb} MB limit for checkpoints; choose a checkpoint saved by this lab")
        raise CheckpointError(Message(too_big, mb=MAX_CHECKPOINT_BYTES // 2**20))


def _unpickle(data: bytes) -> object:
    """The object in a torch.save file, read with weights_only=True: plain data and tensors, never code."""
    try:
        _check_archive(data)
        return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:
        objects = N_(
            "not a checkpoint file of this lab (or it is damaged): it holds Python objects other than plain data and "
            "tensors, which are never loaded; choose a checkpoint saved by this lab"
        )
        raise CheckpointError(objects) from None
    except Exception as e:
        raise CheckpointError(_NOT_OURS) from e


def _check_archive(data: bytes) -> None:
    """ValueError unless `data` is a zip archive of stored (uncompressed) entries, as torch.save writes.

    Compressed entries could inflate a small file to gigabytes of tensors, so they are refused.
    """
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        entries = archive.infolist()
    if any(e.compress_type != zipfile.ZIP_STORED for e in entries) or sum(e.file_size for e in entries) > len(data):
        raise ValueError("compressed archive")


def _unpack(payload: dict, digest: bytes) -> Checkpoint:
    """The checkpoint in a loaded payload, each part checked before the model is built (ValueError if not valid);
    `digest` is the SHA-256 of the file's bytes, which its task is cached by (`_TASKS`)."""
    check_keys(payload.keys() - {"format", "version"}, _PARTS, "checkpoint")
    _check_plain_parts(payload)
    config = config_from(ModelConfig, _with_defaults("model", payload["model_config"]), "model_config")
    if config.architecture != "transformer":
        raise ValueError(
            f"it holds a recurrent model ({config.architecture}), and the lab's pages read Transformers only"
        )
    check_model_size(config)
    task = _TASKS.get(digest) or _task_from(payload["task"])
    vocab = Vocab.from_dict(payload["vocab"])
    _check_consistent(config, vocab, task)
    _check_stored(payload["state_dict"], config)
    model = Transformer(config)
    _check_weights(model, payload["state_dict"])
    model.load_state_dict(payload["state_dict"], strict=True)
    _check_outputs(model.eval(), task)
    _TASKS[digest] = task
    return Checkpoint(model, vocab, config, task, payload["history"], payload["train_config"], payload["meta"])


def _with_defaults(config: str, stored: dict) -> dict:
    """A stored config ("data" or "model"), each field of a setting it lacks at its config default: a checkpoint
    saved before that setting existed ran as its default does. (The training settings stay as saved, a record of
    the run: `ema_decay` defaults to 0.99, but the checkpoints saved before it kept their raw weights.)"""
    from . import settings  # not at the top: settings imports training, which imports this module

    return {**settings.config_defaults(config), **stored}


def _task_dict(task: DataConfig) -> dict:
    """The task as plain data: a task from examples with its pairs, any other without the key (so that a lab before
    tasks from examples reads it)."""
    stored = {name: value for name, value in asdict(task).items() if name != "pairs"}
    return stored if task.pairs is None else {**stored, "pairs": task.pairs.to_dict()}


def _task_from(stored: dict) -> DataConfig:
    """The DataConfig `_task_dict` wrote, its pairs checked within their bounds before anything is built."""
    pairs = stored.get("pairs")
    built = {"pairs": None if pairs is None else TaskPairs.from_dict(pairs)}
    return config_from(
        DataConfig, _with_defaults("data", {k: v for k, v in stored.items() if k != "pairs"}), "task", built
    )


def _cpu_weights(model: Transformer) -> dict[str, torch.Tensor]:
    """Contiguous CPU float32 copies of the state dict; tensors that share memory (tied weights) stay one tensor."""
    weights, copies = {}, {}
    for name, t in model.state_dict().items():
        key = (t.device, t.data_ptr(), t.shape, t.stride())
        if key not in copies:
            copies[key] = t.detach().to("cpu", torch.float32, memory_format=torch.contiguous_format, copy=True)
            if not torch.isfinite(copies[key]).all():
                raise ValueError(f"{name} has NaN or infinite weights; this model cannot be saved")
        weights[name] = copies[key]
    return weights


def _check_plain_parts(payload: dict) -> None:
    """ValueError unless every part besides the weights is plain data of the expected shape."""
    for name in _PLAIN_PARTS:
        check_plain(payload[name], name)
        if name != "history" and type(payload[name]) is not dict:
            raise ValueError(Message(N_("{name} must be a dict"), name=name))
    history = payload["history"]
    if type(history) is not list or len(history) > MAX_HISTORY_ROWS:
        raise ValueError(Message(N_("history must be a list of at most {most} rows"), most=f"{MAX_HISTORY_ROWS:,}"))
    for row in history:
        if type(row) is not dict or not all(type(v) in (int, float) for v in row.values()):
            raise ValueError(Message(N_("history rows must be dicts of metric name -> number")))
        if row.keys() != history[0].keys() or type(row.get("step")) is not int:
            raise ValueError(Message(N_("history rows must all hold the same metrics, a whole-number step among them")))
        if not all(math.isfinite(v) and v >= 0 for v in row.values()) or any(row.get(s, 0) > 1 for s in SHARES):
            shares = N_("history rows must hold numbers of at least 0, with exact_match and token_acc at most 1")
            raise ValueError(Message(shares))


def _n_weights(c: ModelConfig) -> int:
    """Floats the model for `c` allocates (parameters and positional table), counted without building it."""
    d = c.d_model
    attention = 4 * d * d + 4 * d  # W_Q, W_K, W_V, W_O and their biases
    feed_forward = 2 * d * c.d_ff + c.d_ff + d
    norm = 2 * d
    layers = c.n_layers * ((attention + feed_forward + 2 * norm) + (2 * attention + feed_forward + 3 * norm))
    final_norms = 2 * norm if c.norm_first else 0
    positions = 0 if c.positional == "none" else c.max_len * d
    generator = c.vocab_size if c.tie_weights else c.vocab_size * d + c.vocab_size
    return c.vocab_size * d + positions + layers + final_norms + generator


def _n_stored(c: ModelConfig) -> int:
    """Floats of the model's state dict, a tied weight once: all it allocates but a sinusoidal table."""
    return _n_weights(c) - (c.max_len * c.d_model if c.positional == "sinusoidal" else 0)


def check_model_size(config: ModelConfig) -> None:
    """ValueError if the model would be too big to build safely, before anything is allocated."""
    most = N_("model_config.{field} is {value}; the most this lab builds is {most}")
    if config.n_layers > MAX_LAYERS:
        raise ValueError(Message(most, field="n_layers", value=config.n_layers, most=MAX_LAYERS))
    if config.max_len > MAX_POSITIONS:
        raise ValueError(Message(most, field="max_len", value=config.max_len, most=MAX_POSITIONS))
    if (n := _n_weights(config)) > MAX_WEIGHTS:
        template = N_("model_config describes {n} weights; the most this lab builds is {most}")
        raise ValueError(Message(template, n=f"{n:,}", most=f"{MAX_WEIGHTS:,}"))


def check_checkpoint_size(config: ModelConfig) -> None:
    """ValueError if a model of this size would not fit in a checkpoint file (float32 weights)."""
    check_model_size(config)
    if (size := 4 * _n_weights(config)) > MAX_CHECKPOINT_BYTES:
        raise ValueError(
            f"this model ({_n_weights(config):,} weights) would make a checkpoint of about "
            f"{size / 2**20:.0f} MB, over the {_LIMIT}: make it smaller, or train without saving"
        )


def _check_consistent(config: ModelConfig, vocab: Vocab, task: DataConfig) -> None:
    """ValueError unless the vocabulary fits both the model and the task (a task from examples: is its own)."""
    if len(vocab) != config.vocab_size:
        template = N_("the vocabulary has {n} tokens but model_config.vocab_size is {size}")
        raise ValueError(Message(template, n=len(vocab), size=config.vocab_size))
    symbols = task_of(task).symbols(task.n_symbols)
    if vocab.n_symbols != len(symbols) or (task.pairs is not None and vocab.symbols != symbols):
        template = N_("the vocabulary has {n} symbols but the task has {task_n}")
        raise ValueError(Message(template, n=vocab.n_symbols, task_n=len(symbols)))
    if config.pad_id != vocab.pad_id:
        template = N_("model_config.pad_id is {pad_id} but the vocabulary's PAD is {pad}")
        raise ValueError(Message(template, pad_id=config.pad_id, pad=vocab.pad_id))
    if (longest := longest_sequence(task)) > config.longest_sequence:
        template = N_(
            "the task's sequences have up to {longest} symbols but model_config.max_len {max_len} fits at most {fits}"
            " tokens (the decoder reads BOS + target)"
        )
        raise ValueError(Message(template, longest=longest, max_len=config.max_len, fits=config.longest_sequence))


def _check_stored(state_dict: object, config: ModelConfig) -> None:
    """ValueError unless each tensor of `state_dict` is dense, contiguous and owns exactly its bytes, and the
    distinct tensors hold every weight the model of `config` keeps in its state dict. Checked before the model is
    built: the weights it reads from a file are then at most the file's bytes / 4 (a sinusoidal table is made from
    the config), however the file's tensors overlap."""
    if not isinstance(state_dict, dict) or not all(type(k) is str for k in state_dict):
        raise ValueError(Message(N_("state_dict must be a dict of name -> tensor")))
    stored = {}  # address of each storage -> its bytes
    for name, t in state_dict.items():
        if not isinstance(t, torch.Tensor) or t.layout != torch.strided:
            raise ValueError(Message(N_("state_dict[{name}] is not a dense tensor"), name=repr(name)[:80]))
        storage = t.untyped_storage()
        if not t.is_contiguous() or t.storage_offset() or storage.nbytes() != t.numel() * t.element_size():
            template = N_("{name} does not own exactly its bytes: it is a view of a larger or shared storage")
            raise ValueError(Message(template, name=name[:80]))
        stored[storage.data_ptr()] = storage.nbytes()
    if (held := sum(stored.values()) // 4) < (needed := _n_stored(config)):
        template = N_(
            "the tensors of state_dict hold {held} weights but model_config describes {needed}: some are missing,"
            " smaller than the model's, or share one tensor"
        )
        raise ValueError(Message(template, held=f"{held:,}", needed=f"{needed:,}"))


def _check_weights(model: Transformer, state_dict: dict[str, torch.Tensor]) -> None:
    """ValueError unless `state_dict` has exactly the model's tensors, each of its shape and dtype, finite,
    and equal wherever the model ties two of them together."""
    expected = model.state_dict(keep_vars=True)
    check_keys(state_dict, expected, "state_dict")
    first_name = {}  # id of each model tensor -> the first name it appears under
    for name, param in expected.items():
        t = state_dict[name]
        if t.dtype != param.dtype or t.shape != param.shape:
            shaped = N_("{dtype} of shape {shape}")
            got = Message(shaped, dtype=str(t.dtype), shape=str(tuple(t.shape))[:80])
            want = Message(shaped, dtype=str(param.dtype), shape=str(tuple(param.shape)))
            raise ValueError(Message(N_("{name} is {got}, expected {want}"), name=name, got=got, want=want))
        if not torch.isfinite(t).all():
            raise ValueError(Message(N_("{name} has NaN or infinite weights"), name=name))
        tied = first_name.setdefault(id(param), name)
        if not torch.equal(t, state_dict[tied]):
            raise ValueError(
                Message(N_("{name} differs from {tied}, but the model ties the two together"), name=name, tied=tied)
            )


def _check_outputs(model: Transformer, task: DataConfig) -> None:
    """ValueError unless the model's logits on a probe batch are finite: finite weights can still overflow (huge
    embeddings). The batch reads every symbol and every position, as source and as teacher-forced target: rows as
    long as the model reads running through the symbols in turn (as many as it takes to read each once), then the
    task's shortest input, padded."""
    width, n = model.config.longest_sequence, model.config.vocab_size - N_SPECIAL
    rows = [[N_SPECIAL + (start + i) % n for i in range(width)] for start in range(0, n, width)]
    shortest = rows[0][: task.min_len] + [Vocab.pad_id] * (width - task.min_len)
    src = torch.tensor([*rows, shortest])  # (R, S)
    tgt = torch.cat([torch.full((len(src), 1), Vocab.bos_id), src], dim=1)  # (R, S + 1): BOS + target
    with torch.no_grad():
        logits = model(src, tgt)  # (R, S + 1, V)
    if not torch.isfinite(logits).all():
        raise ValueError(
            Message(N_("the model's outputs are NaN or infinite on a probe batch, though its weights are finite"))
        )
