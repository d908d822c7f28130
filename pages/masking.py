"""Masking lab: the padding and causal masks, attention before and after masking, and two experiments that show
what breaks without them (section 3.2.3)."""

from ui.streamlit_internals import rerun_inside_frame

rerun_inside_frame()  # first of all: see its docstring

import random
from collections.abc import Callable
from functools import partial

import streamlit as st

from transformer.figures.attention import attention_heatmaps, mask_heatmap
from transformer.i18n import N_
from transformer.inspection import ATTENTION_KINDS, padded_pair, random_pair
from transformer.link_params import masking_parsers, write_params
from transformer.literal import code_span, markdown_literal
from transformer.mask_experiments import MaskingResult, attention_before_after, mask_grids, pad_more, peek_at_future
from transformer.model import Transformer
from transformer.tasks import DataConfig, task_of
from transformer.vocab import Vocab
from ui.charts import chart, narrowest_chart_px, on_phone
from ui.language import _, on_its_own, said, session_translator, worded
from ui.links import link_values, share_link
from ui.state import claim_inputs, keep_result, model_page, result_for

LINKED_WIDGETS = {"source": "mask_src", "target": "mask_tgt", "pad": "mask_pad_to"}  # link parameter -> widget key
MAY_ATTEND = _("query {i} may attend to key {j}", i="$i$", j="$j$")  # in LaTeX's \text, $...$ is maths
BLOCKED = _("blocked")
PHONE = on_phone()  # the formula is 424 px on one line, its cases' line 382 px: a phone's page is 356 px

checkpoint = model_page(
    "mask",
    _("Masking lab"),
    _(
        "Attention looks only where its mask allows. The **padding mask** hides the PAD tokens that fill a batch up "
        "to one length (an implementation detail the paper leaves out); the decoder's **causal mask** (section "
        "3.2.3) hides later target positions, so that training on a whole target at once cannot copy the answer. "
        "Blocked scores are set to −∞ before the softmax:"
    ),
    (
        (r"\small" if PHONE else "")
        + r"\begin{gathered}\mathrm{Attention}(Q, K, V)"
        + (r" \\ = " if PHONE else " = ")
        + r"\mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}} + M\right) "
        rf"V \\ M_{{ij}} = \begin{{cases}} 0 & \text{{{MAY_ATTEND}}} \\ -\infty & \text{{{BLOCKED}}} "
        r"\end{cases}\end{gathered}"
    ),
)
model, vocab, config, tr = checkpoint.model, checkpoint.vocab, checkpoint.config, session_translator()
longest = config.longest_sequence
first = max(5, checkpoint.task.min_len)  # the first pair: short, with room to pad, but of a length the model trained on

if claim_inputs("mask", checkpoint.task):  # a model for another task, or a first visit: start from one of its pairs
    src_ids, tgt_ids = random_pair(checkpoint.task, vocab, first, seed=0)
    st.session_state["mask_src"], st.session_state["mask_tgt"] = vocab.decode(src_ids), vocab.decode(tgt_ids)
    st.session_state.pop("mask_pad_to", None)  # the new task's longest sequence sets it
link = link_values("mask", masking_parsers(vocab, longest))
st.session_state.update({LINKED_WIDGETS[name]: value for name, value in link.items()})


def draw_random_pair(task: DataConfig, vocab: Vocab, longest: int) -> None:
    """Put a random source of `task` shorter than "pad to", and its correct target, into the text inputs."""
    room = max(1, st.session_state.get("mask_pad_to", longest) - 1)
    src_ids, tgt_ids = random_pair(task, vocab, room, seed=random.randrange(2**31))
    st.session_state["mask_src"], st.session_state["mask_tgt"] = vocab.decode(src_ids), vocab.decode(tgt_ids)


src_col, tgt_col, pad_col, random_col = st.columns([3, 3, 1.3, 1.7], vertical_alignment="bottom")
src_text = src_col.text_input(_("Source (symbols separated by spaces)"), key="mask_src", persist_state="session")
tgt_text = tgt_col.text_input(_("Target (what the decoder should write)"), key="mask_tgt", persist_state="session")
pad_to = pad_col.number_input(
    _("Pad to"),
    min_value=1,
    max_value=longest,
    value=min(max(8, first + 2), longest),
    key="mask_pad_to",
    persist_state="session",
    help=_("The length of the longest sequence in the batch: shorter ones get PAD."),
)
random_col.button(
    _("Random"),
    key="mask_random",
    on_click=draw_random_pair,
    args=(checkpoint.task, vocab, longest),
    width="stretch",
    help=_("A random source shorter than *Pad to*, and the target the task makes of it."),
)

