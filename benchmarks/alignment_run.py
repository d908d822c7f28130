"""When does a run's best cross-attention head find the task's algorithm? Retrains the shipped reverse model's
command (docs/cli.md, shipped checkpoints) with attention snapshots, as the Train page records them, and prints
the step at which the best head's alignment on the probe input first reaches each threshold, as JSON; then, for
the shipped checkpoint itself, each head's attention on the ideal source token and within one position of it,
averaged over its first 256 held-out inputs.

    TRANSFORMER_THREADS=1 python benchmarks/alignment_run.py

About 5-10 minutes of one core. The shipped files drew their starting weights another way (docs/cli.md), so this is
a rerun of their command, a model of the same kind, not the shipped one itself.
"""

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo root: the package

import torch  # noqa: E402

from transformer.alignment import alignment_series, best_head, found_at, ideal_alignment  # noqa: E402
from transformer.checkpoint import load_checkpoint  # noqa: E402
from transformer.model import ModelConfig  # noqa: E402
from transformer.tasks import DataConfig, TaskData  # noqa: E402
from transformer.training import TrainConfig, Trainer  # noqa: E402
from transformer.vocab import N_SPECIAL  # noqa: E402

THRESHOLDS = (0.5, 0.6, 0.9)
SHIPPED = Path(__file__).resolve().parent.parent / "checkpoints" / "reverse.pt"


def main() -> None:
    torch.set_num_threads(int(os.environ.get("TRANSFORMER_THREADS", "1")))
    data = DataConfig(task="reverse", min_len=1, max_len=10, seed=0)
    train = TrainConfig(steps=5000, time_budget_s=3600, early_stop=False, ema_decay=0.0, record_attention=True)
    trainer = Trainer(ModelConfig(vocab_size=data.n_symbols + N_SPECIAL), data, train)
    trainer.run()
    snapshots = trainer.attention_snapshots
    steps = [s["step"] for s in snapshots]
    series = alignment_series("reverse", trainer.data.valid_sources[0], [s["maps"]["cross"] for s in snapshots])
    best = best_head(series)
    scores = [score for _, score in best]
    solved = next((row["step"] for row in trainer.history if row["exact_match"] == 1.0), None)
    report = {
        "probe": trainer.data.valid_sources[0],
        "first_step_at": {str(t): found_at(steps, scores, t) for t in THRESHOLDS},
        "best_head_at_end": {"head": best[-1][0], "score": round(best[-1][1], 3)},
        "highest": round(max(scores), 3),
        "first_row_with_every_probe_sequence_right": solved,
    }
    print(json.dumps(report))
    print(json.dumps(shipped_heads()))


@torch.no_grad()
def shipped_heads(n: int = 256) -> dict:
    """Per cross-attention head of the shipped reverse model: the mean weight, over output tokens and inputs, on the
    ideal source token and on it and its two neighbours."""
    checkpoint = load_checkpoint(SHIPPED)
    data = TaskData(checkpoint.task, checkpoint.vocab)
    on, near = torch.zeros(checkpoint.config.n_heads), torch.zeros(checkpoint.config.n_heads)
    sources = data.valid_sources[:n]
    for source in sources:
        batch = data.make_batch([source])
        _, maps = checkpoint.model(batch.src, batch.tgt_in, return_attention=True)
        weights = maps["cross"][0][0, :, : len(source)]  # (H, n, n): the rows that have an ideal source token
        ideal = ideal_alignment("reverse", source, len(source))  # (n, n)
        band = torch.zeros_like(ideal)
        for i, j in enumerate(ideal.argmax(dim=1).tolist()):
            band[i, max(0, j - 1) : j + 2] = 1.0
        on += (weights * ideal).sum(-1).mean(-1)
        near += (weights * band).sum(-1).mean(-1)
    return {
        "on_the_ideal_token": [round(x, 3) for x in (on / len(sources)).tolist()],
        "within_one": [round(x, 3) for x in (near / len(sources)).tolist()],
    }


if __name__ == "__main__":
    main()
