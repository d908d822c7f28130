"""`python -m transformer train`: train a model on a task chosen by name or given by a task file, showing progress
on stderr, and save it."""

import argparse
import json
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

from . import settings
from .checkpoint import FINAL, check_checkpoint_size, save_checkpoint
from .device import pick_device
from .literal import printable
from .model import ModelConfig
from .run_configs import run_configs
from .task_file import read_task_path
from .tasks import DataConfig
from .training import MetricRow, Trainer


def train_command(args: argparse.Namespace) -> None:
    """Train, showing progress on stderr; print the result as one JSON line and save the checkpoint if asked."""
    chosen = {s.name: getattr(args, s.name) for s in settings.SETTINGS.values() if s.flag is not None}
    pairs = read_task_path(args.task_file) if args.task_file else None
    model_config, data_config, train_config = run_configs(chosen, shared=False, pairs=pairs)
    pick_device(train_config.device)
    if args.out:
        _check_out(args.out, model_config)
    trainer = Trainer(model_config, data_config, train_config)
    print(
        f"training {_task_line(data_config)}: {trainer.model.num_parameters():,} parameters on {trainer.device} "
        "(Ctrl-C stops)",
        file=sys.stderr,
    )
    stop = threading.Event()
    with _ctrl_c_sets(stop):
        result = trainer.run(_show_row, stop.is_set)
    out = None
    if args.out:
        history, train_settings, meta = trainer.history, asdict(train_config), {FINAL: result.exact_match}
        out = str(save_checkpoint(args.out, trainer.model, trainer.vocab, data_config, history, train_settings, meta))
    task_file = {} if pairs is None else {"task_file": pairs.name}
    print(json.dumps({"task": data_config.task, **task_file, **asdict(result), "out": out}))


def _task_line(data: DataConfig) -> str:
    """The task trained, in a few words: its name and lengths, or a task file's name and pairs."""
    lengths = f"lengths {data.min_len}-{data.max_len}"
    if data.pairs is None:
        return f"{data.task}, {lengths}"
    p = data.pairs
    return f"{printable(p.name)}, {len(p.train):,} pairs ({len(p.held_out):,} more held out), {lengths}"


def _check_out(path: str, config: ModelConfig) -> None:
    """Refuse now, not after training, a checkpoint that could not be written to `path` or would be too big."""
    check_checkpoint_size(config)
    out = Path(path)
    if out.is_dir():
        raise ValueError(f"--out {path} is a folder; name a file in it, e.g. {out / 'model.pt'}")
    folder = out.parent
    while not folder.exists():  # saving creates the missing folders in the nearest one that exists
        folder = folder.parent
    try:
        if not folder.is_dir():
            raise NotADirectoryError(folder)
        fd, probe = tempfile.mkstemp(dir=folder, prefix=f".{out.name}.", suffix=".tmp")  # as saving will
        os.close(fd)
        os.unlink(probe)
    except OSError:
        raise ValueError(f"--out: cannot write to {out.parent}") from None


def _show_row(row: MetricRow) -> None:
    print(
        f"step {row['step']:>5}  train loss {row['train_loss']:.3f}  val loss {row['val_loss']:.3f}  "
        f"token acc {row['token_acc']:.3f}  exact {row['exact_match']:.3f}  {row['tokens_per_s']:,.0f} tok/s",
        file=sys.stderr,
        flush=True,
    )


@contextmanager
def _ctrl_c_sets(stop: threading.Event) -> Iterator[None]:
    """Inside, the first Ctrl-C sets `stop` (training ends after its step); a second one interrupts as usual."""

    def first_ctrl_c(signum, frame) -> None:
        signal.signal(signal.SIGINT, previous)
        print("\nstopping after this step (Ctrl-C again to abort)", file=sys.stderr, flush=True)
        stop.set()

    previous = signal.signal(signal.SIGINT, first_ctrl_c)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