parsed, rule = {}, task_of(checkpoint.task)
for name, text, symbols in (
    ("source", src_text, rule.source_symbols(checkpoint.task.n_symbols)),
    ("target", tgt_text, rule.target_symbols(checkpoint.task.n_symbols)),
):
    try:
        parsed[name] = vocab.encode(text, max_len=longest, symbols=symbols)
    except ValueError as err:
        wrong = N_("Source: {error}. Fix it above, or click **Random**.")
        if name == "target":
            wrong = N_("Target: {error}. Fix it above, or click **Random**.")
        st.error(_(wrong, error=markdown_literal(_(err))))
src_ids, tgt_ids = parsed.get("source"), parsed.get("target")
if src_ids is None or tgt_ids is None:
    st.stop()
share_link(write_params({"source": vocab.decode(src_ids), "target": vocab.decode(tgt_ids), "pad": pad_to}))
width = max(pad_to, len(src_ids), len(tgt_ids))
if width > pad_to:
    st.warning(
        _(
            "A sequence is longer than **pad to** ({pad_to}): both are padded to {width} instead.",
            pad_to=pad_to,
            width=width,
        )
    )
src, tgt = padded_pair(src_ids, tgt_ids, vocab, width)
labels = {"source": vocab.tokens(src[0].tolist()), "target": vocab.tokens(tgt[0].tolist())}
st.caption(
    _(
        "Batch as the model sees it: source {source}; decoder input (BOS + target) {target}.",
        source=code_span(" ".join(labels["source"])),
        target=code_span(" ".join(labels["target"])),
    )
)

st.header(_("The masks"))
st.caption(_("Rows are queries (the position that looks), columns are keys (the positions it may look at)."))
if not config.causal_mask:
    st.warning(_("This model was trained with the causal mask **off**: its decoder uses only the padding mask."))
grids = mask_grids(src, tgt, vocab.pad_id)
combined = (
    _("Padding + causal: what the decoder uses")
    if config.causal_mask
    else _("Padding + causal (this model's decoder uses padding only)")
)
masks = [  # (grid, queries, keys, title), drawn two to a row
    ("padding", "source", "source", _("Padding mask: encoder self-attention")),
    ("cross", "target", "source", _("Padding mask: cross-attention")),
    ("causal", "target", "target", _("Causal mask: decoder self-attention")),
    ("combined", "target", "target", combined),
]
for column, (grid, queries, keys, title) in zip([*st.columns(2), *st.columns(2)], masks):
    figure = mask_heatmap(grids[grid], labels[queries], labels[keys], title, tr=tr)
    chart(column, figure, key=f"mask_fig_{grid}")

st.header(_("Attention before and after masking"))
st.markdown(
    _(
        "**Before**: the softmax of the scaled scores with no mask at all. **After**: the model's real weights. Both "
        "use the same queries and keys, taken from the real (masked) forward pass and recomputed without the mask, "
        "so *after* is *before* with the blocked keys removed and each row renormalized."
    )
)
kind_col, layer_col = st.columns([3, 1])
kind = kind_col.radio(
    _("Attention"),
    list(ATTENTION_KINDS),
    format_func=said(lambda k: ATTENTION_KINDS[k][0]),
    horizontal=True,
    key=worded("mask_kind"),
    persist_state="session",
)
layer = layer_col.selectbox(_("Layer"), range(config.n_layers), key="mask_layer", persist_state="session")
name, queries, keys = ATTENTION_KINDS[kind]
weights = attention_before_after(model, src, tgt)
stages = (
    ("before", weights.unmasked, N_("Before masking: {attention}, layer {layer}")),
    ("after", weights.masked, N_("After masking: {attention}, layer {layer}")),
)
for stage, maps, title in stages:
    chart(
        st,
        attention_heatmaps(
            maps[kind][layer][0],
            labels[queries],
            labels[keys],
            _(title, attention=_(name), layer=layer),
            per_row=2,
            tr=tr,
            fit_px=narrowest_chart_px(),
        ),
        key=f"mask_fig_attention_{stage}",
    )


