"""Knockout: which attention heads the model in hand relies on. Each head removed alone scores a grid of held-out
exact match; any set of heads removed together shows its score and some decoded outputs."""

from ui.streamlit_internals import rerun_inside_frame

rerun_inside_frame()  # first of all: see its docstring

from functools import partial

import streamlit as st

from transformer.checkpoint import Checkpoint
from transformer.figures.knockout import METRICS, knockout_heatmaps
from transformer.i18n import N_, Message
from transformer.inspection import ATTENTION_KINDS
from transformer.knockout import (
    ABLATIONS,
    Head,
    KnockoutGrid,
    all_heads,
    compare_outputs,
    grid_allowed,
    knockout_grid,
    score,
)
from transformer.limits import MIN_GRID_SAMPLE
from transformer.model import Transformer
from transformer.shares import percent
from transformer.vocab import Vocab
from ui.charts import chart, narrowest_chart_px
from ui.common import shipped_checkpoint
from ui.language import SELECT_ALL, _, ngettext, said, session_translator, worded
from ui.links import share_link
from ui.patching_view import patching_section
from ui.state import model_page, per_model, shipped_name
from ui.tables import symbols_apart

ABLATION_TEXT = {
    "zero": (N_("Zero it"), N_("its output becomes 0 before W_O (the paper-style reading)")),
    "mean": (N_("Replace by its mean"), N_("its output becomes its average over the scored held-out sequences")),
}
SHORT_KIND = {"encoder": N_("encoder"), "decoder_self": N_("decoder self"), "cross": N_("cross")}
WITHOUT_THEM = {"exact_match": N_("Exact match without them"), "token_acc": N_("Token accuracy without them")}


@st.cache_resource(show_spinner=False, max_entries=8)
def shipped_grid(name: str, ablation: str) -> KnockoutGrid:
    """A shipped model's grid, scored once per server and shared read-only."""
    checkpoint = shipped_checkpoint(name)
    return knockout_grid(checkpoint.model, checkpoint.vocab, checkpoint.task, ablation)


def pick_heads(labels: list[str]) -> None:
    """Button callback: these heads become the set to remove."""
    st.session_state["knockout_heads"] = labels


checkpoint = model_page(
    "knockout",
    _("Knockout: which heads do the work?"),
    _(
        "Attention maps show where a head looks, not whether the model needs what it finds. Here each attention "
        "head of the model in hand is removed in turn, and the model is scored again on its held-out inputs: greedy "
        "**exact match** (the whole output right) and teacher-forced **token accuracy**. A head whose removal costs "
        "nothing is one the model does not rely on; one whose removal breaks the output does the work."
    ),
)
share_link()
model, vocab, task = checkpoint.model, checkpoint.vocab, checkpoint.task
heads = all_heads(model)
if not grid_allowed(model, task):
    st.warning(
        _(
            "This model has {heads} attention heads in {layers} layers per stack: removing each in turn, even on "
            "{sample} held-out inputs of up to {longest} symbols, would cost the shared server more than a few "
            "seconds. Score it on your own machine with `python -m transformer ablate CHECKPOINT` (download it on "
            "the Checkpoints page).",
            heads=len(heads),
            layers=model.config.n_layers,
            sample=MIN_GRID_SAMPLE,
            longest=task.max_len,
        )
    )
    st.stop()

ablation = st.radio(
    _("Remove a head by"),
    ABLATIONS,
    format_func=said(lambda a: ABLATION_TEXT[a][0]),
    captions=[_(caption) for name, caption in ABLATION_TEXT.values()],
    horizontal=True,
    key=worded("knockout_ablation"),
    persist_state="session",
)


def score_each_head(checkpoint: Checkpoint, n_heads: int, ablation: str) -> KnockoutGrid:
    name = shipped_name(checkpoint)
    with st.spinner(_("Scoring the model with each of its {n} heads removed...", n=n_heads)):
        if name:
            return shipped_grid(name, ablation)
        return knockout_grid(checkpoint.model, checkpoint.vocab, checkpoint.task, ablation)


scoring = partial(score_each_head, checkpoint, len(heads), ablation)
grid: KnockoutGrid = per_model("knockout_grid", model, ablation, scoring)  # once per (model, removal)

