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


def test_every_box_label_fits_its_box_on_a_phone_in_each_language():
    """A box is 115 px wide on a phone: 残差连接与层归一化 on one line (117 px) ran over both its edges. Its label is
    in the projector's type, in lines that stack within the box's height (a line is about 1.3 times the type)."""
    from itertools import product

    from transformer.figures import drawn_px
    from transformer.figures.architecture import _BOX_H, _LABEL_PX, _LABEL_SIZE
    from transformer.figures.theme import FONT
    from transformer.i18n import translator

    assert _LABEL_SIZE == FONT["size"]
    for code, norm_first, causal, positional, tied in product(
        ("en", "zh-CN"), (False, True), (False, True), ("sinusoidal", "learned", "none"), (False, True)
    ):
        fig = architecture_diagram(1, norm_first, causal, positional, tied, tr=translator(code))
        margin, (low, high) = fig.layout.margin, fig.layout.yaxis.range
        box_px = _BOX_H * (fig.layout.height - margin.t - margin.b) / (high - low)
        boxes = [a.text for a in fig.layout.annotations if a.font.size == _LABEL_SIZE]
        assert len(boxes) >= 8
        for text in boxes:
            assert 1.3 * _LABEL_SIZE * len(text.split("<br>")) <= box_px, (code, text, box_px)
        for line in (line for text in boxes for line in text.split("<br>")):
            assert drawn_px(line, _LABEL_SIZE) <= _LABEL_PX, (code, line)
