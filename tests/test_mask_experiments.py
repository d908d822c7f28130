"""What the masks are for (transformer/mask_experiments.py): each mask as a grid, attention with and without its
masks, and the two experiments that change an input where a mask should hide the change."""

from pathlib import Path

import pytest
import torch

from tests.helpers.models import hooks_left, random_model
from transformer.checkpoint import load_checkpoint
from transformer.inspection import padded_pair, random_pair
from transformer.mask_experiments import (
    CHANGED_TOLERANCE,
    MaskingResult,
    attention_before_after,
    mask_grids,
    pad_more,
    peek_at_future,
)
from transformer.model import Transformer
from transformer.pairs import pairs_from_rows
from transformer.tasks import DataConfig, TaskData, task_of
from transformer.vocab import Vocab

VOCAB = Vocab.digits(10)
TASK = DataConfig(task="reverse", min_len=2, max_len=7)


@pytest.fixture(scope="module")
def model() -> Transformer:
    return random_model(n_layers=2)


def test_peek_at_future_changes_earlier_outputs_only_without_causal_mask(model):
    src_ids, tgt_ids = random_pair(TASK, VOCAB, 6, seed=3)
    result = peek_at_future(model, VOCAB, TASK, src_ids, tgt_ids, change_at=len(tgt_ids))
    assert result.measure == "probability"
    old, new = VOCAB.tokens([tgt_ids[-1], 3 + (tgt_ids[-1] - 3 + 1) % 10])
    assert result.description == f"decoder input position {len(tgt_ids)}: {old} → {new}"
    assert len(result.with_mask) == len(tgt_ids)  # BOS and every target position before the changed one
    assert result.with_mask["input token"].iloc[0] == "BOS"
    assert MaskingResult.n_changed(result.with_mask) == 0
    assert MaskingResult.max_diff(result.with_mask) < CHANGED_TOLERANCE
    assert MaskingResult.n_changed(result.without_mask) > 0
    assert MaskingResult.max_diff(result.without_mask) > 1e-3
    for bad in (0, len(tgt_ids) + 1):
        with pytest.raises(ValueError, match="change position"):
            peek_at_future(model, VOCAB, TASK, src_ids, tgt_ids, bad)


WORDS = [(f"line {i}", f"{a} {b}", f"{b.upper()} {a.upper()}") for i, (a, b) in enumerate(zip("abcde", "edcba"), 1)]


@pytest.mark.parametrize(
    "task",
    [DataConfig("add", 3, 5, 4), DataConfig("translate", 3, 5, 4), DataConfig.from_pairs(pairs_from_rows(WORDS, "w"))],
)
def test_peek_at_future_changes_a_token_into_another_its_targets_hold(task):
    """The last symbol a target holds is followed by symbols only sources hold (add's +, translate's and a task from
    examples' source words): the change goes round to the first a target holds."""
    data = TaskData(task)
    model = random_model(vocab_size=len(data.vocab), max_len=16)
    targets = task_of(task).target_symbols(task.n_symbols)
    src_ids, tgt_ids = random_pair(task, data.vocab, 6, seed=0)
    for symbol in targets:
        tgt_ids[-1] = data.vocab.symbol_id(symbol)
        result = peek_at_future(model, data.vocab, task, src_ids, tgt_ids, change_at=len(tgt_ids))
        new = data.vocab.symbols.index(str(result.description).rsplit(" → ", 1)[1])
        assert new in targets and new != symbol, (data.vocab.symbols[symbol], data.vocab.symbols[new])


def test_peek_at_future_refuses_a_task_whose_targets_hold_one_symbol(model):
    rows = [(f"line {i}", a, "yes") for i, a in enumerate("01234", 1)]
    task = DataConfig.from_pairs(pairs_from_rows(rows, "yes"))
    vocab = TaskData(task).vocab
    with pytest.raises(ValueError, match="no other symbol"):
        peek_at_future(model, vocab, task, vocab.encode("1"), vocab.encode("yes"), change_at=1)


def test_pad_more_is_invisible_only_with_padding_masks(model):
    src_ids, tgt_ids = random_pair(TASK, VOCAB, 6, seed=4)
    result = pad_more(model, VOCAB, src_ids, tgt_ids, extra=4)
    assert result.measure == "logit" and len(result.with_mask) == len(tgt_ids) + 1
    assert MaskingResult.max_diff(result.with_mask) < 1e-5
    assert MaskingResult.max_diff(result.without_mask) > 1e-4
    assert result.with_mask["output before"].tolist() == result.with_mask["output after"].tolist()
    with pytest.raises(ValueError, match="max_len"):
        pad_more(model, VOCAB, src_ids, tgt_ids, extra=model.config.max_len)
    with pytest.raises(ValueError):
        pad_more(model, VOCAB, src_ids, tgt_ids, extra=0)


def test_pad_more_on_a_confident_model_counts_float_rounding_as_no_change():
    checkpoint = load_checkpoint(Path(__file__).resolve().parent.parent / "checkpoints" / "copy.pt")
    vocab = checkpoint.vocab
    ids = vocab.encode("6 0 4 8")
    result = pad_more(checkpoint.model, vocab, ids, ids, 3)
    assert MaskingResult.max_diff(result.with_mask) < 1e-3  # float32 rounding of logits around 20 ...
    assert MaskingResult.n_changed(result.with_mask) == 0  # ... is not a change
    assert MaskingResult.n_changed(result.without_mask) > 0


def test_masks_and_attention_before_after(model):
    src, tgt = padded_pair([5, 6, 7], [7, 6, 5], VOCAB, width=6)
    assert src.tolist() == [[5, 6, 7, 0, 0, 0]] and tgt.tolist() == [[1, 7, 6, 5, 0, 0, 0]]
    grids = mask_grids(src, tgt, VOCAB.pad_id)
    assert grids["padding"].shape == (6, 6) and grids["padding"][:, :3].all() and not grids["padding"][:, 3:].any()
    assert grids["cross"].shape == (7, 6)
    assert torch.equal(grids["causal"], torch.ones(7, 7, dtype=torch.bool).tril())
    assert torch.equal(grids["combined"], grids["causal"] & torch.tensor([True] * 4 + [False] * 3))
    weights = attention_before_after(model, src, tgt)
    for kind, mask in (("encoder", grids["padding"]), ("decoder_self", grids["combined"]), ("cross", grids["cross"])):
        for masked, unmasked in zip(weights.masked[kind], weights.unmasked[kind], strict=True):
            assert masked.shape == unmasked.shape == (1, model.config.n_heads, *mask.shape)
            assert (masked[..., ~mask] == 0).all() and (unmasked[..., ~mask] > 0).all()
            renormalized = unmasked * mask / (unmasked * mask).sum(-1, keepdim=True)
            torch.testing.assert_close(renormalized, masked)
    assert hooks_left(model) == 0
    with pytest.raises(ValueError):
        padded_pair([5, 6, 7], [7], VOCAB, width=2)
