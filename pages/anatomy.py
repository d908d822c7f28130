"""Anatomy: the model in hand laid out as the paper draws it, with every module's shapes and parameters, one
attention block's weights, and the positional encoding (sections 3.1, 3.2.2, 3.4, 3.5)."""

from pages.streamlit_internals import rerun_inside_frame

rerun_inside_frame()  # first of all: see its docstring

import streamlit as st

from pages.links import share_link
from pages.state import model_page
from transformer.figures.attention import (
    architecture_diagram,
    embedding_heatmap,
    position_similarity_heatmap,
    positional_curves,
    positional_heatmap,
    projection_heatmaps,
)
from transformer.inspection import (
    ATTENTION_KINDS,
    attention_projections,
    config_table,
    embed_with_position,
    module_table,
    parameter_summary,
    position_similarity,
    positional_table,
    positions_trained,
    sample_batch,
)
from transformer.literal import markdown_literal

checkpoint = model_page(
    "Anatomy",
    (
        "The model in hand, laid out as Figure 1 of the paper (section 3.1): an encoder stack and a decoder stack, "
        "each sublayer wrapped in a residual connection and LayerNorm, with embeddings and positional encoding at the "
        "bottom and the generator on top. Shapes below come from a real forward pass of one example."
    ),
)
share_link()
model, vocab, config = checkpoint.model, checkpoint.vocab, checkpoint.config

_, diagram, _ = st.columns([1, 3, 1])  # the figure is two narrow stacks: centred, not stretched
diagram.plotly_chart(
    architecture_diagram(config.n_layers, config.norm_first, config.causal_mask, config.positional, config.tie_weights),
    key="anatomy_diagram",
)
st.subheader("Configuration")
st.caption(
    f"Trained on **{checkpoint.task.task}**, source lengths {checkpoint.task.min_len}-{checkpoint.task.max_len}."
)
settings = config_table(config).replace({"value": {"True": "yes", "False": "no"}})
# words first, the code's name last: full width, and cells wrap, so every meaning reads whole
st.table(settings.rename(columns={"setting": "in the code"}).set_index("meaning")[["value", "in the code"]])

st.subheader("Every module, on one example")
src, tgt = sample_batch(checkpoint.task, vocab, config.max_len)
st.markdown(
    f"One batch of B = 1: a source of S = {src.size(1)} tokens and the decoder input (BOS + target) of "
    f"T = {tgt.size(1)} tokens. Shapes read batch × length × features; the embedding and positional encoding "
    "run twice (source ; target). Parameters shared with an earlier row are counted there only."
)
table = module_table(model, src, tgt)
# the paper's name first and pinned, the code's name beside it: a narrow screen scrolls the rest into view
st.dataframe(
    table,
    hide_index=True,
    height="content",
    column_order=["paper name", "module", "input shape", "output shape", "parameters", "section"],
    column_config={  # narrow number columns: the whole table fits a 1280-px screen beside the sidebar
        "paper name": st.column_config.TextColumn(pinned=True),
        "module": st.column_config.TextColumn("in the code"),
        "input shape": st.column_config.TextColumn("input", width="small"),
        "output shape": st.column_config.TextColumn("output", width="small"),
        "parameters": st.column_config.NumberColumn(width="small"),
        "section": st.column_config.TextColumn("§", width="small", help="Section of the paper"),
    },
)
total, parts = st.columns([1, 3])
total.metric("Parameters", f"{model.num_parameters():,}")
parts.dataframe(parameter_summary(table), hide_index=True)

