"""Command line: `python -m transformer {train,predict,evaluate,ablate,patch,bench} ...` (see `--help` of each).

Torch computes on 2 CPU threads; the environment variable TRANSFORMER_THREADS sets another count.
Exit status: 0 done, 1 some lines of a `predict --input` file failed, 2 bad settings, sequence or checkpoint
(reported as `error: <message>` on stderr), 130 interrupted.
"""

import argparse
import json
import math
import os
import re
import signal
import stat
import sys
import tempfile
import threading
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from functools import partial
from pathlib import Path

import torch
from torch.nn.utils.rnn import pad_sequence

from . import bench, knockout, patching, settings
from .checkpoint import Checkpoint, check_checkpoint_size, load_checkpoint, save_checkpoint
from .decoding import beam_search, greedy_decode
from .device import pick_device
from .evaluation import evaluate
from .lengths import score_lengths
from .limits import (
    MAX_BEAM,
    MAX_FRESH,
    MAX_INPUT_BYTES,
    MAX_INPUT_LINES,
    MAX_PER_LENGTH,
    MAX_SEED,
    MAX_THREADS,
)
from .model import ModelConfig, check_finite
from .run_configs import run_configs
from .tasks import DataConfig, TaskData
from .training import MetricRow, Trainer

THREADS_ENV = "TRANSFORMER_THREADS"
DEFAULT_THREADS = 2
DECODE_CHUNK = 256  # sequences greedy-decoded at once by `predict --input`


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, `error: ...`, and exit status 2."""

    def error(self, message: str):
        print(f"error: {printable(message)}", file=sys.stderr)
        raise SystemExit(2)


def printable(text: object) -> str:
    """`text` with control and format characters (escapes, bidi overrides, newlines) replaced by spaces, so that
    what a file holds cannot move the cursor, clear or recolour the terminal, or fake another line."""
    return "".join(" " if unicodedata.category(c) in ("Cc", "Cf") else c for c in str(text))


def _bounded(kind: type, low: float, high: float) -> Callable[[str], int | float]:
    """An argparse type: a finite `kind` (int or float) from `low` to `high`."""

    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text[:20]!r} is not a {'whole ' * (kind is int)}number") from None
        if not (math.isfinite(value) and low <= value <= high):
            raise argparse.ArgumentTypeError(f"must be from {low:,} to {high:,}, got {text[:20]}")
        return value

    return parse


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = _Parser(
        prog="python -m transformer",
        description="Train, run and benchmark the classroom Transformer on toy sequence tasks.",
        epilog=__doc__.split("\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    defaults = argparse.ArgumentDefaultsHelpFormatter
    _add_train(commands.add_parser("train", help="train a model on a toy task and save it", formatter_class=defaults))
    _add_predict(commands.add_parser("predict", help="run a saved model on sequences"))
    _add_evaluate(
        commands.add_parser("evaluate", help="score a saved model on held-out and fresh data", formatter_class=defaults)
    )
    _add_ablate(commands.add_parser("ablate", help="score a saved model with attention heads knocked out"))
    _add_patch(commands.add_parser("patch", help="patch a clean input's activations into a corrupted input's run"))
    p = commands.add_parser("bench", help="print the performance benchmarks")
    p.add_argument("--quick", action="store_true", help="a reduced run, as a smoke test")
    p.add_argument("--device", default="cpu", help="where to run every benchmark: cpu, cuda, mps or auto")
    p.set_defaults(run=bench_command)
    return parser


_TRAIN_GROUPS = {"data": "task and data", "model": "model", "train": "training"}  # by a setting's first config


def _add_train(p: argparse.ArgumentParser) -> None:
    """Every setting with a flag (`transformer.settings`), in groups by config, each from its config's default."""
    groups = {config: p.add_argument_group(title) for config, title in _TRAIN_GROUPS.items()}
    for s in settings.SETTINGS.values():
        if s.flag is not None:
            _add_setting(groups[s.configs[0]], s)
    p.add_argument("--out", help="checkpoint file to save, e.g. checkpoints/reverse.pt")
    p.set_defaults(run=train_command)


