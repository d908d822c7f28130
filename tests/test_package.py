"""The package's public face and its choice of device."""

import pytest
import torch

import transformer
from transformer import checkpoint, decoding, model, vocab
from transformer.device import pick_device


def test_the_public_names_import_from_the_package():
    from transformer import ModelConfig, Transformer, Vocab, greedy_decode, load_checkpoint, save_checkpoint

    assert (ModelConfig, Transformer) == (model.ModelConfig, model.Transformer)
    assert (Vocab, greedy_decode) == (vocab.Vocab, decoding.greedy_decode)
    assert (load_checkpoint, save_checkpoint) == (checkpoint.load_checkpoint, checkpoint.save_checkpoint)
    assert all(hasattr(transformer, name) for name in transformer.__all__)


@pytest.mark.parametrize("cuda, mps, expected", [(True, True, "cuda"), (False, True, "mps"), (False, False, "cpu")])
def test_auto_picks_cuda_then_mps_then_cpu(monkeypatch, cuda, mps, expected):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)
    assert pick_device() == torch.device(expected)
    assert pick_device("cpu") == torch.device("cpu")  # a named device overrides the choice


@pytest.mark.parametrize(
    "name, message",
    [
        ("banana", "unknown device 'banana'"),
        ("xpu", "unknown device 'xpu'"),  # devices PyTorch names but the lab never computes on
        ("hpu:0", "unknown device 'hpu:0'"),
        ("cuda", "no CUDA GPU"),
        ("mps", "MPS was asked for"),
    ],
)
def test_an_unknown_or_missing_device_is_a_clear_error(monkeypatch, name, message):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    with pytest.raises(ValueError, match=message):
        pick_device(name)
