"""Looking inside a model: its modules and shapes, its weights, its positional encoding and its logit lens (the
masks' experiments are in `mask_experiments`). UI-free: tensors and pandas DataFrames in and out.

Functions that need hooks or a changed switch work on a private twin of the model (a deep copy), never on the
model passed in, which may be shared read-only by every user of the app.
"""

from copy import deepcopy
from dataclasses import replace

import pandas as pd
import torch
import torch.nn.functional as F

from .i18n import N_, Message
from .model import ModelConfig, MultiHeadAttention, Transformer, sinusoidal_table
from .tasks import DataConfig, TaskData, example_pair
from .vocab import Vocab

# Attention kinds as in `Transformer.forward(return_attention=True)`: name, and which sequence gives queries / keys.
ATTENTION_KINDS = {
    "encoder": (N_("encoder self-attention"), "source", "source"),
    "decoder_self": (N_("decoder self-attention"), "target", "target"),
    "cross": (N_("cross-attention (decoder → encoder)"), "target", "source"),
}


def model_device(model: Transformer) -> torch.device:
    """The device the model's weights are on."""
    return next(model.parameters()).device


def twin(model: Transformer, causal_mask: bool | None = None) -> Transformer:
    """A private deep copy of `model` in eval mode, optionally with the decoder's causal mask switched on or off
    (the model reads that switch from its config at every forward pass). Copying, unlike building a new model,
    draws nothing from the global random generator that another user's training may be seeding."""
    copy = deepcopy(model).eval()
    if causal_mask is not None:
        copy.config = replace(model.config, causal_mask=causal_mask)
    return copy


# ------------------------------------------------------------------------------------- example sequences


def random_pair(task: DataConfig, vocab: Vocab, max_len: int, seed: int) -> tuple[list[int], list[int]]:
    """A random source of the task's lengths (at most `max_len`) and its correct target, as token ids."""
    source, target = example_pair(task, max_len, seed)
    return [vocab.symbol_id(s) for s in source], [vocab.symbol_id(s) for s in target]


