"""Masking lab: the padding and causal masks, attention before and after masking, and two experiments that show
what breaks without them (section 3.2.3)."""

from pages.streamlit_internals import rerun_inside_frame

rerun_inside_frame()  # first of all: see its docstring

import random
from collections.abc import Callable

import streamlit as st

from pages.links import link_values, share_link
from pages.state import keep_result, model_page, result_for
from transformer.figures.attention import attention_heatmaps, mask_heatmap
from transformer.inspection import (
    ATTENTION_KINDS,
    MaskingResult,
    attention_before_after,
    mask_grids,
    pad_more,
    padded_pair,
    peek_at_future,
    random_pair,
)
from transformer.link_params import masking_parsers, write_params
from transformer.literal import code_span, markdown_literal

LINKED_WIDGETS = {"source": "mask_src", "target": "mask_tgt", "pad": "mask_pad_to"}  # link parameter -> widget key

checkpoint = model_page(
    "Masking lab",
    (
        "Attention looks only where its mask allows. The **padding mask** hides the PAD tokens that fill a batch up to "
        "one length (an implementation detail the paper leaves out); the decoder's **causal mask** (section 3.2.3) "
        "hides later target positions, so that training on a whole target at once cannot copy the answer. Blocked "
        "scores are set to −∞ before the softmax:"
    ),
    (
        r"\begin{gathered}\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}} + M\right) "
        r"V \\ M_{ij} = \begin{cases} 0 & \text{query } i \text{ may attend to key } j \\ -\infty & \text{blocked} "
        r"\end{cases}\end{gathered}"
    ),
)
model, vocab, config = checkpoint.model, checkpoint.vocab, checkpoint.config
longest = config.longest_sequence

if "mask_src" not in st.session_state:
    src_ids, tgt_ids = random_pair(checkpoint.task, vocab, 5, seed=0)
    st.session_state["mask_src"], st.session_state["mask_tgt"] = vocab.decode(src_ids), vocab.decode(tgt_ids)
link = link_values("mask", masking_parsers(vocab, longest))
st.session_state.update({LINKED_WIDGETS[name]: value for name, value in link.items()})


def draw_random_pair() -> None:
    """Put a random source shorter than "pad to", and its correct target, into the text inputs."""
    room = max(1, st.session_state.get("mask_pad_to", longest) - 1)
    src_ids, tgt_ids = random_pair(checkpoint.task, vocab, room, seed=random.randrange(2**31))
    st.session_state["mask_src"], st.session_state["mask_tgt"] = vocab.decode(src_ids), vocab.decode(tgt_ids)
    st.session_state["exp_change_at"] = len(tgt_ids)  # the peek experiment changes the new target's last token


src_col, tgt_col, pad_col, random_col = st.columns([3, 3, 1.3, 1.7], vertical_alignment="bottom")
src_text = src_col.text_input("Source (symbols separated by spaces)", key="mask_src")
tgt_text = tgt_col.text_input("Target (what the decoder should write)", key="mask_tgt")
pad_to = pad_col.number_input(
    "Pad to",
    min_value=1,
    max_value=longest,
    value=min(8, longest),
    key="mask_pad_to",
    help="The length of the longest sequence in the batch: shorter ones get PAD.",
)
random_col.button(
    "Random",
    key="mask_random",
    on_click=draw_random_pair,
    width="stretch",
    help="A random source shorter than *Pad to*, and the target the task makes of it.",
)

parsed = {}
for name, text in (("Source", src_text), ("Target", tgt_text)):
    try:
        parsed[name] = vocab.encode(text, max_len=longest)
    except ValueError as err:
        st.error(f"{name}: {markdown_literal(err)}. Fix it above, or click **Random**.")
src_ids, tgt_ids = parsed.get("Source"), parsed.get("Target")
if src_ids is None or tgt_ids is None:
    st.stop()
share_link(write_params({"source": vocab.decode(src_ids), "target": vocab.decode(tgt_ids), "pad": pad_to}))
width = max(pad_to, len(src_ids), len(tgt_ids))
if width > pad_to:
    st.warning(f"A sequence is longer than **pad to** ({pad_to}): both are padded to {width} instead.")
src, tgt = padded_pair(src_ids, tgt_ids, vocab, width)
labels = {"source": vocab.tokens(src[0].tolist()), "target": vocab.tokens(tgt[0].tolist())}
st.caption(
    f"Batch as the model sees it: source {code_span(' '.join(labels['source']))}; decoder input (BOS + target) "
    f"{code_span(' '.join(labels['target']))}."
)

st.subheader("The masks")
st.caption("Rows are queries (the position that looks), columns are keys (the positions it may look at).")
if not config.causal_mask:
    st.warning("This model was trained with the causal mask **off**: its decoder uses only the padding mask.")
grids = mask_grids(src, tgt, vocab.pad_id)
top_left, top_right = st.columns(2)
top_left.plotly_chart(
    mask_heatmap(grids["padding"], labels["source"], labels["source"], "Padding mask: encoder self-attention"),
    key="mask_fig_padding",
)
top_right.plotly_chart(
    mask_heatmap(grids["cross"], labels["target"], labels["source"], "Padding mask: cross-attention"),
    key="mask_fig_cross",
)
bottom_left, bottom_right = st.columns(2)
bottom_left.plotly_chart(
    mask_heatmap(grids["causal"], labels["target"], labels["target"], "Causal mask: decoder self-attention"),
    key="mask_fig_causal",
)
bottom_right.plotly_chart(
    mask_heatmap(
        grids["combined"],
        labels["target"],
        labels["target"],
        "Padding + causal: what the decoder uses"
        if config.causal_mask
        else "Padding + causal (this model's decoder uses padding only)",
    ),
    key="mask_fig_combined",
)

