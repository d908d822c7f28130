"""Command line: `python -m transformer {train,predict,evaluate,ablate,patch,bench} ...` (see `--help` of each): the
parser and `main` here, each command in `cli_train` (train) or `cli_model` (the commands on a saved model).

Torch computes on 2 CPU threads; the environment variable TRANSFORMER_THREADS sets another count.
Exit status: 0 done, 1 some lines of a `predict --input` file failed, 2 bad settings, sequence or checkpoint
(reported as `error: <message>` on stderr), 130 interrupted.
"""

import argparse
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path

import torch

from . import bench, knockout, settings
from .cli_model import ablate_command, evaluate_command, patch_command, predict_command
from .cli_train import train_command
from .limits import MAX_BEAM, MAX_FRESH, MAX_SEED, MAX_THREADS
from .literal import printable

THREADS_ENV = "TRANSFORMER_THREADS"
DEFAULT_THREADS = 2


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, `error: ...`, and exit status 2."""

    def error(self, message: str):
        print(f"error: {printable(message)}", file=sys.stderr)
        raise SystemExit(2)


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
        epilog=__doc__.split("\n\n", 1)[1],
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


_TASK_FILE_HELP = (
    "learn the task of a CSV or TSV file of source,target pairs, symbols separated by spaces (docs/cli.md); its "
    "pairs set the lengths, symbols and held-out set, so --task, --min-len, --max-len, --n-symbols and --n-valid "
    "do not apply"
)
# `train`'s groups of options: a setting's by its first config.
_TRAIN_GROUPS = {"data": "task and data", "model": "model", "train": "training", "output": "output"}
# `train`'s options that set no setting: group, flag, its value's name, help, and what docs/cli.md's table says.
_TRAIN_MORE = (
    ("data", "--task-file", "FILE", _TASK_FILE_HELP, "a CSV or TSV of pairs (see [Tasks](#tasks))"),
    ("output", "--out", "FILE", "checkpoint file to save, e.g. checkpoints/reverse.pt", "the checkpoint file to save"),
)


def _add_train(p: argparse.ArgumentParser) -> None:
    """Every setting with a flag (`transformer.settings`), in groups by config, each from its config's default."""
    groups = {config: p.add_argument_group(title) for config, title in _TRAIN_GROUPS.items()}
    for s in settings.SETTINGS.values():
        if s.flag is not None:
            _add_setting(groups[s.configs[0]], s)
    for group, flag, metavar, text, _ in _TRAIN_MORE:
        groups[group].add_argument(flag, metavar=metavar, help=text)
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


DOCS = Path(__file__).resolve().parent.parent / "docs" / "cli.md"  # its table of `train` options comes from here
_TABLE_START = "<!-- train options: made by transformer/cli.py from transformer/settings.py -->"
_TABLE_END = "<!-- end of train options -->"
REWRITE_DOCS = 'python -c "import transformer.cli as cli; cli.write_options_table()"'


def options_table() -> str:
    """docs/cli.md's table of `train` options, a row per group: each setting's flag, label, choices and default
    (its config's), then the other options."""
    cells = {config: [] for config in _TRAIN_GROUPS}
    for s in settings.SETTINGS.values():
        if s.flag is not None:
            cells[s.configs[0]].append(_option_cell(s))
    for group, flag, metavar, _, words in _TRAIN_MORE:
        cells[group].append(f"`{flag} {metavar}` {words}")
    rows = [f"| {title.capitalize()} | {'; '.join(cells[config])} |" for config, title in _TRAIN_GROUPS.items()]
    return "\n".join(["| Group | Options (default) |", "|---|---|", *rows])


def _option_cell(s: settings.Setting) -> str:
    """Setting `s` in the options table: its flags, label, a choice's values, and its default."""
    default = settings.config_default(s)
    label = "" if s.label == s.name else f" {s.label}"
    if s.kind == "bool":
        if s.off_flag:
            return f"`{s.flag}` / `{s.off_flag}`{label} ({s.word(default)})"
        return f"`--[no-]{s.flag.removeprefix('--')}`{label} ({'on' if default else 'off'})"
    shown = "auto" if default is None else default if isinstance(default, str) else f"{default:g}"
    choices = f": {', '.join(map(str, s.options))}" if s.options else ""
    return f"`{s.flag}`{label}{choices} ({shown})"


def with_options_table(text: str) -> str:
    """`text` (docs/cli.md) with the table between its two markers made anew by `options_table`."""
    head, rest = text.split(_TABLE_START + "\n", 1)
    _, tail = rest.split(_TABLE_END, 1)
    return f"{head}{_TABLE_START}\n{options_table()}\n{_TABLE_END}{tail}"


def write_options_table(path: Path = DOCS) -> None:
    """Rewrite the table of `train` options in docs/cli.md from the settings."""
    path.write_text(with_options_table(path.read_text(encoding="utf-8")), encoding="utf-8")


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


def bench_command(args: argparse.Namespace) -> None:
    """Run the benchmarks of `transformer.bench`."""
    bench.run(args.quick, args.device)
