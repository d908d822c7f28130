"""The worker protocol's wire: what a message carries across the pipe."""

import pickle
from multiprocessing import Pipe

import torch

from transformer.serving.protocol import NewRow, receive, send


def test_tensors_cross_the_pipe_as_their_values_and_a_view_as_its_own_values_alone():
    storage = torch.arange(10_000, dtype=torch.float32)  # 40 KB: the message fits the pipe's buffer either way
    weights = {
        "weight": torch.randn(3, 4),
        "transposed": torch.randn(4, 3).t(),
        "view": storage[10:20],
        "count": torch.tensor(7),
        "mask": torch.tensor([True, False]),
        "bfloat16": torch.ones(2, dtype=torch.bfloat16),  # no numpy dtype: torch's own reduction
    }
    ours, theirs = Pipe()
    send(theirs, NewRow(0, {"step": 25.0}, weights, {}))
    raw = ours.recv_bytes()
    back = pickle.loads(raw).weights
    for name, tensor in weights.items():
        assert back[name].dtype == tensor.dtype and torch.equal(back[name], tensor), name
    back["weight"].add_(1)  # the server owns what it reads: writable, shared with nothing of the worker's
    assert len(raw) < storage.nbytes  # the view's ten values, not the storage under it
    send(theirs, NewRow(0, {"step": 50.0}, {"view": storage[:3]}, {}))
    assert torch.equal(receive(ours).weights["view"], storage[:3])
