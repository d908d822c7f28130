"""The shipped checkpoints load, are small, and solve fresh held-out data of their task."""

from pathlib import Path

import pytest

from transformer import TaskData, load_checkpoint
from transformer.training import exact_match

CHECKPOINTS = Path(__file__).resolve().parent.parent / "checkpoints"


@pytest.mark.parametrize("task", ["copy", "reverse", "sort"])
def test_shipped_checkpoint_solves_fresh_held_out_data(task):
    path = CHECKPOINTS / f"{task}.pt"
    assert path.stat().st_size < 2 * 1024 * 1024
    checkpoint = load_checkpoint(path)
    assert checkpoint.task.task == task and checkpoint.history
    fresh = TaskData(checkpoint.task).fresh_examples(1000, seed=2026)
    vocab = checkpoint.vocab
    assert exact_match(checkpoint.model, fresh, vocab.bos_id, vocab.eos_id) == 1.0
