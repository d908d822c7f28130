"""How training reshapes the model: the symbols' embeddings on fixed 2-D axes, and each layer's gradient norm.

A `Dynamics` record is taken at each metric row, small enough to send with it: the symbols' embeddings projected
to 2-D (n_symbols x 2 numbers) and one gradient norm per layer.

The 2-D axes are the first two principal components of the symbols' embeddings at the run's first metric row,
fit once and kept for the rest of the run: every row is projected on the same axes, so a symbol that moves on the
chart moved in the model, and the positions of earlier rows never change when later rows arrive.
"""

import torch
from torch import nn

from .i18n import N_, Message
from .vocab import N_SPECIAL

EmbeddingPoints = list[tuple[float, float]]  # one (x, y) per symbol


STACKS = {  # a stack's layers and its final norm (pre-norm), and the parts named by their module
    "encoder": (N_("encoder layer {n}"), N_("encoder final norm"), N_("encoder")),
    "decoder": (N_("decoder layer {n}"), N_("decoder final norm"), N_("decoder")),
    "generator": (None, None, N_("generator")),
}


def layer_of(parameter_name: str) -> Message:
    """The layer a parameter belongs to, as the charts name it: "embeddings", "encoder layer 0", ..., "decoder layer
    0", ..., "encoder final norm", "decoder final norm" (pre-norm), or "generator". Layers count from 0, as the
    attention maps and Knockout number them."""
    parts = parameter_name.split(".")
    if parts[0] in ("embed", "positional"):
        return Message(N_("embeddings"))
    layer, final_norm, whole = STACKS.get(parts[0], (None, None, parts[0]))
    if layer and parts[1] == "layers":
        return Message(layer, n=int(parts[2]))
    named = final_norm if final_norm and parts[1] == "norm" else whole  # a recurrent model: encoder, decoder
    return Message(named)  # a name, not an expression with literals in it: Babel would extract "norm"


class LayerGradients:
    """The norm of each layer's gradient, ‖(∂L/∂θ for θ in the layer)‖₂, read from the parameters' `.grad`."""

    def __init__(self, network: nn.Module):
        named = list(network.named_parameters())  # a tied weight appears once, under its first name
        self.parameters = [p for _, p in named]
        self.layers: list[str] = list(dict.fromkeys(layer_of(name) for name, _ in named))
        self._layer_index = torch.tensor([self.layers.index(layer_of(name)) for name, _ in named])

    @torch.no_grad()
    def __call__(self) -> list[float]:
        """One norm per layer, in `self.layers` order; a parameter without a gradient counts as 0."""
        grads = [p.grad for p in self.parameters]
        squares = torch.zeros(len(self.parameters), dtype=torch.float32)
        present = [i for i, g in enumerate(grads) if g is not None]
        if present:
            norms = torch._foreach_norm([grads[i] for i in present])
            squares[present] = torch.stack(norms).float().cpu() ** 2
        per_layer = torch.zeros(len(self.layers), dtype=torch.float32)  # (n_layers,)
        per_layer.index_add_(0, self._layer_index, squares)
        return per_layer.sqrt().tolist()


class EmbeddingAxes:
    """Two fixed axes for a set of embeddings: the mean and top two principal components of a reference set."""

    def __init__(self, reference: torch.Tensor):
        """reference: (N, d_model), N >= 1. Each axis's sign is set so that its largest loading is positive, so the
        same reference always gives the same picture."""
        reference = reference.detach().double()
        self.mean = reference.mean(0)  # (d_model,)
        _, _, v_t = torch.linalg.svd(reference - self.mean, full_matrices=False)  # (min(N, d), d_model)
        axes = torch.zeros(2, reference.size(1), dtype=torch.double)
        axes[: min(2, v_t.size(0))] = v_t[:2]  # fewer than 2 components (one symbol): the missing axis stays 0
        signs = axes.gather(1, axes.abs().argmax(1, keepdim=True)).sign()  # (2, 1)
        self.components = axes * torch.where(signs == 0, 1.0, signs)  # (2, d_model)

    def project(self, embeddings: torch.Tensor) -> torch.Tensor:
        """embeddings (N, d_model) -> their coordinates (N, 2) on the axes."""
        return (embeddings.detach().double() - self.mean) @ self.components.T


class Dynamics:
    """The records of one run, one per metric row: {"step", "embeddings": EmbeddingPoints, "layers": [names],
    "grad_norms": [one per layer] or None}.

    `read_gradients` is called after a step's backward pass and before its optimizer step; a row's record carries
    the norms read at its own step, or None when none were read then (a run that ends between two rows).
    """

    def __init__(self, network: nn.Module, embedding: torch.Tensor):
        """network: the module whose gradients are read; embedding: (vocab, d_model), the kept model's table."""
        self.gradients = LayerGradients(network)
        self.embedding = embedding
        self.axes: EmbeddingAxes | None = None  # fit at the first row
        self.records: list[dict] = []
        self._read: tuple[int, list[float]] | None = None  # (step, norms)

    def read_gradients(self, step: int) -> None:
        self._read = step, self.gradients()

    def record(self, step: int) -> dict:
        symbols = self.embedding.detach()[N_SPECIAL:].cpu()  # (n_symbols, d_model)
        if self.axes is None:
            self.axes = EmbeddingAxes(symbols)
        grad_norms = self._read[1] if self._read is not None and self._read[0] == step else None
        record = {
            "step": step,
            "embeddings": [(x, y) for x, y in self.axes.project(symbols).tolist()],
            "layers": self.gradients.layers,
            "grad_norms": grad_norms,
        }
        self.records.append(record)
        return record
