"""The encoder-decoder drawn as Figure 1 of the paper draws it, with this model's switches (norm placement, causal
mask, positional encoding, tied output weights)."""

import plotly.graph_objects as go

from ..i18n import Message, Translator
from ..inspection import POSITIONAL_KINDS
from . import ENGLISH, drawn_px, wrap_lines
from .palette import HIGHLIGHT
from .theme import FONT

_COLOURS = {"attention": "#fbd9b4", "ffn": "#c7e3f5", "norm": "#f4f1a8", "embed": "#f8cfd6", "output": "#dccff0"}
_BOX_W, _BOX_H, _GAP = 2.6, 0.8, 0.28  # box width and height, vertical gap between boxes (data units)
_LABEL_CHARS = 16  # box labels wrap at this width (`wrap_lines`), or narrower where a line is wider than _LABEL_PX
_LABEL_PX = 107  # a box is 115 px wide on a phone: a line of its label within it, a little room each side
_LABEL_SIZE = FONT["size"]  # the projector's size: three lines of it fit a box


def _layer_boxes(kind: str, norm_first: bool, causal: bool, tr: Translator) -> list[tuple[str, str]]:
    """(label, colour key) of one encoder or decoder layer's boxes, bottom to top."""
    feed_forward = (tr.gettext("Feed Forward"), "ffn")
    sublayers = [(tr.gettext("Multi-Head Attention"), "attention"), feed_forward]
    if kind == "decoder":
        masked = tr.gettext("Masked Multi-Head Attention") if causal else tr.gettext("Multi-Head Attention (unmasked!)")
        sublayers = [(masked, "attention"), (tr.gettext("Multi-Head Attention (cross)"), "attention"), feed_forward]
    boxes = []
    for sublayer in sublayers:
        if norm_first:
            boxes += [(tr.gettext("LayerNorm"), "norm"), sublayer, (tr.gettext("Add (residual)"), "norm")]
        else:
            boxes += [sublayer, (tr.gettext("Add & Norm"), "norm")]
    return boxes


def _label_lines(label: str) -> list[str]:
    """A box's label in lines, each within _LABEL_PX as drawn: 残差连接与层归一化 (117 px) takes two."""
    for chars in range(_LABEL_CHARS, 0, -1):
        lines = wrap_lines(label, chars)
        if max(drawn_px(line, _LABEL_SIZE) for line in lines) <= _LABEL_PX:
            break
    return lines


def _column(
    x: float,
    boxes: list[tuple[str, str]],
    layer: tuple[int, int],
    n_layers: int,
    title: str,
    shapes: list[dict],
    annotations: list[dict],
) -> list[float]:
    """Append one stack's boxes (bottom to top, centred at x), arrows and its N× frame; return the boxes' y."""
    ys = [i * (_BOX_H + _GAP) for i in range(len(boxes))]
    _layer_frame(x, ys[layer[0]], ys[layer[1]], n_layers, shapes, annotations)
    for (label, colour), y in zip(boxes, ys):
        shapes.append(
            dict(
                type="rect",
                x0=x - _BOX_W / 2,
                x1=x + _BOX_W / 2,
                y0=y - _BOX_H / 2,
                y1=y + _BOX_H / 2,
                fillcolor=_COLOURS[colour],
                line=dict(color="#333", width=1),
            )
        )
        annotations.append(
            dict(
                x=x,
                y=y,
                text="<br>".join(_label_lines(label)),
                showarrow=False,
                font=dict(FONT, size=_LABEL_SIZE),
            )
        )
    for y0, y1 in zip(ys, ys[1:]):
        annotations.append(_arrow(x, y0 + _BOX_H / 2, x, y1 - _BOX_H / 2))
    annotations.append(
        dict(x=x, y=ys[-1] + _BOX_H / 2 + 0.45, text=f"<b>{title}</b>", showarrow=False, font=dict(FONT, size=18))
    )
    return ys