sample = (
    Message(N_("all {n:,}"), n=grid.n)  # the lab's words, which a Chinese sentence closes up around
    if grid.n == grid.n_held_out
    else Message(N_("{n:,} of the {total:,}"), n=grid.n, total=grid.n_held_out)
)
exact_col, token_col = st.columns(2)
exact_col.metric(_("Intact exact match"), percent(grid.intact["exact_match"]))
token_col.metric(_("Intact token accuracy"), percent(grid.intact["token_acc"]))
metric = st.radio(
    _("Score"),
    list(METRICS),
    format_func=said(lambda m: METRICS[m]),
    horizontal=True,
    key=worded("knockout_metric"),
    persist_state="session",
)
figure = knockout_heatmaps(grid.heads, grid.intact[metric], metric, session_translator(), narrowest_chart_px())
chart(st, figure, key="knockout_grid")
st.caption(
    _(
        "Scored on {sample} held-out sequences, spread over the lengths (a larger model or longer sequences score "
        "fewer, to keep a grid within seconds). Measured on the shipped models, all 1,000 held-out sequences, heads "
        "zeroed (2026-11-25, `python -m transformer ablate checkpoints/NAME.pt --n 1000`): **reverse** (intact 100%) "
        "loses something without any one head, down to 22% without decoder self-attention head 3, and scores 0% "
        "without its cross-attention. **copy** (100%) needs no encoder self-attention (all four heads removed: "
        "99.4%), but decoder self-attention head 3 alone leaves 0%. **sort** (99.7%) spreads the work: no single "
        "head costs more than 9 points, yet it scores 0% without cross-attention and 29% without encoder "
        "self-attention. Replacing a head by its mean reads some heads differently (sort's decoder self-attention "
        "layer 0 head 0: 99.2% zeroed, 60.7% replaced).",
        sample=sample,
    )
)

patching_section(checkpoint)

st.header(_("Remove heads together"))
labels = [h.label for h in heads]
st.session_state["knockout_heads"] = [h for h in st.session_state.get("knockout_heads", []) if h in labels]
for col, kind in zip(st.columns(len(ATTENTION_KINDS) + 1), ATTENTION_KINDS):
    kind_labels = [h.label for h in heads if h.kind == kind]
    every = _("All {kind}", kind=_(SHORT_KIND[kind]))
    col.button(every, key=f"knockout_all_{kind}", on_click=pick_heads, args=(kind_labels,))
by_label = {h.label: h for h in heads}
chosen = st.multiselect(
    _("Heads to remove"),
    labels,
    key=worded("knockout_heads"),
    select_all=SELECT_ALL,
    placeholder=_("Choose options"),
    format_func=said(
        lambda label: Message(
            N_("{kind} · layer {layer} · head {head}"),
            kind=Message(SHORT_KIND[by_label[label].kind]),
            layer=by_label[label].layer,
            head=by_label[label].head,
        )
    ),
    help=_("Pick any heads of any layers; the buttons above pick every head of one kind."),
)
if not chosen:
    st.info(_("Pick heads above, or press a button, to see the model without them."))
    st.stop()

removed = [by_label[label] for label in chosen]


def score_without(model: Transformer, vocab: Vocab, grid: KnockoutGrid, removed: list[Head]) -> dict:
    with st.spinner(
        ngettext("Scoring the model without {n} head...", "Scoring the model without {n} heads...", len(removed))
    ):
        scores = score(model, grid.batch, vocab, removed, grid.means)
        outputs = compare_outputs(model, grid.batch, vocab, removed, grid.means)
    return dict(scores=scores, outputs=outputs)


combined = per_model(
    "knockout_set", model, (ablation, tuple(chosen)), partial(score_without, model, vocab, grid, removed)
)

exact_col, token_col = st.columns(2)
for col, name in ((exact_col, "exact_match"), (token_col, "token_acc")):
    knocked, intact = combined["scores"][name], grid.intact[name]
    change = _("{change:+.1f} points", change=100 * (knocked - intact))
    col.metric(_(WITHOUT_THEM[name]), percent(knocked), change, delta_arrow="off")  # the sign says it: "↓ -1.5" twice
headers = {"input": _("input"), "expected": _("expected"), "intact": _("intact"), "knocked out": _("knocked out")}
st.dataframe(symbols_apart(combined["outputs"]).rename(columns=headers), hide_index=True)
st.caption(
    ngettext(
        "{n} held-out input decoded greedily by the intact model and by the model without the chosen heads.",
        "{n} held-out inputs decoded greedily by the intact model and by the model without the chosen heads.",
        len(combined["outputs"]),
    )
)