def _add_setting(group: argparse._ArgumentGroup, s: settings.Setting) -> None:
    """The flag of setting `s`: a bool's pair of flags (on, off), a choice's choices, a number's type and bounds."""
    default = settings.config_default(s)
    text = " ".join(s.help.replace("**", "").replace("%", "%%").split())  # plain text, one paragraph
    if s.kind == "bool":
        group.set_defaults(**{s.name: default})  # first: the flags' own defaults stay hidden, said once in `on`
        pair, hidden = group.add_mutually_exclusive_group(), argparse.SUPPRESS
        on = f"{s.word(True)} (default: {s.word(default)}). {text}"
        pair.add_argument(s.flag, dest=s.name, action="store_true", default=hidden, help=on)
        off = s.off_flag or f"--no-{s.flag.removeprefix('--')}"
        pair.add_argument(off, dest=s.name, action="store_false", default=hidden, help=s.word(False))
    elif s.kind == "choice":
        choices = s.options if s.flag_choices else None
        group.add_argument(s.flag, dest=s.name, default=default, choices=choices, help=text)
    else:
        kind = int if s.kind == "int" else float
        parse = _bounded(kind, *s.flag_bounds) if s.flag_bounds else kind
        group.add_argument(s.flag, dest=s.name, type=parse, default=default, help=text)


_SEQUENCE_HELP = 'space-separated symbols, e.g. "3 1 4" ("314" too, when every symbol is one character)'
_LENGTHS_HELP = (
    "also score up to --n unseen inputs of each length from LOW to HIGH, including lengths "
    "the model never trained on (see transformer.lengths)"
)
_HEADS_HELP = (
    "score these heads removed together instead of the grid of one head at a time; KIND is enc (encoder "
    "self-attention), self (decoder self-attention) or cross; layer and head count from 0, e.g. cross:0:1,self:0:2"
)
_ABLATION_HELP = "replace a removed head's output by zeros (default, the paper-style reading) or by its held-out mean"


def _checkpoint_command(p: argparse.ArgumentParser, run: Callable[[argparse.Namespace], object]) -> Callable:
    """Give `p` its `checkpoint` argument and `run`; returns `p.add_argument` for the command's own arguments."""
    p.add_argument("checkpoint", help="a checkpoint file saved by `train`")
    p.set_defaults(run=run)
    return p.add_argument


def _add_predict(p: argparse.ArgumentParser) -> None:
    add = _checkpoint_command(p, predict_command)
    add("sequence", nargs="?", help=_SEQUENCE_HELP)
    add("--input", metavar="FILE", help="one sequence per line; prints one output line per input line")
    width = _bounded(int, 1, MAX_BEAM)
    add("--beam", type=width, metavar="N", help="beam search of width N instead of greedy decoding")


def _add_evaluate(p: argparse.ArgumentParser) -> None:
    add = _checkpoint_command(p, evaluate_command)
    add("--n", type=_bounded(int, 1, MAX_FRESH), default=1000, help="fresh sequences to score")
    add("--seed", type=_bounded(int, 0, MAX_SEED), default=123, help="seed of the fresh sequences")
    add("--lengths", metavar="LOW-HIGH", help=_LENGTHS_HELP)


def _add_ablate(p: argparse.ArgumentParser) -> None:
    add = _checkpoint_command(p, ablate_command)
    add("--heads", metavar="KIND:LAYER:HEAD,...", help=_HEADS_HELP)
    add("--ablation", choices=knockout.ABLATIONS, default="zero", help=_ABLATION_HELP)
    add("--n", type=int, help="held-out sequences to score (default: as many as the grid's time bound allows)")


