"""The algorithm in the attention, on Train and Decoding: the task's ideal cross-attention outlined over the learned
one, each head's alignment score, and on Train the best head's score over the run."""

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

import streamlit as st
import torch

from transformer.alignment import (
    FOUND,
    best_head,
    found_at,
    head_scores,
    head_series,
    ideal_alignment,
    shown_score,
    source_positions,
    unaligned_input,
)
from transformer.decoding import DecodeStep
from transformer.figures import COLUMN_PX, PHONE_CHART_PX
from transformer.figures.alignment import best_head_figure, head_name, ideal_over_learned
from transformer.figures.attention import attention_heatmaps
from transformer.i18n import N_
from transformer.literal import markdown_literal
from transformer.naming import task_label
from transformer.pairs import PAIRS_TASK
from transformer.serving import Run
from transformer.tasks import DataConfig
from transformer.vocab import Vocab
from ui.charts import chart, narrowest_chart_px
from ui.language import _, session_translator

CHART_HEIGHT = 320  # as the Train page's loss and accuracy charts
CROSS_ALIGNED = N_(
    "Where this step's query looks in the source, head by head. A model that solved {task} looks mostly at or next "
    "to the source position its output token comes from; heads can share the work, so a single head need not point "
    "exactly."
)
CROSS_MIRRORED = N_(
    "Where this step's query looks in the source, head by head. A model that solved reverse looks mostly at or next "
    "to the mirrored source position: step 1 at the last source token, step 2 near the one before; heads can share "
    "the work, so a single head need not point exactly."
)
CROSS_SPREAD = N_(
    "Where this step's query looks in the source, head by head. In {task} an output token need not come from one "
    "source position, so its heads may look at many places at once."
)


def cross_attention_caption(data: DataConfig, source: Sequence[int]) -> str:
    """What a decoding step's cross-attention map shows for `data`'s task, whose held-out `source` (symbol indices)
    tells whether each of its output tokens comes from one source position (Markdown; a file's name literal)."""
    task, name = data.task, markdown_literal(task_label(data))
    if source_positions(task, source) is None:
        return _(CROSS_SPREAD, task=name)
    caption = CROSS_MIRRORED if task == "reverse" else CROSS_ALIGNED
    return _(caption, task=name)


def no_alignment(task: str, source: Sequence[int] = ()) -> str:
    """Why there is no alignment for `task` (a name; a task from examples is "pairs") on `source`, an input the
    student typed (symbol indices): the task has none, or it reads no output for this input."""
    if reason := unaligned_input(task, source):
        return _("This input has no ideal alignment: {reason}.", reason=reason)
    if task == PAIRS_TASK:
        why = _("a task from examples does not say which source token each of its output tokens comes from.")
    else:
        why = _(
            "*{task}* has no fixed source position for each output token, so there is no ideal cross-attention to "
            "draw or to score the heads against.",
            task=task,
        )
    return _("There is no alignment for this task: {why}", why=why)


def scoring_rule(task: str) -> str:
    """How the score is computed, and the rule for sort's equal symbols."""
    rule = _(
        "Outlined: where each output token comes from in the source. A head's score is the attention it puts on "
        "those cells, averaged over the output tokens: 1 when it always looks there, 1/n for uniform attention."
    )
    if task != "sort":
        return rule
    return rule + _(
        " For sort, output i comes from the source token of rank i, equal symbols taken in their input order "
        "(a stable sort); a head that spreads over equal symbols scores less on them."
    )


# ------------------------------------------------------------------------------------------------------ Train


@dataclass
class ProbeAlignment:
    """The run's probe input (held-out row 0) and its cross-attention scored at each snapshot."""

    steps: list[int]
    best: list[tuple[str, float]]  # the best head and its score at each snapshot
    latest: torch.Tensor  # (L, H, T, S): the newest snapshot's cross-attention, trimmed to the probe
    scores: torch.Tensor  # (L, H): its heads' scores
    ideal: torch.Tensor  # (T, S)
    source: list[str]
    queries: list[str]  # BOS, then the target


@dataclass
class ScoredSnapshots:
    """Each head's score at a run's snapshots so far, extended as snapshots come: (L, H) per snapshot."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    scores: list[torch.Tensor] = field(default_factory=list)


@st.cache_resource(max_entries=64, show_spinner=False)
def scored_snapshots(run_key: tuple) -> ScoredSnapshots:
    """One run's scores, shared by every watcher: each snapshot is scored once, not at every row."""
    return ScoredSnapshots()


@st.cache_resource(max_entries=64, show_spinner=False)
def probe_alignment(run_key: tuple, n_snapshots: int, _job: Run) -> ProbeAlignment | None:
    """The alignment of a run's first `n_snapshots` snapshots, computed once for every watcher; None when the
    task has no alignment. Read-only."""
    data, task = _job.data(), _job.data_config.task
    source = data.valid_sources[0]
    if source_positions(task, source) is None:
        return None
    S, T, source_tokens, query_tokens = probe_input(_job)
    snapshots = _job.attention[:n_snapshots]
    scored = scored_snapshots(run_key)
    with scored.lock:
        for snapshot in snapshots[len(scored.scores) :]:
            scored.scores.append(head_scores(task, source, [layer[:, :T, :S] for layer in snapshot["maps"]["cross"]]))
        scores = scored.scores[:n_snapshots]
    latest = torch.stack([layer[:, :T, :S] for layer in snapshots[-1]["maps"]["cross"]])  # (L, H, T, S)
    return ProbeAlignment(
        [s["step"] for s in snapshots],
        best_head(head_series(scores)),
        latest,
        scores[-1],
        ideal_alignment(task, source, T),
        source_tokens,
        query_tokens,
    )


