"""Anatomy: the model in hand laid out as the paper draws it, with every module's shapes and parameters, one
attention block's weights, and the positional encoding (sections 3.1, 3.2.2, 3.4, 3.5)."""

from ui.streamlit_internals import rerun_inside_frame

rerun_inside_frame()  # first of all: see its docstring

import streamlit as st

from transformer.figures.architecture import architecture_diagram
from transformer.figures.attention import projection_heatmaps
from transformer.figures.positional import (
    embedding_heatmap,
    position_similarity_heatmap,
    positional_curves,
    positional_heatmap,
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
from transformer.literal import code_span, markdown_literal
from transformer.naming import length_span, task_label
from ui.charts import chart, narrowest_chart_px
from ui.language import SELECT_ALL, _, on_its_own, said, session_translator, worded
from ui.links import share_link
from ui.state import claim_inputs, model_page

checkpoint = model_page(
    "anatomy",
    _("Anatomy"),
    _(
        "The model in hand, laid out as Figure 1 of the paper (section 3.1): an encoder stack and a decoder stack, "
        "each sublayer wrapped in a residual connection and LayerNorm, with embeddings and positional encoding at "
        "the bottom and the generator on top. Shapes below come from a real forward pass of one example."
    ),
)
share_link()
model, vocab, config, tr = checkpoint.model, checkpoint.vocab, checkpoint.config, session_translator()
fit_px = narrowest_chart_px()  # the titles of the charts across the page fit it

diagram = st.columns([1, 3, 1])[1]  # the figure is two narrow stacks: centred, not stretched
chart(
    diagram,
    architecture_diagram(
        config.n_layers, config.norm_first, config.causal_mask, config.positional, config.tie_weights, tr=tr
    ),
    key="anatomy_diagram",
)
st.header(_("Configuration"))
st.caption(
    _(
        "Trained on **{task}**, source lengths {lengths}.",
        task=markdown_literal(task_label(checkpoint.task)),
        lengths=length_span(checkpoint.task),
    )
)
settings = config_table(config).replace({"value": {"True": _("yes"), "False": _("no")}})
settings["value"], settings["meaning"] = settings["value"].map(_), settings["meaning"].map(_)
settings["setting"] = settings["setting"].map(code_span)
# words first, the code's name last: full width, and cells wrap, so every meaning reads whole
headers = {"setting": _("in the code"), "value": _("value"), "meaning": _("meaning")}
st.table(settings.rename(columns=headers).set_index(headers["meaning"])[[headers["value"], headers["setting"]]])

st.header(_("Every module, on one example"))
src, tgt = sample_batch(checkpoint.task, vocab, config.max_len)
st.markdown(
    _(
        "One batch of B = 1: a source of S = {source} tokens and the decoder input (BOS + target) of T = {target} "
        "tokens. Shapes read batch × length × features; the embedding and positional encoding run twice (source ; "
        "target). Parameters shared with an earlier row are counted there only.",
        source=src.size(1),
        target=tgt.size(1),
    )
)
table = module_table(model, src, tgt)
# the paper's name first, the code's name beside it; a table whose cells wrap, so that every shape reads whole
# (two of them, source ; target, in the first rows) and the table fits the page at any width
columns = {"module": _("in the code"), "input shape": _("input"), "output shape": _("output")}
shown = table.assign(parameters=table["parameters"].map("{:,}".format), module=table["module"].map(code_span))
shown = shown.rename(columns=columns)
shown = shown.set_index(table["paper name"].map(_).rename(_("paper name")))
st.table(
    shown[[*columns.values(), "parameters", "section"]].rename(columns={"parameters": _("parameters"), "section": "§"})
)
total, parts = st.columns([1, 3])
total.metric(_("Parameters"), f"{model.num_parameters():,}")
summary = parameter_summary(table)
summary["part"] = summary["part"].map(_)
counts = st.column_config.NumberColumn(_("parameters"), format="localized")  # 30,541, as the total beside it
parts.dataframe(summary.rename(columns={"part": _("part")}), hide_index=True, column_config={"parameters": counts})

st.header(_("Inside one attention block (section 3.2.2)"))
st.latex(
    r"\begin{gathered}\mathrm{head}_i = \mathrm{Attention}(QW^Q_i,\ KW^K_i,\ VW^V_i) \\ "
    r"\mathrm{MultiHead}(Q, K, V) = \mathrm{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_h)\,W^O\end{gathered}"
)
st.caption(
    _(
        "In self-attention Q, K and V are all the layer's input; in the decoder's cross-attention Q comes from the "
        "decoder and K and V from the encoder's output."
    )
)
kind_col, layer_col = st.columns(2)
kind = kind_col.selectbox(
    _("Attention block"),
    list(ATTENTION_KINDS),
    format_func=said(lambda k: ATTENTION_KINDS[k][0]),
    key=worded("anatomy_block"),
    persist_state="session",
)
layer = layer_col.selectbox(_("Layer"), range(config.n_layers), key="anatomy_layer", persist_state="session")
st.caption(
    _(
        "Each matrix is d_model × d_model = {d_model} × {d_model}, stored as output rows × input columns (the layer "
        "computes x Wᵀ). Dashed lines cut W_Q, W_K and W_V into the {heads} heads' d_k = {d_k} rows each: head i's "
        "band is the transpose of the paper's W^Q_i (d_model × d_k), and d_v = d_k. W_O mixes the concatenated "
        "heads, so its columns are cut instead.",
        d_model=config.d_model,
        heads=config.n_heads,
        d_k=config.d_k,
    )
)
block = _("{block}, layer {layer}", block=_(ATTENTION_KINDS[kind][0]), layer=layer)
chart(
    st,
    projection_heatmaps(attention_projections(model, kind, layer), config.n_heads, block, tr=tr, fit_px=fit_px),
    key="anatomy_projections",
)

st.header(_("Positional encoding (section 3.5)"))
st.latex(  # d_model's subscript at script size: a superscript's own subscript is drawn at half the formula's
    r"\begin{gathered}PE_{(pos,\,2i)} = \sin\!\left(pos / 10000^{2i/d_{\scriptstyle model}}\right) \\ "
    r"PE_{(pos,\,2i+1)} = \cos\!\left(pos / 10000^{2i/d_{\scriptstyle model}}\right)\end{gathered}"
)
pe, pe_label = positional_table(model)
pe_label = _(pe_label)
st.caption(_("Shown: {table}. Each row is added to the embedding of the token at that position.", table=pe_label))
pe_title = _("Positional encoding: {table}", table=pe_label)
chart(st, positional_heatmap(pe, pe_title, tr=tr, fit_px=fit_px), key="anatomy_pe_heatmap")
dims = st.multiselect(
    _("Dimensions to plot"),
    range(config.d_model),
    default=sorted({d for d in (0, 1, 6, config.d_model // 2) if d < config.d_model}),
    key="anatomy_dims",
    select_all=SELECT_ALL,
    placeholder=_("Choose options"),
)
sinusoidal = config.positional != "learned"
chart(st, positional_curves(pe, dims, sinusoidal, tr=tr), key="anatomy_pe_curves")
if sinusoidal:
    st.caption(_("Low dimensions wave fast, high ones slowly: together they give every position its own pattern."))
trained = positions_trained(checkpoint.task, vocab)
chart(
    st,
    position_similarity_heatmap(position_similarity(pe), trained, _("How alike two positions' encodings are"), tr=tr),
    key="anatomy_pe_similarity",
)
if sinusoidal:
    st.caption(
        _(
            "Along every diagonal the colour holds: the similarity of two positions depends only on how far apart "
            "they are, also past the first {trained} positions (dashed) that training reached. The paper chose "
            "sinusoids hoping the model could then easily attend by relative position: for any offset k, "
            "PE(pos + k) is a linear function of PE(pos).",
            trained=trained,
        )
    )
else:
    st.caption(
        _(
            "Inside the dashed square are the {trained} positions training reached, whose vectors it shaped. Past it "
            "they are still as initialised: random, and nearly unrelated to each other and to the trained ones. The "
            "Length test page shows what that does to longer inputs.",
            trained=trained,
        )
    )

st.markdown(_("**Embeddings of a sequence, before and after adding the positional encoding**"))
if claim_inputs("anatomy", checkpoint.task):  # a model for another task, or a first visit
    st.session_state["anatomy_input"] = " ".join((vocab.symbols[:3] * 2)[: config.longest_sequence])
text = st.text_input(
    _("A source sequence ({hint})", hint=_(vocab.input_hint(config.longest_sequence))),
    key="anatomy_input",
    persist_state="session",
    help=_(
        "Any of the model's symbols, in any order: it need not be an input of the task. It starts as three symbols "
        "twice, so that the repeated ones show how the position tells them apart."
    ),
)
try:
    ids = vocab.encode(text, max_len=config.longest_sequence)
except ValueError as err:
    st.error(_("{error}.", error=markdown_literal(on_its_own(_(err)))))
else:
    embedded, with_position = embed_with_position(model, ids)
    panels = {_("token embedding × √d_model"): embedded, _("+ positional encoding"): with_position}
    chart(
        st,
        embedding_heatmap(panels, vocab.tokens(ids), _("What the first layer receives"), tr=tr),
        key="anatomy_embeddings",
    )
    if config.positional == "none":
        st.caption(
            _("This model adds no positional encoding: both panels are the same, and repeated symbols look alike.")
        )
    else:
        st.caption(_("Top: repeated symbols have identical rows. Bottom: the position makes every row different."))