st.subheader("Attention before and after masking")
st.markdown(
    "**Before**: the softmax of the scaled scores with no mask at all. **After**: the model's real weights. Both "
    "use the same queries and keys, taken from the real (masked) forward pass and recomputed without the mask, "
    "so *after* is *before* with the blocked keys removed and each row renormalized."
)
kind_col, layer_col = st.columns([3, 1])
kind = kind_col.radio(
    "Attention", list(ATTENTION_KINDS), format_func=lambda k: ATTENTION_KINDS[k][0], horizontal=True, key="mask_kind"
)
layer = layer_col.selectbox("Layer", range(config.n_layers), key="mask_layer")
name, queries, keys = ATTENTION_KINDS[kind]
weights = attention_before_after(model, src, tgt)
for stage, maps in (("before", weights.unmasked), ("after", weights.masked)):
    st.plotly_chart(
        attention_heatmaps(
            maps[kind][layer][0],
            labels[queries],
            labels[keys],
            f"{stage.capitalize()} masking: {name}, layer {layer}",
            per_row=2,
        ),
        key=f"mask_fig_attention_{stage}",
    )


def run_masking_test(name: str, inputs: tuple, run: Callable[[], MaskingResult]) -> None:
    """Run one experiment and keep its outcome (result or error) with the model and inputs it ran on."""
    try:
        outcome = run()
    except ValueError as err:
        outcome = f"{err}."
    keep_result(f"masking_{name}", model, inputs, outcome)


def show_masking_result(name: str, inputs: tuple, with_title: str, without_title: str, lesson: str) -> None:
    """The experiment's last outcome, while the model and inputs are those it ran on: its two diff tables, one
    above the other, and a verdict (or why it could not run)."""
    result = result_for(f"masking_{name}", model, inputs)
    if result is None:
        return
    if isinstance(result, str):
        st.error(markdown_literal(result))
        return
    st.markdown(f"Changed: {markdown_literal(result.description)}. Δ: each position's change in {result.measure}.")
    for title, table in ((with_title, result.with_mask), (without_title, result.without_mask)):
        st.markdown(
            f"**{title}**: {MaskingResult.n_changed(table)} of {len(table)} positions changed, "
            f"largest |Δ| = {MaskingResult.max_diff(table):.4f}"
        )
        # the verdict first, beside the position: the outputs and probabilities behind it follow
        order = [
            "position",
            "input token",
            "changed?",
            "max |Δ|",
            "output before",
            "p before",
            "output after",
            "p after",
        ]
        st.dataframe(
            table,
            hide_index=True,
            column_order=order,
            column_config={
                "p before": st.column_config.NumberColumn(format="%.3f"),
                "p after": st.column_config.NumberColumn(format="%.3f"),
                "max |Δ|": st.column_config.NumberColumn(format="%.4f"),
            },
        )
    if MaskingResult.n_changed(result.with_mask) == 0 and MaskingResult.n_changed(result.without_mask) > 0:
        st.success(lesson)
    else:
        st.info("Not the textbook outcome on this input: the differences above are what this model really does.")


st.subheader("Experiments")
peek_col, pad_col = st.columns(2)
with peek_col:
    st.markdown(
        "**Peek at the future.** Change one later token of the decoder input and compare the outputs at "
        "all earlier positions, with the causal mask and without it (a copy of the model with the same weights)."
    )
    st.session_state.setdefault("exp_change_at", len(tgt_ids))
    change_at = st.number_input(
        "Position to change (1 = first target token)", min_value=1, max_value=longest, key="exp_change_at"
    )
    peek_clicked = st.button("Peek at the future", key="exp_peek_future")
with pad_col:
    st.markdown(
        "**Pad more.** Append PAD tokens to the source and the decoder input and compare the outputs at "
        "the real positions, with the padding masks and without them (`mask_padding=False`)."
    )
    extra = st.number_input(
        "Extra PAD tokens", min_value=1, max_value=config.max_len, value=min(3, config.max_len), key="exp_extra"
    )
    pad_clicked = st.button("Pad more", key="exp_pad_more")

peek_inputs, pad_inputs = (src_ids, tgt_ids, change_at), (src_ids, tgt_ids, extra)
if peek_clicked:
    run_masking_test("peek", peek_inputs, lambda: peek_at_future(model, vocab, src_ids, tgt_ids, change_at))
if pad_clicked:
    run_masking_test("pad", pad_inputs, lambda: pad_more(model, vocab, src_ids, tgt_ids, extra))
show_masking_result(
    "peek",
    peek_inputs,
    "With the causal mask",
    "Without the causal mask (same weights)",
    "The causal mask works: no earlier output can see a later token. Without it, earlier positions read "
    "the future, which at generation time does not exist yet.",
)
show_masking_result(
    "pad",
    pad_inputs,
    "With the padding masks",
    "Without the padding masks (mask_padding=False)",
    "The padding mask works: extra PAD changes nothing beyond float rounding. Without it, the outputs "
    "drift, so the same sentence would be translated differently in a different batch.",
)