st.subheader("Inside one attention block (section 3.2.2)")
st.latex(
    r"\begin{gathered}\mathrm{head}_i = \mathrm{Attention}(QW^Q_i,\ KW^K_i,\ VW^V_i) \\ "
    r"\mathrm{MultiHead}(Q, K, V) = \mathrm{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_h)\,W^O\end{gathered}"
)
st.caption(
    "In self-attention Q, K and V are all the layer's input; in the decoder's cross-attention Q comes from "
    "the decoder and K and V from the encoder's output."
)
kind_col, layer_col = st.columns(2)
kind = kind_col.selectbox(
    "Attention block", list(ATTENTION_KINDS), format_func=lambda k: ATTENTION_KINDS[k][0], key="anatomy_block"
)
layer = layer_col.selectbox("Layer", range(config.n_layers), key="anatomy_layer")
st.caption(
    f"Each matrix is d_model × d_model = {config.d_model} × {config.d_model}, stored as output rows × input "
    f"columns (the layer computes x Wᵀ). Dashed lines cut W_Q, W_K and W_V into the {config.n_heads} heads' "
    f"d_k = {config.d_k} rows each: head i's band is the transpose of the paper's W^Q_i (d_model × d_k), and "
    f"d_v = d_k. W_O mixes the concatenated heads, so its columns are cut instead."
)
st.plotly_chart(
    projection_heatmaps(
        attention_projections(model, kind, layer), config.n_heads, f"{ATTENTION_KINDS[kind][0]}, layer {layer}"
    ),
    key="anatomy_projections",
)

st.subheader("Positional encoding (section 3.5)")
st.latex(
    r"\begin{gathered}PE_{(pos,\,2i)} = \sin\!\left(pos / 10000^{2i/d_{model}}\right) \\ "
    r"PE_{(pos,\,2i+1)} = \cos\!\left(pos / 10000^{2i/d_{model}}\right)\end{gathered}"
)
pe, pe_label = positional_table(model)
st.caption(f"Shown: {pe_label}. Each row is added to the embedding of the token at that position.")
st.plotly_chart(positional_heatmap(pe, f"Positional encoding: {pe_label}"), key="anatomy_pe_heatmap")
dims = st.multiselect(
    "Dimensions to plot",
    range(config.d_model),
    default=sorted({d for d in (0, 1, 6, config.d_model // 2) if d < config.d_model}),
    key="anatomy_dims",
)
sinusoidal = config.positional != "learned"
st.plotly_chart(positional_curves(pe, dims, sinusoidal), key="anatomy_pe_curves")
if sinusoidal:
    st.caption("Low dimensions wave fast, high ones slowly: together they give every position its own pattern.")
trained = positions_trained(checkpoint.task, vocab)
st.plotly_chart(
    position_similarity_heatmap(position_similarity(pe), trained, "How alike two positions' encodings are"),
    key="anatomy_pe_similarity",
)
if sinusoidal:
    st.caption(
        f"Along every diagonal the colour holds: the similarity of two positions depends only on how far apart "
        f"they are, also past the first {trained} positions (dashed) that training reached. The paper chose "
        "sinusoids hoping the model could then easily attend by relative position: for any offset k, "
        "PE(pos + k) is a linear function of PE(pos)."
    )
else:
    st.caption(
        f"Inside the dashed square are the {trained} positions training reached, whose vectors it shaped. "
        "Past it they are still as initialised: random, and nearly unrelated to each other and to the "
        "trained ones. The Length test page shows what that does to longer inputs."
    )

st.markdown("**Embeddings of a sequence, before and after adding the positional encoding**")
text = st.text_input(
    f"A source sequence ({vocab.input_hint(config.longest_sequence)})",
    value=" ".join((vocab.symbols[:3] * 2)[: config.longest_sequence]),
    key="anatomy_input",
)
try:
    ids = vocab.encode(text, max_len=config.longest_sequence)
except ValueError as err:
    st.error(f"{markdown_literal(err)}.")
else:
    embedded, with_position = embed_with_position(model, ids)
    panels = {"token embedding × √d_model": embedded, "+ positional encoding": with_position}
    st.plotly_chart(
        embedding_heatmap(panels, vocab.tokens(ids), "What the first layer receives"), key="anatomy_embeddings"
    )
    if config.positional == "none":
        st.caption("This model adds no positional encoding: both panels are the same, and repeated symbols look alike.")
    else:
        st.caption("Top: repeated symbols have identical rows. Bottom: the position makes every row different.")
