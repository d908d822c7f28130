"""Decoding: turning the model's next-token distributions into output sequences."""

import torch

from .model import Transformer


@torch.no_grad()
def greedy_decode(model: Transformer, src: torch.Tensor, bos_id: int, eos_id: int, max_len: int) -> torch.Tensor:
    """Batched greedy decoding: (B, S) source ids -> (B, <= max_len) output ids, BOS dropped, PAD after EOS.

    The encoder runs once; the decoder runs one token per step on a key/value cache. Stops when every sequence
    has produced EOS, or after `max_len` tokens.
    """
    if max_len < 1:
        raise ValueError("max_len must be at least 1")
    max_len = min(max_len, model.config.max_len - 1)
    pad = model.config.pad_id
    src_mask = model.src_mask(src)
    memory, _ = model.encode(src, src_mask)
    cache = model.new_cache()
    token = torch.full((src.size(0), 1), bos_id, dtype=torch.long, device=src.device)  # (B, 1)
    done = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
    out = []
    for step in range(max_len):
        logits, _, _ = model.decode(token, memory, src_mask, cache, start=step)
        token = logits[:, -1].argmax(dim=-1, keepdim=True)  # (B, 1)
        out.append(token.masked_fill(done[:, None], pad))
        done |= token[:, 0] == eos_id
        if bool(done.all()):
            break
    return torch.cat(out, dim=1)
