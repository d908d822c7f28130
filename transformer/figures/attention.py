"""Figures for the model's anatomy, its masks, attention weights and positional encoding.

Inputs are arrays (numpy, nested lists, or torch tensors, read through `np.asarray`). Matrices are drawn as
the paper and the code index them: rows are queries (or positions, or output features), columns are keys (or
dimensions, or input features), row 0 at the top. Axis labels are tick texts on integer positions, so repeated
tokens keep their own rows.

Each figure is built in one go from plain dicts: Plotly's incremental `add_shape` / `make_subplots` calls cost
seconds on a busy shared server, a single construction milliseconds.
"""

import html
import textwrap
import unicodedata
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from ..i18n import Translator
from . import ENGLISH, title_layout, top_margin

FONT = dict(size=16, color="#111111")  # readable on a projector
MAY_ATTEND, BLOCKED = "#1f5fbf", "#d9d9d9"
ATTENTION_SCALE = "Blues"
DIVERGING_SCALE = "RdBu_r"  # negative blue, zero white, positive red


def _array(values) -> np.ndarray:
    if hasattr(values, "detach"):  # a torch tensor
        values = values.detach().cpu().numpy()
    return np.asarray(values, dtype=float)


def _escape(labels: Sequence[str]) -> list[str]:
    """Token labels as Plotly text: it reads HTML, so "<s>" (BOS) would strike through what follows."""
    return [html.escape(label) for label in labels]


def _ticks(labels: Sequence[str]) -> dict:
    """Axis settings that name integer positions 0..n-1 by `labels`."""
    return dict(tickmode="array", tickvals=list(range(len(labels))), ticktext=_escape(labels))


def wrap_title(title: str, width: int) -> str:
    """A figure title broken into lines of at most `width` characters, for figures shown in narrow columns."""
    return "<br>".join(wrap_lines(title, width))