def probe_input(job: Run) -> tuple[int, int, list[str], list[str]]:
    """A run's probe input (held-out row 0): the lengths of its source and of its decoder input (BOS, then the
    target), and their tokens."""
    data = job.data()
    src, tgt, pad = data.valid.src[0], data.valid.tgt_in[0], data.vocab.pad_id
    S, T = int((src != pad).sum()), int((tgt != pad).sum())
    return S, T, data.vocab.tokens(src[:S].tolist()), data.vocab.tokens(tgt[:T].tolist())


def train_alignment(job: Run) -> None:
    """The best head's score over the run beside the newest snapshot's heads, the ideal outlined."""
    n_snapshots = len(job.attention)
    if not n_snapshots:
        return
    probe = probe_alignment((id(job), job.started_at), n_snapshots, job)
    if probe is None:
        st.info(no_alignment(job.data_config.task))
        spread_attention(job)
        return
    if len(probe.source) < 2:
        st.info(
            _(
                "The first held-out input has one symbol: every head puts all its attention on it, so there is no "
                "alignment to find."
            )
        )
        return
    tr, line_col, heads_col = session_translator(), *st.columns(2)
    fit_px = narrowest_chart_px(COLUMN_PX)  # the columns' titles and the source's labels are fitted to it
    chart(
        line_col,
        best_head_figure(probe.steps, probe.best, 1 / len(probe.source), FOUND, CHART_HEIGHT, tr=tr, fit_px=fit_px),
        key="train_alignment_chart",
    )
    line_col.caption(search_outcome(probe, ended=job.done))
    layer = int(probe.scores.max(dim=1).values.argmax())  # the layer of the best head
    chart(
        heads_col,
        ideal_over_learned(
            probe.latest[layer],
            probe.ideal,
            probe.scores[layer].tolist(),
            probe.queries,
            probe.source,
            _("Cross-attention at step {step}, layer {layer}", step=probe.steps[-1], layer=layer),
            per_row=2,  # at most: in a column half a projector's page wide, a phone's page wide on a phone
            tr=tr,
            fit_px=fit_px,
        ),
        key="train_alignment_heads",
    )
    heads_col.caption(
        _(
            "The first held-out input, a row per output token, labelled by the token the decoder reads to write it. "
            "{rule}",
            rule=scoring_rule(job.data_config.task),
        )
    )


def spread_attention(job: Run) -> None:
    """For a task with no alignment: the newest snapshot's cross-attention on the probe input, in the last layer, head
    by head, with nothing outlined."""
    S, T, source, queries = probe_input(job)
    snapshot = job.attention[-1]
    layer = len(snapshot["maps"]["cross"]) - 1
    title = _("Cross-attention at step {step}, layer {layer}", step=snapshot["step"], layer=layer)
    weights = snapshot["maps"]["cross"][layer][:, :T, :S]
    figure = attention_heatmaps(weights, queries, source, title, tr=session_translator(), fit_px=PHONE_CHART_PX)
    chart(st, figure, key="train_spread_attention")
    st.caption(
        _(
            "The first held-out input, a row per output token, labelled by the token the decoder reads to write it. "
            "In {task} an output token need not come from one source position: the heads may look at many places.",
            task=markdown_literal(task_label(job.data_config)),
        )
    )


def search_outcome(probe: ProbeAlignment, ended: bool) -> str:
    """Whether a head has found the algorithm, and when; a run that has ended has no "yet"."""
    found = found_at(probe.steps, [score for label, score in probe.best])
    label, score = probe.best[-1]
    label, score = head_name(label, session_translator()), shown_score(score)
    if found is not None:
        return _(
            "**Attention found the algorithm at step {found}**: a head put {threshold:g} of its attention on the "
            "ideal source tokens. Latest: {head}, {score:.2f}.",
            found=found,
            threshold=FOUND,
            head=label,
            score=score,
        )
    if ended:
        return _(
            "No head reached {threshold:g} in this run; the best at its end was {head} at {score:.2f}. Heads can "
            "share the work, or look at the ideal token and its neighbours, and still get every output right.",
            threshold=FOUND,
            head=label,
            score=score,
        )
    return _(
        "No head has reached {threshold:g} yet; the best is {head} at {score:.2f}. Heads can share the work, or look "
        "at the ideal token and its neighbours, and still get every output right.",
        threshold=FOUND,
        head=label,
        score=score,
    )


# --------------------------------------------------------------------------------------------------- Decoding


def decoding_alignment(steps: list[DecodeStep], ids: list[int], task: str, vocab: Vocab, layer: int) -> None:
    """Every decoding step's cross-attention in one `layer`, a row per step, with the task's ideal outlined; where
    the task or this input has none, why."""
    source = [vocab.symbol_index(i) for i in ids]
    weights = torch.stack([step.cross_attention[layer] for step in steps], dim=1)  # (H, steps, S)
    scores = head_scores(task, source, [weights])
    title = N_("The algorithm in the attention: every step against the task's ideal")
    with st.expander(
        _(title if scores is not None else N_("The algorithm in the attention: no ideal to compare with")),
        expanded=True,
        key="decoding_alignment_expander",
    ):
        if scores is None:
            st.info(no_alignment(task, source))
            return
        queries = vocab.tokens([step.prefix[-1] for step in steps])
        chart(
            st,
            ideal_over_learned(
                weights,
                ideal_alignment(task, source, len(steps)),
                scores[0].tolist(),
                queries,
                vocab.tokens(ids),
                _("Cross-attention of every step, layer {layer}", layer=layer),
                tr=session_translator(),
                fit_px=narrowest_chart_px(),
            ),
            key="decode_alignment",
        )
        st.caption(_("A row per decoding step, labelled by the token it reads. {rule}", rule=scoring_rule(task)))