def _layer_frame(
    x: float, bottom: float, top: float, n_layers: int, shapes: list[dict], annotations: list[dict]
) -> None:
    """The frame around the boxes of one layer (centres `bottom` to `top`) of the stack at x, and its N× beside it,
    outside the diagram."""
    left = x < 0
    shapes.append(
        dict(
            type="rect",
            x0=x - _BOX_W / 2 - 0.2,
            x1=x + _BOX_W / 2 + 0.2,
            y0=bottom - _BOX_H / 2 - 0.15,
            y1=top + _BOX_H / 2 + 0.15,
            line=dict(color="#555", width=2),
            fillcolor="#f5f5f5",
            layer="below",
        )
    )
    annotations.append(
        dict(
            x=x - _BOX_W / 2 - 0.35 if left else x + _BOX_W / 2 + 0.35,
            y=(bottom + top) / 2,
            text=f"{n_layers}×",
            showarrow=False,
            font=dict(FONT, size=20),
            xanchor="right" if left else "left",
        )
    )


def _arrow(x0: float, y0: float, x1: float, y1: float, **style) -> dict:
    return dict(
        x=x1,
        y=y1,
        ax=x0,
        ay=y0,
        xref="x",
        yref="y",
        axref="x",
        ayref="y",
        text="",
        showarrow=True,
        arrowhead=2,
        arrowwidth=1.5,
        **style,
    )


def architecture_diagram(
    n_layers: int, norm_first: bool, causal_mask: bool, positional: str, tie_weights: bool, tr: Translator = ENGLISH
) -> go.Figure:
    """The encoder-decoder as Figure 1 of the paper draws it: encoder on the left, decoder on the right, one
    layer of each framed and marked N×, its sublayers bottom to top with the norms where this model puts them."""
    pe = (
        tr.gettext("Positional Encoding")
        if positional == "sinusoidal"
        else tr.gettext("Positional Encoding ({kind})", kind=Message(POSITIONAL_KINDS[positional]))
    )
    bottom = [(tr.gettext("Embedding × √d_model"), "embed"), (f"+ {pe}", "embed")]
    final_norm = [(tr.gettext("LayerNorm"), "norm")] if norm_first else []
    encoder_layer = _layer_boxes("encoder", norm_first, causal_mask, tr)
    decoder_layer = _layer_boxes("decoder", norm_first, causal_mask, tr)
    linear = tr.gettext("Linear (tied to embedding)") if tie_weights else tr.gettext("Linear")
    shapes, annotations = [], []
    encoder = bottom + encoder_layer + final_norm
    enc_y = _column(-1.8, encoder, (2, 1 + len(encoder_layer)), n_layers, tr.gettext("Encoder"), shapes, annotations)
    decoder = bottom + decoder_layer + final_norm + [(linear, "output"), ("Softmax", "output")]
    dec_y = _column(1.8, decoder, (2, 1 + len(decoder_layer)), n_layers, tr.gettext("Decoder"), shapes, annotations)
    cross = len(bottom) + [label for label, _ in decoder_layer].index(tr.gettext("Multi-Head Attention (cross)"))
    annotations.append(_arrow(-1.8 + _BOX_W / 2, enc_y[-1], 1.8 - _BOX_W / 2, dec_y[cross], arrowcolor=HIGHLIGHT))
    source = tr.gettext("source tokens")
    annotations.append(dict(x=-1.8, y=-0.85, text=source, showarrow=False, font=dict(FONT, size=14)))
    annotations.append(
        dict(
            x=1.8,
            y=-0.85,
            text=tr.gettext("target tokens, shifted<br>right (BOS first)"),
            showarrow=False,
            font=dict(FONT, size=14),
        )
    )
    top = max(enc_y[-1], dec_y[-1]) + 1.0
    layout = dict(
        xaxis=dict(visible=False, range=[-3.8, 3.8]),
        yaxis=dict(visible=False, range=[-1.2, top]),
        shapes=shapes,
        annotations=annotations,
        plot_bgcolor="white",
        showlegend=False,
        margin=dict(l=10, r=10, t=30, b=10),
    )
    return go.Figure(layout=dict(font=FONT, height=int(90 * top) + 120, **layout))
