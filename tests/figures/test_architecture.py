"""The architecture diagram draws the sublayers this model has: the decoder's mask, the norms where the model puts
them, and the number of layers."""

from transformer.figures.architecture import architecture_diagram


def labels(fig) -> list[str]:
    return [a.text.replace("<br>", " ") for a in fig.layout.annotations]  # box labels wrap over lines


def test_the_diagram_draws_this_models_masks_norms_and_layers():
    texts = labels(architecture_diagram(2, True, False, "learned", True))
    assert "Multi-Head Attention (unmasked!)" in texts and "LayerNorm" in texts and "2×" in texts
    texts = labels(architecture_diagram(1, False, True, "sinusoidal", False))
    assert "Masked Multi-Head Attention" in texts and "Add & Norm" in texts and "LayerNorm" not in texts