def sample_batch(task: DataConfig, vocab: Vocab, model_max_len: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A (1, S) source of the task's longest length and its (1, T) decoder input BOS + target, fitting the model."""
    source, target = example_pair(task, model_max_len, seed=0, longest=True)
    src_ids, tgt_ids = [vocab.symbol_id(s) for s in source], [vocab.symbol_id(s) for s in target]
    tgt_in = [vocab.bos_id, *tgt_ids][:model_max_len]
    return torch.tensor([src_ids]), torch.tensor([tgt_in])


def padded_pair(src_ids: list[int], tgt_ids: list[int], vocab: Vocab, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Source padded to `width` tokens, decoder input BOS + target padded to `width` + 1: (1, W), (1, W + 1)."""
    if width < max(len(src_ids), len(tgt_ids)):
        too_short = N_("cannot pad to {width}: the sequences have {source} and {target} tokens")
        raise ValueError(Message(too_short, width=width, source=len(src_ids), target=len(tgt_ids)))
    src = src_ids + [vocab.pad_id] * (width - len(src_ids))
    tgt = [vocab.bos_id, *tgt_ids] + [vocab.pad_id] * (width - len(tgt_ids))
    return torch.tensor([src]), torch.tensor([tgt])


# ---------------------------------------------------------------------------------------------- anatomy


POSITIONAL_KINDS = {"sinusoidal": N_("sinusoidal"), "learned": N_("learned"), "none": N_("none")}  # as tables say
PARTS = {  # the first part of a module's path -> what the parameter summary calls it
    "embed": N_("embedding"),
    "positional": N_("positional encoding"),
    "encoder": N_("encoder"),
    "decoder": N_("decoder"),
    "generator": N_("generator"),
}


def config_table(config: ModelConfig) -> pd.DataFrame:
    """The sizes and teaching switches of a model, one row each: its name in the code (`ModelConfig`'s field),
    its value and what it means."""
    if config.norm_first:
        norm, formula = N_("pre-norm"), "x + Sublayer(LayerNorm(x))"
    else:
        norm, formula = N_("post-norm (paper)"), "LayerNorm(x + Sublayer(x))"
    rows = [
        ("norm_first", norm, Message(N_("each sublayer computes {formula}"), formula=formula)),
        (
            "positional",
            Message(POSITIONAL_KINDS[config.positional]),
            N_("sinusoidal is the paper's; learned is a trained table; none gives the encoder no order"),
        ),
        ("causal_mask", config.causal_mask, N_("decoder may not look at later target positions")),
        ("scale_scores", config.scale_scores, N_("scores divided by √d_k before the softmax")),
        ("tie_weights", config.tie_weights, N_("generator shares the embedding matrix (the paper does)")),
        ("d_model", config.d_model, N_("width of every token vector")),
        ("n_heads", config.n_heads, N_("attention heads per attention block")),
        ("d_k", config.d_k, N_("width of one head: d_model / heads")),
        ("d_ff", config.d_ff, N_("inner width of the feed-forward network")),
        ("n_layers", config.n_layers, N_("encoder layers, and as many decoder layers")),
        ("dropout", config.dropout, N_("dropout rate during training")),
        ("vocab_size", config.vocab_size, N_("tokens, PAD, BOS and EOS included")),
        ("max_len", config.max_len, N_("longest sequence the positional encoding covers")),
    ]
    # object columns: the values and meanings keep their Messages (pandas 3 would store plain strings)
    cells = [(n, v if isinstance(v, Message) else str(v), m) for n, v, m in rows]
    return pd.DataFrame(cells, columns=["setting", "value", "meaning"], dtype=object)


def _paper_modules(config: ModelConfig) -> list[tuple[str, str, str]]:
    """(module path, paper name, paper section) of every part of the model, in the order data flows."""
    add_norm = N_("Norm … Add (pre-norm)") if config.norm_first else N_("Add & Norm (post-norm)")
    masked = N_("Masked Multi-Head Attention") if config.causal_mask else N_("Multi-Head Attention (causal mask OFF)")
    attention, feed_forward = N_("Multi-Head Attention"), N_("Feed Forward")
    rows = [
        ("embed", N_("Embedding (× √d_model)"), "3.4"),
        (
            "positional",
            Message(N_("Positional Encoding ({kind})"), kind=Message(POSITIONAL_KINDS[config.positional])),
            "3.5",
        ),
    ]
    sublayers = {  # each stack's sublayers in a layer, each followed by its Add & Norm (sublayer.0, .1, ...)
        "encoder": [("self_attn", attention, "3.2.2"), ("feed_forward", feed_forward, "3.3")],
        "decoder": [
            ("self_attn", masked, "3.2.3"),
            ("cross_attn", N_("Multi-Head Attention (encoder-decoder)"), "3.2.3"),
            ("feed_forward", feed_forward, "3.3"),
        ],
    }
    for stack, parts in sublayers.items():
        for i in range(config.n_layers):
            p = f"{stack}.layers.{i}"
            for j, (name, paper_name, section) in enumerate(parts):
                rows += [(f"{p}.{name}", paper_name, section), (f"{p}.sublayer.{j}", add_norm, "3.1")]
        if config.norm_first:
            rows.append((f"{stack}.norm", N_("Final LayerNorm (pre-norm)"), "3.1"))
    rows.append(("generator", N_("Linear (softmax comes after)"), "3.4"))
    return rows


def _shapes(values) -> str:
    """'1×10×32' for each non-boolean tensor among `values`, comma-separated."""
    tensors = [v for v in values if isinstance(v, torch.Tensor) and v.dtype != torch.bool]
    return ", ".join("×".join(map(str, t.shape)) for t in tensors)


def module_table(model: Transformer, src: torch.Tensor, tgt: torch.Tensor) -> pd.DataFrame:
    """One row per module (embedding, positional encoding, every attention, feed-forward and Add & Norm,
    generator): path, paper name, section, input and output shapes in a forward pass of (src, tgt), and the
    parameters it owns. A weight shared with an earlier row (tie_weights) is counted there only, so the column
    sums to `model.num_parameters()`. Modules called twice (embedding: source, then target) list both calls
    separated by ' ; '.
    """
    probe = twin(model)
    calls: dict[str, list[tuple[str, str]]] = {}
    rows = _paper_modules(model.config)
    handles = []
    for path, _, _ in rows:

        def record(module, args, output, path=path):
            outputs = output if isinstance(output, tuple) else (output,)
            calls.setdefault(path, []).append((_shapes(args), _shapes(outputs)))

        handles.append(probe.get_submodule(path).register_forward_hook(record))
    try:
        with torch.no_grad():
            probe(src.to(model_device(probe)), tgt.to(model_device(probe)))
    finally:
        for handle in handles:
            handle.remove()
    seen: set[int] = set()
    table = []
    for path, name, section in rows:
        params = [p for p in probe.get_submodule(path).parameters() if id(p) not in seen]
        seen.update(id(p) for p in params)
        ins, outs = zip(*calls.get(path, [("", "")]))
        table.append((path, name, section, " ; ".join(ins), " ; ".join(outs), sum(p.numel() for p in params)))
    columns = ["module", "paper name", "section", "input shape", "output shape", "parameters"]
    frame = pd.DataFrame(table, columns=columns)
    frame["paper name"] = pd.Series([row[1] for row in table], dtype=object)  # its Messages kept (pandas 3)
    return frame


def parameter_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Parameters per part of the model (embedding, encoder, decoder, ...) from `module_table`, with a total row;
    each part named by PARTS."""
    part = table["module"].str.split(".").str[0].map(PARTS)
    summary = table.groupby(part, sort=False)["parameters"].sum().rename_axis("part").reset_index()
    total = pd.DataFrame([(N_("total"), int(summary["parameters"].sum()))], columns=["part", "parameters"])
    return pd.concat([summary, total], ignore_index=True)


def attention_module(model: Transformer, kind: str, layer: int) -> MultiHeadAttention:
    """The attention block of `kind` ("encoder", "decoder_self" or "cross") in `layer`."""
    if kind not in ATTENTION_KINDS:
        raise ValueError(f"kind must be one of {', '.join(ATTENTION_KINDS)}, got {kind!r}")
    if not 0 <= layer < model.config.n_layers:
        raise ValueError(f"layer must be in 0..{model.config.n_layers - 1}, got {layer}")
    if kind == "encoder":
        return model.encoder.layers[layer].self_attn
    block = model.decoder.layers[layer]
    return block.self_attn if kind == "decoder_self" else block.cross_attn


def attention_projections(model: Transformer, kind: str, layer: int) -> dict[str, torch.Tensor]:
    """W_Q, W_K, W_V, W_O of one attention block, each (d_model, d_model) as stored (output rows x input columns)."""
    block = attention_module(model, kind, layer)
    return {name: getattr(block, name).detach().clone() for name in ("W_Q", "W_K", "W_V", "W_O")}


OWN_TABLE = {  # a model's positional encoding -> what its table is called
    "sinusoidal": N_("this model's sinusoidal table"),
    "learned": N_("this model's learned table"),
}


def positional_table(model: Transformer) -> tuple[torch.Tensor, str]:
    """The (max_len, d_model) table the model adds to its embeddings, and what it is. A model with no positional
    encoding gets the paper's sinusoidal table, for reference."""
    c = model.config
    table = model.positional.table()
    if table is None:
        return sinusoidal_table(c.max_len, c.d_model), N_(
            "the paper's sinusoidal table, for reference: this model uses none"
        )
    return table.detach().clone(), OWN_TABLE[c.positional]


def position_similarity(table: torch.Tensor) -> torch.Tensor:
    """(P, P) cosine similarity between the encodings of every two positions of a (P, d_model) table."""
    unit = F.normalize(table.detach().float(), dim=-1)  # (P, d_model), each row of length 1
    return unit @ unit.T


def positions_trained(task: DataConfig, vocab: Vocab) -> int:
    """How many positions training fed the model: the longest source, or BOS + the longest target, whichever is
    longer (read off the run's held-out set, which spans the same lengths)."""
    held_out = TaskData(task, vocab).valid
    return max(held_out.src.size(1), held_out.tgt_in.size(1))


def embed_with_position(model: Transformer, ids: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """(T, d_model) token embeddings (× √d_model) of `ids`, before and after adding the positional encoding."""
    if not ids or len(ids) > model.config.max_len:
        raise ValueError(Message(N_("need 1 to {most} tokens, got {got}"), most=model.config.max_len, got=len(ids)))
    with torch.no_grad():
        embedded = model.embed(torch.tensor([ids], device=model_device(model)))[0]  # (T, d_model)
        table = model.positional.table()
        return embedded, embedded if table is None else embedded + table[: len(ids)]


# ----------------------------------------------------------------------------------------------- masking


# -------------------------------------------------------------------------------------------- logit lens


def logit_lens(model: Transformer, src: torch.Tensor, prefix: list[int]) -> torch.Tensor:
    """(n_layers, V): the next-token distribution after the decoder input `prefix` (BOS + tokens so far) of the
    source src (1, S) that each decoder layer's output would give if the stack ended there: through the decoder's
    final LayerNorm (pre-norm models have one; post-norm ones end every layer with a LayerNorm already), then the
    generator. The last row is the model's own distribution, the one decoding draws from: as there, no token of
    the prefix is masked as padding, since a PAD in it is one the model generated."""
    probe = twin(model)
    device = model_device(probe)
    last_states = []  # per decoder layer, its output at the last position: (1, d_model)
    handles = [
        layer.register_forward_hook(lambda module, args, output: last_states.append(output[0][:, -1]))
        for layer in probe.decoder.layers
    ]
    try:
        with torch.inference_mode():
            src = src.to(device)
            src_mask = probe.src_mask(src)
            memory, _ = probe.encode(src, src_mask)
            probe.decode(torch.tensor([prefix], device=device), memory, src_mask, mask_padding=False)
            h = torch.cat(last_states)  # (n_layers, d_model)
            return probe.generator(probe.decoder.norm(h)).softmax(dim=-1).cpu()  # (n_layers, V)
    finally:
        for handle in handles:
            handle.remove()
