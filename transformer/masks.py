"""Attention masks.

One convention throughout this project: a boolean mask where **True means "may attend"** (the convention of
`torch.nn.functional.scaled_dot_product_attention`). `nn.MultiheadAttention` uses the opposite one (True means
"may NOT attend"); code that talks to it inverts the mask at that boundary.

Masks broadcast against attention scores of shape (B, H, T_query, T_key).
"""

import torch


def padding_mask(ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """(B, S) token ids -> (B, 1, 1, S) mask: every query may attend to the real (non-PAD) keys only."""
    return (ids != pad_id)[:, None, None, :]


def causal_mask(size: int, device: torch.device | str | None = None, past: int = 0) -> torch.Tensor:
    """(T, past + T) look-ahead mask: the i-th of T new positions may attend to the `past` earlier ones and to new
    positions 0..i, never to the future."""
    return torch.ones(size, past + size, dtype=torch.bool, device=device).tril(past)


def decoder_mask(tgt: torch.Tensor, pad_id: int, causal: bool = True) -> torch.Tensor:
    """(B, T) target ids -> (B, 1, T, T): the padding mask, combined with the causal mask when `causal`."""
    mask = padding_mask(tgt, pad_id)  # (B, 1, 1, T)
    if causal:
        mask = mask & causal_mask(tgt.size(1), tgt.device)  # (B, 1, T, T)
    return mask.expand(-1, -1, tgt.size(1), -1)
