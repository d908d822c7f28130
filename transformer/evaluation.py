"""Scoring a model on a batch of held-out pairs: teacher-forced loss and token accuracy, and greedy exact match, in
chunks of DECODE_ROWS rows so that the memory it takes does not grow with the batch."""

import torch
import torch.nn.functional as F

from .decoding import greedy_decode
from .limits import DECODE_ROWS
from .model import Transformer
from .tasks import Batch


@torch.no_grad()
def evaluate(model: Transformer, batch: Batch, bos_id: int, eos_id: int, decode: bool = True) -> dict:
    """Teacher-forced loss and token accuracy, and greedy exact-match, of `model` on `batch`.

    With `decode=False`, exact-match comes from the teacher-forced pass instead of decoding (see
    `teacher_forced_exact`) when the model has its causal mask. Scored DECODE_ROWS sequences at a time, so the
    memory it takes does not grow with the batch.
    """
    was_training = model.training
    model.eval()
    pad, n = model.config.pad_id, batch.src.size(0)
    loss, right, tf_exact = 0.0, 0, 0
    for i in range(0, n, DECODE_ROWS):
        chunk = rows_of(batch, i, i + DECODE_ROWS)
        logits = model(chunk.src, chunk.tgt_in)  # (b, T, V)
        loss += F.cross_entropy(logits.flatten(0, 1), chunk.tgt_out.flatten(), ignore_index=pad, reduction="sum")
        right += ((logits.argmax(-1) == chunk.tgt_out) & (chunk.tgt_out != pad)).sum()
        tf_exact += int(teacher_forced_exact(logits, chunk, pad).sum())
    real = (batch.tgt_out != pad).sum()
    if decode or not model.config.causal_mask:
        exact = exact_match(model, batch, bos_id, eos_id)
    else:
        exact = tf_exact / n
    model.train(was_training)
    # a count over a count in Python's float: 999/1000 is 0.999, not float32's 0.9990000128746033
    return {"val_loss": (loss / real).item(), "token_acc": int(right) / int(real), "exact_match": exact}


@torch.no_grad()
def exact_match(model: Transformer, batch: Batch, bos_id: int, eos_id: int, stop_at_first_miss: bool = False) -> float:
    """Fraction of sequences greedy decoding gets exactly right (output and EOS), scored DECODE_ROWS at a time."""
    right = 0
    for i in range(0, batch.src.size(0), DECODE_ROWS):
        src, want = batch.src[i : i + DECODE_ROWS], batch.tgt_out[i : i + DECODE_ROWS]
        got = greedy_decode(model, src, bos_id, eos_id, want.size(1))
        got = F.pad(got, (0, want.size(1) - got.size(1)), value=model.config.pad_id)
        chunk_right = int((got == want).all(dim=1).sum())
        right += chunk_right
        if stop_at_first_miss and chunk_right < src.size(0):
            break
    return right / batch.src.size(0)


def teacher_forced_exact(logits: torch.Tensor, batch: Batch, pad_id: int) -> torch.Tensor:
    """(B,) whether the teacher-forced argmax (logits (B, T, V)) is right at every real position of each row.

    For a model with the causal mask this is greedy exact-match without decoding: greedy decoding reproduces a
    target exactly when, and only when, the argmax after each true prefix is the next true token (by induction
    over the prefix), up to float rounding between the cached and the full forward pass on near-ties.
    """
    return ((logits.argmax(-1) == batch.tgt_out) | (batch.tgt_out == pad_id)).all(dim=1)


def rows_of(batch: Batch, start: int, stop: int) -> Batch:
    """Rows start..stop of a batch."""
    return Batch(batch.src[start:stop], batch.tgt_in[start:stop], batch.tgt_out[start:stop], 0)
