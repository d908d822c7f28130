"""`python -m transformer predict|evaluate|ablate|patch CHECKPOINT ...`: what the command line does with a saved
model, whatever its task: decode sequences, score it on held-out data, knock out its heads, patch its activations."""

import argparse
import json
import os
import re
import stat
import sys
from collections.abc import Callable, Iterator
from functools import partial

import torch
from torch.nn.utils.rnn import pad_sequence

from . import knockout, patching
from .checkpoint import Checkpoint, load_checkpoint
from .decoding import beam_search, greedy_decode
from .evaluation import evaluate
from .lengths import score_lengths
from .limits import MAX_INPUT_BYTES, MAX_INPUT_LINES, MAX_PER_LENGTH
from .literal import printable
from .model import check_finite
from .tasks import DataConfig, TaskData

DECODE_CHUNK = 256  # sequences greedy-decoded at once by `predict --input`


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
    training never drew, and on fresh random sequences of its task, which short ones may share with training (a
    task from examples has no inputs but its pairs: its training pairs instead)."""
    checkpoint = load_checkpoint(args.checkpoint)
    model, vocab, task = checkpoint.model, checkpoint.vocab, checkpoint.task
    data = TaskData(task, vocab)
    lengths = _length_range(args.lengths) if args.lengths else None
    held_out = evaluate(model, data.valid, vocab.bos_id, vocab.eos_id)
    if task.pairs is None:
        name, batch, about = "fresh", data.fresh_examples(args.n, args.seed), {"n": args.n, "seed": args.seed}
    else:
        name, batch = "training", data.make_batch(data.task.train)
        about = {"n": batch.src.size(0)}
    other = evaluate(model, batch, vocab.bos_id, vocab.eos_id)
    check_finite(torch.tensor([*held_out.values(), *other.values()]))  # NaN is no JSON: one error line instead
    scores = {"task": task.task, "held_out": {"n": data.valid.src.size(0), **held_out}, name: {**about, **other}}
    if lengths:
        report = score_lengths(model, vocab, task, lengths, min(args.n, MAX_PER_LENGTH), args.seed)
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