def wrap_lines(text: str, width: int) -> list[str]:
    """`text` in lines at most `width` Latin characters wide: a Chinese character is as wide as two, and a line of
    them breaks between any two (they have no spaces to break at)."""
    if any(unicodedata.east_asian_width(c) in "WF" for c in text):
        width = max(1, width // 2)
    return textwrap.wrap(text, width)


def _hover_grid(row_labels: Sequence[str], col_labels: Sequence[str]) -> np.ndarray:
    """customdata[i][j] = [row label i, column label j], for hover texts."""
    return np.array([[[r, c] for c in _escape(col_labels)] for r in _escape(row_labels)], dtype=object)


def _grid(titles: Sequence[str], per_row: int, h_gap: float = 0.06, v_gap: float = 0.12) -> tuple[dict, list[dict]]:
    """Layout for one subplot per title, `per_row` to a row: the axes and title annotations, and each
    subplot's trace axis references {"xaxis": "x2", "yaxis": "y2"}."""
    n_cols = min(len(titles), per_row)
    n_rows = -(-len(titles) // n_cols)
    width, height = (1 - h_gap * (n_cols - 1)) / n_cols, (1 - v_gap * (n_rows - 1)) / n_rows
    layout, refs, annotations = {}, [], []
    for i, title in enumerate(titles):
        row, col = divmod(i, n_cols)
        x0, y1 = col * (width + h_gap), 1 - row * (height + v_gap)
        n = "" if i == 0 else str(i + 1)
        layout[f"xaxis{n}"] = dict(domain=[round(x0, 6), min(1.0, round(x0 + width, 6))], anchor=f"y{n}")
        layout[f"yaxis{n}"] = dict(domain=[max(0.0, round(y1 - height, 6)), round(y1, 6)], anchor=f"x{n}")
        annotations.append(
            dict(
                text=title,
                x=x0 + width / 2,
                y=y1,
                xref="paper",
                yref="paper",
                xanchor="center",
                yanchor="bottom",
                showarrow=False,
            )
        )
        refs.append(dict(xaxis=f"x{n}", yaxis=f"y{n}"))
    layout["annotations"] = annotations
    return layout, refs


PANEL_GAP_PX = 110  # between stacked panels: the x tick labels and title of one, the title of the next


def _stacked(titles: Sequence[str], panel_px: int) -> tuple[dict, list[dict], int]:
    """`_grid` with one panel per row, each `panel_px` tall, so titles and axis labels have the full width at any
    screen width: the layout, the trace axis references, and the height of the plot area in pixels."""
    plot_px = len(titles) * panel_px + (len(titles) - 1) * PANEL_GAP_PX
    layout, refs = _grid(titles, per_row=1, v_gap=PANEL_GAP_PX / plot_px)
    return layout, refs, plot_px


def _figure(traces: list[dict], layout: dict, title: str, height: int) -> go.Figure:
    for name, axis in layout.items():  # explicit fonts: Streamlit's chart theme shrinks and greys axis text
        if name.startswith(("xaxis", "yaxis")):
            axis.update(tickfont=FONT, title_font=FONT)
    margin = {**dict(l=60, r=20, t=80, b=50), **layout.pop("margin", {})}
    grown = top_margin(title, margin["t"]) - margin["t"]  # a title of several lines: the plot keeps its height
    margin["t"] += grown
    title = title_layout(title, dict(FONT, size=18))
    return go.Figure(
        data=traces, layout={**layout, "title": title, "font": FONT, "height": height + grown, "margin": margin}
    )


TICKS = ["0%", "50%", "100%"]  # three labels on a score's colour bar: more overlap on a short chart


def score_heatmap(z: np.ndarray, colorscale: str, value_name: str, hovertemplate: str, numbered: bool, **more) -> dict:
    """A heatmap trace of scores in 0..1 (rows x columns) in separated cells, its colour bar titled `value_name` in
    percent; `numbered`: each cell shows its score in percent (blank where there is none)."""
    return dict(
        type="heatmap",
        z=z,
        zmin=0,
        zmax=1,
        colorscale=colorscale,
        colorbar=dict(
            title=dict(text=value_name, side="right"), len=1, thickness=14, tickvals=[0, 0.5, 1], ticktext=TICKS
        ),
        xgap=2,
        ygap=2,
        text=[["" if np.isnan(x) else f"{100 * x:.0f}%" for x in row] for row in z],
        texttemplate="%{text}" if numbered else None,
        hovertemplate=hovertemplate,
        **more,
    )


def mask_heatmap(
    mask, row_labels: Sequence[str], col_labels: Sequence[str], title: str, tr: Translator = ENGLISH
) -> go.Figure:
    """A boolean (queries x keys) mask in two colours: "may attend" (True) and "blocked" (False)."""
    trace = dict(
        type="heatmap",
        z=_array(mask),
        zmin=0,
        zmax=1,
        xgap=2,
        ygap=2,
        colorscale=[[0, BLOCKED], [0.5, BLOCKED], [0.5, MAY_ATTEND], [1, MAY_ATTEND]],
        # a key under the grid rather than beside it (the page shows two masks side by side, in narrow columns),
        # at the figure's foot: above the grid it would push the title up into the chart's toolbar
        colorbar=dict(
            tickvals=[0.25, 0.75],
            ticktext=[tr.gettext("blocked"), tr.gettext("may attend")],
            orientation="h",
            lenmode="pixels",
            len=180,
            thickness=14,
            x=0.5,
            y=0,
            yref="container",
            yanchor="bottom",
            ypad=8,
            ticks="",
            tickangle=0,
            tickfont=FONT,
        ),
        customdata=_hover_grid(row_labels, col_labels),
        hovertemplate=_query_key(tr, "%{z}"),
    )
    layout = dict(
        xaxis=dict(title=tr.gettext("key"), **_ticks(col_labels)),
        yaxis=dict(title=tr.gettext("query"), autorange="reversed", **_ticks(row_labels)),
    )
    title = wrap_title(title, 30)  # the page shows two masks side by side, in narrow columns
    layout["margin"] = dict(l=60, r=20, t=top_margin(title), b=110)  # the key under the key axis's title
    return _figure([trace], layout, title, height=220 + 32 * len(row_labels))


def _query_key(tr: Translator, value: str) -> str:
    """A hover template naming a cell of a (queries x keys) grid by its labels (customdata), then `value`."""
    cell = tr.gettext(
        "query {query} → key {key}: {value}", query="%{customdata[0]}", key="%{customdata[1]}", value=value
    )
    return f"{cell}<extra></extra>"


def attention_heatmaps(
    weights,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    title: str,
    per_row: int = 4,
    tr: Translator = ENGLISH,
) -> go.Figure:
    """Attention weights (H, T_query, T_key), one subplot per head on a shared 0..1 colour scale."""
    w = _array(weights)
    n_heads, n_cols = w.shape[0], min(w.shape[0], per_row)
    head_names = [tr.gettext("head {head}", head=h) for h in range(n_heads)]
    layout, refs = _grid(head_names, per_row)
    hover = _hover_grid(row_labels, col_labels)
    traces = []
    for h, ref in enumerate(refs):
        traces.append(
            dict(
                type="heatmap",
                z=w[h],
                zmin=0,
                zmax=1,
                colorscale=ATTENTION_SCALE,
                showscale=h == 0,
                colorbar=dict(title=tr.gettext("weight"), len=0.8, thickness=14),
                customdata=hover,
                **ref,
                hovertemplate=f"{head_names[h]}<br>{_query_key(tr, '%{z:.3f}')}",
            )
        )
        n = ref["xaxis"][1:]
        # Every head has the same queries and keys: label the keys under the bottom panel of each column and the
        # queries beside the first panel of each row, where they cannot run into a neighbouring panel.
        layout[f"xaxis{n}"].update(showticklabels=h + n_cols >= n_heads, **_ticks(col_labels))
        layout[f"yaxis{n}"].update(autorange="reversed", showticklabels=h % n_cols == 0, **_ticks(row_labels))
    n_rows = -(-n_heads // n_cols)
    return _figure(traces, layout, title, height=120 + n_rows * (70 + 26 * len(row_labels)))


def positional_heatmap(table, title: str | None = None, tr: Translator = ENGLISH) -> go.Figure:
    """A (positions, d_model) positional-encoding table: one row per position, one column per dimension."""
    hover = tr.gettext(
        "position {position}, dimension {dimension}: {value}", position="%{y}", dimension="%{x}", value="%{z:.3f}"
    )
    trace = dict(
        type="heatmap",
        z=_array(table),
        colorscale=DIVERGING_SCALE,
        zmid=0,
        colorbar=dict(title=tr.gettext("value")),
        hovertemplate=f"{hover}<extra></extra>",
    )
    layout = dict(
        xaxis=dict(title=tr.gettext("dimension")), yaxis=dict(title=tr.gettext("position"), autorange="reversed")
    )
    return _figure([trace], layout, title or tr.gettext("Positional encoding"), height=480)


def position_similarity_heatmap(similarity, trained: int | None, title: str, tr: Translator = ENGLISH) -> go.Figure:
    """A (positions, positions) cosine-similarity matrix; dashed lines close off the first `trained` positions,
    the ones training reached."""
    trace = dict(
        type="heatmap",
        z=_array(similarity),
        zmin=-1,
        zmax=1,
        colorscale=DIVERGING_SCALE,
        colorbar=dict(title=tr.gettext("cosine")),
        hovertemplate=tr.gettext(
            "positions {first} and {second}: {value}", first="%{y}", second="%{x}", value="%{z:.2f}"
        )
        + "<extra></extra>",
    )
    layout = dict(
        xaxis=dict(title=tr.gettext("position"), constrain="domain"),
        yaxis=dict(title=tr.gettext("position"), autorange="reversed", scaleanchor="x"),
    )
    if trained is not None:
        edge = trained - 0.5
        line = dict(type="line", line=dict(color="#111111", dash="dash", width=2), xref="x", yref="y")
        layout["shapes"] = [
            dict(line, x0=edge, x1=edge, y0=-0.5, y1=edge),
            dict(line, x0=-0.5, x1=edge, y0=edge, y1=edge),
        ]
    return _figure([trace], layout, title, height=520)


def positional_curves(table, dims: Sequence[int], sinusoidal: bool = True, tr: Translator = ENGLISH) -> go.Figure:
    """One line per chosen dimension of a (positions, d_model) table, against position; with `sinusoidal`,
    even dimensions are named sine and odd ones cosine."""
    t = _array(table)
    traces = []
    for d in dims:
        kind = (" (sin)" if d % 2 == 0 else " (cos)") if sinusoidal else ""
        name = tr.gettext("dim {dimension}", dimension=d) + kind
        traces.append(dict(type="scatter", x=np.arange(len(t)), y=t[:, d], mode="lines+markers", name=name))
    layout = dict(xaxis=dict(title=tr.gettext("position")), yaxis=dict(title=tr.gettext("value")))
    return _figure(traces, layout, tr.gettext("Positional encoding of a few dimensions"), height=420)


def _diverging_heatmap(a: np.ndarray, bound: float, colorbar: str, hovertemplate: str, **more) -> dict:
    """A heatmap trace of `a` on the diverging scale from -bound to bound, its colour bar titled `colorbar`."""
    return dict(
        type="heatmap",
        z=a,
        zmin=-bound,
        zmax=bound,
        colorscale=DIVERGING_SCALE,
        colorbar=dict(title=colorbar),
        hovertemplate=hovertemplate,
        **more,
    )


def embedding_heatmap(
    panels: dict[str, object], token_labels: Sequence[str], title: str, tr: Translator = ENGLISH
) -> go.Figure:
    """(T, d_model) token vectors, one subplot per panel (e.g. before / after adding the positional encoding), one
    above the other on one diverging scale: a row per token, a column per dimension."""
    arrays = {name: _array(v) for name, v in panels.items()}
    bound = max(float(np.abs(a).max()) for a in arrays.values()) or 1.0
    layout, refs, plot_px = _stacked(list(arrays), panel_px=30 * len(token_labels))
    traces = []
    cell = tr.gettext(
        "token {token}, dimension {dimension}: {value}", token="%{customdata[0]}", dimension="%{x}", value="%{z:.3f}"
    )
    for i, ((name, a), ref) in enumerate(zip(arrays.items(), refs)):
        traces.append(
            _diverging_heatmap(
                a,
                bound,
                tr.gettext("value"),
                f"{name}<br>{cell}<extra></extra>",
                showscale=i == 0,
                customdata=_hover_grid(token_labels, [str(d) for d in range(a.shape[1])]),
                **ref,
            )
        )
        n = ref["xaxis"][1:]
        layout[f"xaxis{n}"].update(title=tr.gettext("dimension"))
        layout[f"yaxis{n}"].update(autorange="reversed", **_ticks(token_labels))
    return _figure(traces, layout, title, height=130 + plot_px)


def projection_heatmaps(matrices: dict[str, object], n_heads: int, title: str, tr: Translator = ENGLISH) -> go.Figure:
    """The projection matrices of one attention block (name -> (d_out, d_in)), side by side on one diverging
    scale. Dashed lines split the rows of W_Q, W_K, W_V (and the columns of W_O) into the heads' d_k slices."""
    arrays = {name: _array(m) for name, m in matrices.items()}
    bound = max(float(np.abs(a).max()) for a in arrays.values()) or 1.0
    layout, refs = _grid(list(arrays), per_row=len(arrays), h_gap=0.07)
    traces, shapes = [], []
    for i, ((name, a), ref) in enumerate(zip(arrays.items(), refs)):
        traces.append(
            _diverging_heatmap(
                a,
                bound,
                tr.gettext("weight"),
                f"{name}[%{{y}}, %{{x}}] = %{{z:.3f}}<extra></extra>",
                showscale=i == 0,
                **ref,
            )
        )
        n = ref["xaxis"][1:]
        layout[f"xaxis{n}"].update(title=tr.gettext("input"))  # a word that fits under a quarter of a phone's width
        layout[f"yaxis{n}"].update(autorange="reversed", showticklabels=i == 0)  # d_model rows in every panel
        d_k = a.shape[0] // n_heads
        line = dict(type="line", line=dict(color="black", dash="dash", width=1), xref=ref["xaxis"], yref=ref["yaxis"])
        for h in range(1, n_heads):
            edge = h * d_k - 0.5
            if name == "W_O":  # W_O mixes the concatenated heads: they are its input columns
                shapes.append(dict(line, x0=edge, x1=edge, y0=-0.5, y1=a.shape[0] - 0.5))
            else:  # each head's rows of W_Q, W_K, W_V
                shapes.append(dict(line, x0=-0.5, x1=a.shape[1] - 0.5, y0=edge, y1=edge))
    layout["yaxis"]["title"] = tr.gettext("output")
    return _figure(traces, dict(layout, shapes=shapes), title, height=440)


# ---------------------------------------------------------------------------------------- architecture

_COLOURS = {"attention": "#fbd9b4", "ffn": "#c7e3f5", "norm": "#f4f1a8", "embed": "#f8cfd6", "output": "#dccff0"}
_BOX_W, _BOX_H, _GAP = 2.6, 0.8, 0.28  # box width and height, vertical gap between boxes (data units)
_LABEL_CHARS = 12  # box labels wrap at this width, so they fit the boxes of a 1024-px screen


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
                text="<br>".join(wrap_lines(label, _LABEL_CHARS)),
                showarrow=False,
                font=dict(FONT, size=13),
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
        else tr.gettext("Positional Encoding ({kind})", kind=positional)
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
    annotations.append(_arrow(-1.8 + _BOX_W / 2, enc_y[-1], 1.8 - _BOX_W / 2, dec_y[cross], arrowcolor="#c0392b"))
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
