"""The Knockout page's activation patching: a clean input and a corrupted one, and how much of the clean answer each
head's output, or the residual stream at each layer and position, brings back when patched into the corrupted run."""

import streamlit as st

from transformer.checkpoint import Checkpoint
from transformer.figures.patching import head_patching_figure, stream_patching_figure
from transformer.i18n import N_
from transformer.literal import code_span, markdown_literal
from transformer.patching import PatchingGrid, patching_grid, patching_pair
from transformer.tasks import TaskData
from ui.charts import chart, narrowest_chart_px
from ui.forms import form_id, values_set
from ui.language import _, said, session_translator, worded
from ui.state import claim_inputs, per_model

SITES = {"heads": N_("one head's output"), "stream": N_("the residual stream")}
PATCH_FORM = "patch_inputs"  # the form of the clean and corrupted inputs (`ui.forms`)
PAIR_FROM = 20  # held-out inputs the first clean and corrupted inputs are looked for among (`patching_pair`)


def patching_section(checkpoint: Checkpoint) -> None:
    """Two inputs, a Patch button, and the grid of the sites chosen."""
    model, vocab, task = checkpoint.model, checkpoint.vocab, checkpoint.task
    st.header(_("Activation patching: where does the input's information flow?"))
    st.markdown(
        _(
            "Knockout shows what the model cannot do without. Patching shows **which activations carry what an "
            "input tells the model**: run a *clean* input and a *corrupted* one (a symbol changed), then run the "
            "corrupted one again with one activation copied in from the clean run. If the clean answer comes back, "
            "that activation carries the changed symbol's information to the output."
        )
    )
    if claim_inputs("patch", task):  # a model for another task, or a first visit: start from one of its inputs
        sources = TaskData(task, vocab).valid_sources[:PAIR_FROM]
        for key, source in zip(("patch_clean", "patch_corrupted"), patching_pair(task, sources, len(vocab.symbols))):
            st.session_state[key] = " ".join(vocab.symbols[s] for s in source)
        st.session_state.pop("patch_asked", None)
        values_set(PATCH_FORM)
    # texts alone: a language switch keeps what was typed; no "Press Enter to submit form" over the typed text
    with st.form(form_id(PATCH_FORM, worded=False), enter_to_submit=False):
        clean_col, corrupted_col = st.columns(2)
        clean = clean_col.text_input(_("Clean input"), key="patch_clean", persist_state="session")
        corrupted = corrupted_col.text_input(_("Corrupted input"), key="patch_corrupted", persist_state="session")
        if st.form_submit_button(_("Patch"), key="patch_run", icon=":material/healing:", type="primary"):
            st.session_state["patch_asked"] = clean, corrupted
    if "patch_asked" not in st.session_state:  # one grid per press: a visit to the page costs nothing more
        st.caption(
            _("Press **Patch** to patch each site of the model in turn, from the clean input into the corrupted one.")
        )
        return
    clean, corrupted = st.session_state["patch_asked"]

    def compute() -> PatchingGrid | str:
        try:
            with st.spinner(_("Patching each site in turn...")):
                return patching_grid(model, vocab, task, clean, corrupted)
        except ValueError as err:
            return err

    grid = per_model("patching_grid", model, (clean, corrupted), compute)
    if isinstance(grid, ValueError):  # translated when shown: the language may change after it was kept
        st.error(_("Cannot patch these inputs: {reason}.", reason=markdown_literal(_(grid))))
        return
    show_grid(grid)


def show_grid(grid: PatchingGrid) -> None:
    """The answer's probability clean and corrupted, and the grid of the sites the student picks."""
    answer = " ".join(grid.answer)
    st.markdown(
        _(
            "Clean answer {answer}: probability **{p_clean:.3g}** after the clean input, **{p_corrupted:.3g}** after "
            "the corrupted one.",
            answer=code_span(answer),
            p_clean=grid.p_clean,
            p_corrupted=grid.p_corrupted,
        )
    )
    if not grid.recoverable:
        st.warning(_("The changed symbol hardly moves the clean answer's probability: there is nothing to recover."))
        return
    sites = st.radio(
        _("Patch"), list(SITES), format_func=said(lambda site: SITES[site]), horizontal=True, key=worded("patch_sites")
    )
    tr, fit_px = session_translator(), narrowest_chart_px()
    if sites == "heads":
        chart(st, head_patching_figure(grid.heads, tr=tr, fit_px=fit_px), key="patch_heads_chart")
    else:
        figure = stream_patching_figure(grid.stream, grid.clean, grid.answer, tr=tr, fit_px=fit_px)
        chart(st, figure, key="patch_stream_chart")
    st.caption(
        _(
            "Each cell: the share of the log-probability of the clean answer that the corruption took away and the "
            "patch brings back, (log p_patched − log p_corrupted) / (log p_clean − log p_corrupted). A head is "
            "patched at every position, its slice of the concatenated heads before W_O; the residual stream at one "
            "position after a layer (*embeddings*: before the first). Only the changed position differs in the "
            "embeddings; follow it up the encoder, then see which decoder positions, the ones that write the "
            "changed part of the answer, take it in."
        )
    )
