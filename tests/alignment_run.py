"""When does a run's best cross-attention head find the task's algorithm? Retrains the shipped reverse model's
command (docs/cli.md, shipped checkpoints) with attention snapshots, as the Train page records them, and prints
the step at which the best head's alignment on the probe input first reaches each threshold, as JSON.

    TRANSFORMER_THREADS=1 python tests/alignment_run.py

About 5-10 minutes of one core. The shipped files drew their starting weights another way (docs/cli.md), so this is
a rerun of their command, a model of the same kind, not the shipped one itself.
"""

import json
import os

import torch

from transformer.alignment import alignment_series, best_head, found_at
from transformer.model import ModelConfig
from transformer.tasks import DataConfig
from transformer.training import TrainConfig, Trainer
from transformer.vocab import N_SPECIAL

THRESHOLDS = (0.5, 0.6, 0.9)


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


if __name__ == "__main__":
    main()
