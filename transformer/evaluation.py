"""Scoring a model on a batch of held-out pairs: teacher-forced loss and token accuracy, and greedy exact match, in
chunks of DECODE_ROWS rows so that the memory it takes does not grow with the batch."""

import torch
import torch.nn.functional as F

from .decoding import greedy_decode
from .i18n import N_
from .limits import DECODE_ROWS
from .model import Transformer
from .tasks import Batch

# Said beside the token accuracy of a model trained without its causal mask, which teacher forcing makes meaningless.
PEEKED = N_(
    "Without the causal mask, token accuracy is scored with the right answer fed to the decoder, which can read the "
    "token it must predict: it says nothing of what the model writes on its own. Exact match decodes one token at a "
    "time, as the model must when it is used."
)


@torch.no_grad()
def evaluate(model: Transformer, batch: Batch, bos_id: int, eos_id: int, decode: bool = True) -> dict:
    """Teacher-forced loss and token accuracy, and greedy exact-match, of `model` on `batch`.

    With `decode=False`, exact-match comes from the teacher-forced pass instead of decoding (see
    `teacher_forced_exact`) when the model has its causal mask. Scored DECODE_ROWS sequences at a time, so the
    memory it takes does not grow with the batch.
    """
    was_training = model.training
    model.eval()
    sums = [_sums(model(chunk.src, chunk.tgt_in), chunk, model.config.pad_id) for chunk in _chunks(batch)]
    scores = _scores(sums, batch, model.config.pad_id)
    if decode or not model.config.causal_mask:
        scores["exact_match"] = exact_match(model, batch, bos_id, eos_id)
    model.train(was_training)
    return scores


def _chunks(batch: Batch) -> list[Batch]:
    return [rows_of(batch, i, i + DECODE_ROWS) for i in range(0, batch.src.size(0), DECODE_ROWS)]


def _sums(logits: torch.Tensor, chunk: Batch, pad_id: int) -> tuple[torch.Tensor, torch.Tensor, int]:
    """A chunk's summed loss, its right tokens and its rows right at every token, from its logits (b, T, V)."""
    loss = F.cross_entropy(logits.flatten(0, 1), chunk.tgt_out.flatten(), ignore_index=pad_id, reduction="sum")
    right = ((logits.argmax(-1) == chunk.tgt_out) & (chunk.tgt_out != pad_id)).sum()
    return loss, right, int(teacher_forced_exact(logits, chunk, pad_id).sum())


def _scores(sums: list[tuple[torch.Tensor, torch.Tensor, int]], batch: Batch, pad_id: int) -> dict:
    """`evaluate`'s scores from its chunks' `_sums`, exact match teacher-forced."""
    loss, right, tf_exact = (sum(column) for column in zip(*sums))
    real = (batch.tgt_out != pad_id).sum()
    # a count over a count in Python's float: 999/1000 is 0.999, not float32's 0.9990000128746033
    return {
        "val_loss": (loss / real).item(),
        "token_acc": int(right) / int(real),
        "exact_match": tf_exact / len(batch.src),
    }


class HeldOutCheck:
    """The early-stop check of a run whose model has its causal mask: whether the model gets every sequence of the
    held-out set right, teacher-forced (the verdict of greedy decoding, see `teacher_forced_exact`).

    A run checks many times before it passes, each time the model gets a training batch right, and each check
    ends at the first chunk of DECODE_ROWS with a miss. The rows the last check missed go first, on their own: while
    one of them is still wrong (most checks), the check costs a pass over those few. The check that passes keeps its
    chunks' logits, so that `scores` are `evaluate`'s, without a second pass over the set.
    """

    def __init__(self, held_out: Batch, pad_id: int):
        self.held_out, self.pad_id = held_out, pad_id
        self.missed: torch.Tensor | None = None  # indices of the rows the last check found wrong
        self.scores: dict | None = None  # `evaluate(..., decode=False)`'s, once a check has passed

    @torch.no_grad()
    def __call__(self, model: Transformer) -> bool:
        """Whether `model` (in eval mode) gets the whole held-out set right."""
        if self.missed is not None:
            held = self.held_out
            again = Batch(held.src[self.missed], held.tgt_in[self.missed], held.tgt_out[self.missed], 0)
            right = teacher_forced_exact(model(again.src, again.tgt_in), again, self.pad_id)
            if not right.all():
                self.missed = self.missed[~right]  # those still wrong
                return False
        passed = []
        for start, chunk in zip(range(0, self.held_out.src.size(0), DECODE_ROWS), _chunks(self.held_out)):
            logits = model(chunk.src, chunk.tgt_in)
            right = teacher_forced_exact(logits, chunk, self.pad_id)
            if not right.all():
                self.missed = (~right).nonzero().squeeze(1) + start
                return False
            passed.append((logits, chunk))
        self.scores = _scores(
            [_sums(logits, chunk, self.pad_id) for logits, chunk in passed], self.held_out, self.pad_id
        )
        return True


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
