"""The key/value cache of step-by-step decoding: what each decoder layer keeps so a step reads only its new token.

Each step of greedy or beam decoding feeds the decoder the newest token alone. Its self-attention still needs
the keys and values of every earlier target position, and its encoder-decoder attention those of the encoder
memory, which never change: both are kept here rather than computed again at every step.
"""

import torch


class KVCache:
    """What step-by-step decoding keeps between steps (from `Transformer.new_cache`).

    Per decoder layer, the keys and values of the encoder memory ("cross", (B, H, S, d_k)) and of the target
    positions so far ("self", (B, H, t, d_k)), or, where those would go stale, the target tokens so far instead.
    Past keys and values stay exact only while no position sees a later one: with the causal mask, or with one
    layer, whose keys and values come from the embeddings alone. Without the mask, from the second layer on every
    position's keys and values depend on the tokens after it, so each step must recompute the whole prefix.
    """

    def __init__(self, n_layers: int, keeps_states: bool):
        self.keeps_states = keeps_states
        # "self": None makes each decoder layer attend over the whole prefix afresh, not through the cache
        self.layers: list[dict[str, dict[str, torch.Tensor] | None]] = [
            {} if keeps_states else {"self": None} for _ in range(n_layers)
        ]
        self.tokens: torch.Tensor | None = None  # (B, t) the target tokens so far, when the states are not kept

    def reorder(self, rows: torch.Tensor) -> None:
        """Make row i hold the past of row `rows[i]` (beam search: a kept hypothesis continues its parent's past)."""
        for layer in self.layers:
            for part in filter(None, layer.values()):  # "cross", and "self" where the states are kept
                for name in ("k", "v"):
                    part[name] = part[name].index_select(0, rows)  # (K, H, t or S, d_k)
        if self.tokens is not None:
            self.tokens = self.tokens.index_select(0, rows)  # (K, t)


def extend(cache: dict[str, torch.Tensor], k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One self-attention layer's keys and values (B, H, T, d_k) of the new positions appended to those cached of
    the earlier ones: (B, H, t + T, d_k) each, kept in `cache` for the next step."""
    if "k" in cache:
        k, v = torch.cat([cache["k"], k], dim=2), torch.cat([cache["v"], v], dim=2)
    cache["k"], cache["v"] = k, v
    return k, v