def _add_patch(p: argparse.ArgumentParser) -> None:
    add = _checkpoint_command(p, patch_command)
    add("--clean", required=True, help=f"the clean input: {_SEQUENCE_HELP}")
    add("--corrupt", required=True, help="the same input with a symbol changed")


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    try:
        args = _parse(argv)
    except SystemExit as done:  # --help (0) or a bad argument (2, reported)
        return done.code or 0
    try:
        _set_threads()
        return args.run(args) or 0
    except (ValueError, RuntimeError, OSError, MemoryError) as err:  # CheckpointError is a ValueError
        message = str(err).strip().splitlines() or [type(err).__name__]
        print(f"error: {printable(message[0])}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    if args.command == "predict" and args.sequence is None and len(extras) == 1 and not extras[0].startswith("-"):
        args.sequence, extras = extras[0], []  # argparse leaves a sequence that follows an option, e.g. --beam 3
    if extras:
        parser.error(f"unrecognized arguments: {' '.join(extras)}")
    return args


def _set_threads() -> None:
    value = os.environ.get(THREADS_ENV, str(DEFAULT_THREADS))
    if not value.isdigit() or not 1 <= int(value) <= MAX_THREADS:
        raise ValueError(f"{THREADS_ENV} must be a whole number from 1 to {MAX_THREADS}, got {value!r:.20}")
    torch.set_num_threads(int(value))


# ---- train


def train_command(args: argparse.Namespace) -> None:
    """Train, showing progress on stderr; print the result as one JSON line and save the checkpoint if asked."""
    chosen = {s.name: getattr(args, s.name) for s in settings.SETTINGS.values() if s.flag is not None}
    model_config, data_config, train_config = run_configs(chosen, shared=False)
    pick_device(train_config.device)
    if args.out:
        _check_out(args.out, model_config)
    trainer = Trainer(model_config, data_config, train_config)
    print(
        f"training {data_config.task}, lengths {data_config.min_len}-{data_config.max_len}: "
        f"{trainer.model.num_parameters():,} parameters on {trainer.device} (Ctrl-C stops)",
        file=sys.stderr,
    )
    stop = threading.Event()
    with _ctrl_c_sets(stop):
        result = trainer.run(_show_row, stop.is_set)
    out = None
    if args.out:
        history, train_settings = trainer.history, asdict(train_config)
        out = str(save_checkpoint(args.out, trainer.model, trainer.vocab, data_config, history, train_settings))
    print(json.dumps({"task": data_config.task, **asdict(result), "out": out}))


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


# ---- predict and evaluate


def predict_command(args: argparse.Namespace) -> int:
    """Print the model's output for the sequence, or one line for each line of --input: blank for a blank line
    or a bad one (reported on stderr)."""
    if (args.sequence is None) == (args.input is None):
        raise ValueError('give either a sequence, e.g. "3 1 4", or --input FILE')
    checkpoint = load_checkpoint(args.checkpoint)
    encode = partial(checkpoint.vocab.encode, max_len=checkpoint.config.longest_sequence)
    lines = [encode(args.sequence)] if args.sequence is not None else _read_sources(args.input, encode)
    sources = [ids for ids in lines if ids]
    if not sources:
        raise ValueError(f"{args.input} holds no valid sequence to predict")
    _note_untrained_lengths(checkpoint.task, sources)
    outputs = iter(_decode(checkpoint, sources, args.beam))
    for ids in lines:
        print(printable(checkpoint.vocab.decode(next(outputs))) if ids else "")
    return 1 if any(ids is None for ids in lines) else 0


def _read_sources(path: str, encode: Callable[[str], list[int]]) -> list[list[int] | None]:
    """Token ids of each line of a file: [] for a blank line, None for a bad one (reported on stderr).

    ValueError, before anything is read, unless `path` is an ordinary file within the size and line limits.
    """
    lines = []
    if not stat.S_ISREG(os.stat(path).st_mode):  # a folder, or a device or pipe that may block or never end
        raise ValueError(f"--input {path} is not an ordinary file")
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size > MAX_INPUT_BYTES:
            raise ValueError(f"--input {path} is larger than {MAX_INPUT_BYTES // 2**20} MB")
        for n, raw in enumerate(f, 1):
            if n > MAX_INPUT_LINES:
                raise ValueError(f"--input {path} has more than {MAX_INPUT_LINES:,} lines")
            try:
                line = raw.decode("utf-8")
                lines.append(encode(line) if line.strip() else [])
            except UnicodeDecodeError:
                print(f"line {n}: not UTF-8 text", file=sys.stderr)
                lines.append(None)
            except ValueError as err:
                print(f"line {n}: {printable(err)}", file=sys.stderr)
                lines.append(None)
    return lines


def _note_untrained_lengths(task: DataConfig, sources: list[list[int]]) -> None:
    """A note on stderr when some inputs are shorter or longer than any the model was trained on."""
    outside = sum(not task.min_len <= len(ids) <= task.max_len for ids in sources)
    if outside:
        print(
            f"note: {outside} of {len(sources)} inputs are outside the lengths {task.min_len}-{task.max_len} the "
            f"model was trained on; expect mistakes there",
            file=sys.stderr,
        )


def _decode(checkpoint: Checkpoint, sources: list[list[int]], beam: int | None) -> Iterator[list[int]]:
    """Output ids for each source: beam search one at a time, or greedy decoding in batches."""
    model, vocab = checkpoint.model, checkpoint.vocab
    longest = checkpoint.config.longest_sequence
    if beam is not None:
        for ids in sources:
            yield beam_search(model, torch.tensor([ids]), vocab.bos_id, vocab.eos_id, longest, beam)[0]
        return
    for i in range(0, len(sources), DECODE_CHUNK):
        src = pad_sequence([torch.tensor(ids) for ids in sources[i : i + DECODE_CHUNK]], True, vocab.pad_id)
        yield from greedy_decode(model, src, vocab.bos_id, vocab.eos_id, longest).tolist()


def evaluate_command(args: argparse.Namespace) -> None:
    """Print, as JSON, the model's loss, token accuracy and greedy exact-match on its run's held-out set, which
    training never drew, and on fresh random sequences of its task, which short ones may share with training."""
    checkpoint = load_checkpoint(args.checkpoint)
    model, vocab = checkpoint.model, checkpoint.vocab
    data = TaskData(checkpoint.task, vocab)
    lengths = _length_range(args.lengths) if args.lengths else None
    held_out = evaluate(model, data.valid, vocab.bos_id, vocab.eos_id)
    fresh = evaluate(model, data.fresh_examples(args.n, args.seed), vocab.bos_id, vocab.eos_id)
    check_finite(torch.tensor([*held_out.values(), *fresh.values()]))  # NaN is no JSON: one error line instead
    scores = {
        "task": checkpoint.task.task,
        "held_out": {"n": data.valid.src.size(0), **held_out},
        "fresh": {"n": args.n, "seed": args.seed, **fresh},
    }
    if lengths:
        report = score_lengths(model, vocab, checkpoint.task, lengths, min(args.n, MAX_PER_LENGTH), args.seed)
        scores["by_length"] = report.scores.to_dict(orient="records")
    print(json.dumps(scores))


def _length_range(text: str) -> range:
    """ "LOW-HIGH" (or one length) -> range(LOW, HIGH + 1)."""
    match = re.fullmatch(r"\s*(\d{1,3})\s*(?:-\s*(\d{1,3})\s*)?", text)
    if match is None or int(match[2] or match[1]) < int(match[1]):
        raise ValueError(f"--lengths must read LOW-HIGH, like 1-20, got {text!r:.30}")
    return range(int(match[1]), int(match[2] or match[1]) + 1)


def ablate_command(args: argparse.Namespace) -> None:
    """Print, as JSON, the held-out scores of the model intact and with each attention head removed alone, or with
    the --heads removed together."""
    if args.n is not None and args.n < 1:
        raise ValueError(f"--n must be at least 1, got {args.n}")
    checkpoint = load_checkpoint(args.checkpoint)
    model, vocab, task = checkpoint.model, checkpoint.vocab, checkpoint.task
    if args.heads is not None:
        heads = knockout.parse_heads(args.heads, model)
        print(json.dumps(knockout.knockout_set(model, vocab, task, heads, args.ablation, args.n)))
    else:
        print(json.dumps(knockout.grid_dict(knockout.knockout_grid(model, vocab, task, args.ablation, args.n))))


def patch_command(args: argparse.Namespace) -> None:
    """Print, as JSON, how much of the clean answer's log-probability each head's output and the residual stream
    at each layer and position bring back into the corrupted run (see transformer.patching)."""
    checkpoint = load_checkpoint(args.checkpoint)
    grid = patching.patching_grid(checkpoint.model, checkpoint.vocab, checkpoint.task, args.clean, args.corrupt)
    print(json.dumps(patching.grid_dict(grid), allow_nan=False))  # strict JSON: NaN is refused, not printed


def bench_command(args: argparse.Namespace) -> None:
    """Run the benchmarks of `transformer.bench`."""
    bench.run(args.quick, args.device)