def run_masking_test(name: str, model: Transformer, inputs: tuple, run: Callable[[], MaskingResult]) -> None:
    """Run one experiment and keep its outcome (result or error) with the model and inputs it ran on."""
    try:
        outcome = run()
    except ValueError as err:
        outcome = err  # translated when shown: the language may change after it was kept
    keep_result(f"masking_{name}", model, inputs, outcome)


def show_masking_result(
    name: str, model: Transformer, inputs: tuple, with_title: str, without_title: str, lesson: str
) -> None:
    """The experiment's last outcome, while `model` and `inputs` are those it ran on: its two diff tables, one
    above the other, and a verdict (or why it could not run)."""
    result = result_for(f"masking_{name}", model, inputs)
    if result is None:
        return
    if isinstance(result, ValueError):
        st.error(_("{error}.", error=markdown_literal(on_its_own(_(result)))))
        return
    st.markdown(
        _(
            "Changed: {what}. Δ: each position's change in {measure}.",
            what=markdown_literal(_(result.description)),
            measure=_(result.measure),
        )
    )
    for title, table in ((with_title, result.with_mask), (without_title, result.without_mask)):
        st.markdown(
            _(
                "**{title}**: {n} of {total} positions changed, largest |Δ| = {largest:.3g}",
                title=title,
                n=MaskingResult.n_changed(table),
                total=len(table),
                largest=MaskingResult.max_diff(table),
            )
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
                "position": st.column_config.NumberColumn(_("position")),
                "input token": st.column_config.TextColumn(_("input token")),
                "changed?": st.column_config.CheckboxColumn(_("changed?")),
                "max |Δ|": st.column_config.NumberColumn(_("max |Δ|"), format="%.3g"),  # a change never reads 0.0000
                "output before": st.column_config.TextColumn(_("output before")),
                "p before": st.column_config.NumberColumn(_("p before"), format="%.3f"),
                "output after": st.column_config.TextColumn(_("output after")),
                "p after": st.column_config.NumberColumn(_("p after"), format="%.3f"),
            },
        )
    if MaskingResult.n_changed(result.with_mask) == 0 and MaskingResult.n_changed(result.without_mask) > 0:
        st.success(lesson)
    else:
        st.info(_("Not the textbook outcome on this input: the differences above are what this model really does."))


st.header(_("Experiments"))
peek_col, pad_col = st.columns(2)
with peek_col:
    st.markdown(
        _(
            "**Peek at the future.** Change one later token of the decoder input and compare the outputs at all "
            "earlier positions, with the causal mask and without it (a copy of the model with the same weights)."
        )
    )
    if st.session_state.get("exp_change_for") != tgt_ids:  # a new target, typed or drawn: peek at its last token
        st.session_state["exp_change_at"], st.session_state["exp_change_for"] = len(tgt_ids), tgt_ids
    change_at = st.number_input(
        _("Position to change (1 = first target token)"), min_value=1, max_value=longest, key="exp_change_at"
    )
    peek_clicked = st.button(_("Peek at the future"), key="exp_peek_future")
with pad_col:
    st.markdown(
        _(
            "**Pad more.** Append PAD tokens to the source and the decoder input and compare the outputs at the real "
            "positions, with the padding masks and without them (`mask_padding=False`)."
        )
    )
    extra = st.number_input(
        _("Extra PAD tokens"), min_value=1, max_value=config.max_len, value=min(3, config.max_len), key="exp_extra"
    )
    pad_clicked = st.button(_("Pad more"), key="exp_pad_more")

peek_inputs, pad_inputs = (src_ids, tgt_ids, change_at), (src_ids, tgt_ids, extra)
if peek_clicked:
    peek = partial(peek_at_future, model, vocab, checkpoint.task, src_ids, tgt_ids, change_at)
    run_masking_test("peek", model, peek_inputs, peek)
if pad_clicked:
    run_masking_test("pad", model, pad_inputs, partial(pad_more, model, vocab, src_ids, tgt_ids, extra))
show_masking_result(
    "peek",
    model,
    peek_inputs,
    _("With the causal mask"),
    _("Without the causal mask (same weights)"),
    _(
        "The causal mask works: no earlier output can see a later token. Without it, earlier positions read the "
        "future, which at generation time does not exist yet."
    ),
)
show_masking_result(
    "pad",
    model,
    pad_inputs,
    _("With the padding masks"),
    _("Without the padding masks (`mask_padding=False`)"),
    _(
        "The padding mask works: extra PAD changes nothing beyond float rounding. Without it, the outputs drift, so "
        "the same sentence would be translated differently in a different batch."
    ),
)
