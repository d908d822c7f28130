"""What a checkpoint carrying the largest task from examples costs the server, against a named task of the same
lengths.

Makes the largest task file a teacher may give (`class_read_bench.largest_task_file`: 1 MB of pairs of 64 symbols),
an untrained checkpoint of the Train page's model carrying it, and the same model's checkpoint of reverse at the
same lengths (64 symbols, 1,000 held-out sequences). Prints the CPU seconds (`time.process_time`, one torch thread)
of: an upload (a first load, and a load of the same file while another load holds it, as the Checkpoints page's
listing), a Knockout grid, a metric row of a run and the scoring at its end, on the model given by `--d-model`,
`--layers`, `--d-ff` and `--heads` (the Train form's largest by default).

    python benchmarks/checkpoint_task_bench.py [--d-model 128 --layers 3 --d-ff 512 --heads 8]
"""

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from class_read_bench import largest_task_file  # noqa: E402

from transformer.checkpoint import checkpoint_bytes, load_checkpoint  # noqa: E402
from transformer.evaluation import evaluate  # noqa: E402
from transformer.knockout import knockout_grid  # noqa: E402
from transformer.model import ModelConfig, Transformer  # noqa: E402
from transformer.run_configs import default_configs  # noqa: E402
from transformer.task_file import read_task_file  # noqa: E402
from transformer.tasks import DataConfig, longest_sequence  # noqa: E402
from transformer.training import Trainer  # noqa: E402
from transformer.vocab import Vocab  # noqa: E402


def cpu_s(call: Callable[[], object]) -> float:
    began = time.process_time()
    call()
    return time.process_time() - began


def measure(name: str, task: DataConfig, vocab: Vocab, args: argparse.Namespace) -> None:
    """Print the costs of a checkpoint of `task` and of a run of it."""
    config = ModelConfig(vocab_size=len(vocab), max_len=longest_sequence(task) + 1)
    data = checkpoint_bytes(Transformer(config).eval(), vocab, task)
    first = cpu_s(lambda: load_checkpoint(data))  # nothing holds it: read in full
    held = load_checkpoint(data)
    again = min(cpu_s(lambda: load_checkpoint(data)) for _ in range(3))
    grid = cpu_s(lambda: knockout_grid(held.model, held.vocab, held.task))
    model, _, train = default_configs(0, device="cpu", d_model=args.d_model, n_layers=args.layers, d_ff=args.d_ff,
                                      n_heads=args.heads, batch_size=32)  # fmt: skip
    trainer = Trainer(replace(model, vocab_size=len(vocab), max_len=config.max_len), task, train)
    trainer.step_losses.append(1.0)  # a row's training loss is the mean of the steps' losses before it
    row = min(cpu_s(lambda: trainer._row(0.0, 0.0, train.lr)) for _ in range(3))
    final = cpu_s(lambda: evaluate(trainer.model, trainer.valid, trainer.vocab.bos_id, trainer.vocab.eos_id))
    print(
        f"{name:8} upload {first:.2f} s, again while held {again:.2f} s, Knockout grid {grid:.2f} s; held-out "
        f"scored {tuple(trainer.valid.src.shape)}: metric row {row:.2f} s, scoring at the end {final:.2f} s",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for flag, default in (("--d-model", 128), ("--layers", 3), ("--d-ff", 512), ("--heads", 8)):
        parser.add_argument(flag, type=int, default=default)
    args = parser.parse_args()
    torch.set_num_threads(1)
    own = DataConfig.from_pairs(read_task_file(largest_task_file(), "largest.csv"))
    named = DataConfig("reverse", own.min_len, own.max_len, own.n_symbols)
    print(f"own task: {len(own.pairs.train) + len(own.pairs.held_out):,} pairs of {own.max_len} symbols")
    measure("own", own, Vocab(own.pairs.symbols), args)
    measure("reverse", named, Vocab.digits(own.n_symbols), args)


if __name__ == "__main__":
    main()
