"""A few held-out examples decoded by the model as it trains, each marked right or wrong."""

import pandas as pd
import torch

from .decoding import greedy_decode
from .i18n import N_, Message
from .model import Transformer
from .tasks import TaskData

# The columns, in the order every table of them shows: the verdict first, the answer beside its input (on a phone)
COLUMNS = (N_("right"), N_("input"), N_("model output"), N_("target"))


@torch.no_grad()
def live_examples(model: Transformer, data: TaskData, n: int = 5) -> pd.DataFrame:
    """The first `n` held-out inputs, their targets, and `model`'s greedy outputs, each marked right or wrong."""
    vocab, rows = data.vocab, min(n, len(data.valid_sources))
    batch = data.make_batch(data.valid_sources[:rows])
    device = next(model.parameters()).device
    got = greedy_decode(model, batch.src.to(device), vocab.bos_id, vocab.eos_id, batch.tgt_out.size(1)).cpu()
    width = batch.tgt_out.size(1)
    got = torch.nn.functional.pad(got, (0, width - got.size(1)), value=vocab.pad_id)
    right = (got == batch.tgt_out).all(dim=1).tolist()
    columns = {
        "right": ["✓" if ok else "✗" for ok in right],  # plain glyphs: every font has them
        "input": [vocab.decode(ids) for ids in batch.src.tolist()],
        "model output": [vocab.decode(ids) or Message(N_("(nothing)")) for ids in got.tolist()],
        "target": [vocab.decode(ids) for ids in batch.tgt_out.tolist()],
    }
    return pd.DataFrame({name: columns[name] for name in COLUMNS}, dtype=object)  # object: Messages kept (pandas 3)
