"""The Compare page's attention timeline: a slider over training steps showing the probe's cross-attention, the
loss and the alignment scores at that step."""

import streamlit as st

from transformer.alignment import head_label
from transformer.experiments import ExperimentRun
from transformer.figures.alignment import ideal_over_learned
from transformer.figures.attention import attention_heatmaps
from transformer.figures.compare import alignment_figure, loss_marker_figure, variant_colour
from transformer.i18n import N_
from transformer.literal import code_span
from ui.alignment_view import scoring_rule
from ui.charts import chart, narrowest_chart_px
from ui.language import _, said, session_translator, worded

PLOTLY_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}  # PNG from the toolbar
EXPLAINED = N_(
    "The probe is the first held-out input, {probe}. Each heatmap is one cross-attention head: a row per decoder "
    "position, labelled by the token it reads (row i writes output token i), a column per source token, darker = more "
    "attention. Slide through training to watch the pattern form. Each head's score is the attention it puts, on "
    "average, on the source token the output comes from:"
)
EXPLAINED_UNSCORED = N_(  # a task whose outputs have no one source token each (count, brackets): nothing to score
    "The probe is the first held-out input, {probe}. Each heatmap is one cross-attention head: a row per decoder "
    "position, labelled by the token it reads (row i writes output token i), a column per source token, darker = more "
    "attention. Slide through training to watch the pattern form."
)
EXPLAINED_REVERSE = N_(  # reverse, the lesson's task, says where its outputs come from
    "The probe is the first held-out input, {probe}. Each heatmap is one cross-attention head: a row per "
    "decoder position, labelled by the token it reads (row i writes output token i), a column per source "
    "token, darker = more attention. Slide through training to watch the pattern form. Each head's score is "
    "the attention it puts, on average, on the source token the output comes from (for reverse, output i "
    "comes from source token n-1-i):"
)


def show_timeline(run: ExperimentRun, live: bool) -> None:
    """A slider over training steps: the probe's cross-attention at that step, the loss, the alignment scores.

    `live`: the run shown is still training, so the timeline can follow it.
    """
    _explain(run)
    picked = _pick_step(run, live)
    if picked is not None:
        _show_step(run, *picked)


def _explain(run: ExperimentRun) -> None:
    """What the heatmaps show, and how alignment is scored where the task's outputs each come from one source token."""
    st.header(_("Attention forming during training"))
    scored = run.probe_ideal() is not None
    explained = (
        EXPLAINED_REVERSE if run.experiment.data.task == "reverse" else EXPLAINED if scored else EXPLAINED_UNSCORED
    )
    st.markdown(_(explained, probe=code_span(" ".join(run.probe_src))))
    if not scored:  # the alignment's column says why there is no score
        return
    alignment, right = _("alignment"), _("1 = always the right token, {uniform} = uniform", uniform=r"$\tfrac{1}{n}$")
    st.latex(
        rf"\begin{{gathered}}\text{{{alignment}}} = \frac{{1}}{{n}}\sum_{{i=0}}^{{n-1}} A_{{i,\,\pi(i)}} \\ "
        rf"\text{{{right}}}\end{{gathered}}"
    )


def _pick_step(run: ExperimentRun, live: bool) -> tuple[int, int] | None:
    """The variant (its index) and training step to show, from the widgets; None when it has no snapshot yet."""
    labels = [v.label for v in run.variants]
    # While a run trains, the timeline shows its newest variant and snapshot until the student turns following off.
    # Following widgets are disabled: a press could land on a slider that is being replaced (a browser keeps a
    # slider's old value when its options grow, so a following slider gets a key for each count of snapshots).
    following = live and st.toggle(
        _("Follow training"),
        True,
        key="compare_follow",
        help=_(
            "Shows the variant in training and each new snapshot as it arrives. Turn off to pick a variant and "
            "slide back through the snapshots taken so far."
        ),
    )
    if following or st.session_state.get("compare_timeline_variant") not in labels:
        st.session_state["compare_timeline_variant"] = labels[-1] if following else labels[0]
    label = st.radio(
        _("Variant"),
        labels,
        format_func=said(lambda label: label),  # a variant's label, said in the session's language
        key=worded("compare_timeline_variant"),
        horizontal=True,
        disabled=following,
    )
    index = labels.index(label)
    variant = run.variants[index]
    if not variant.steps:
        st.caption(_("No attention snapshot yet."))
        return None
    if following:
        key = f"timeline_step_{index}_{len(variant.steps)}"
        st.session_state[key] = variant.steps[-1]
    else:  # one slider for every variant: another variant opens at the step picked, to compare them there
        key, picked = "timeline_step_picked", st.session_state.get("timeline_step_picked")
        nearest = variant.steps[-1] if picked is None else min(variant.steps, key=lambda s: abs(s - picked))
        st.session_state[key] = nearest
    step = st.select_slider(
        _("Training step"),
        variant.steps,
        key=key,
        disabled=following,
        help=_("Turn off *Follow training* to pick a step.") if following else None,
    )
    return index, step


def _show_step(run: ExperimentRun, index: int, step: int) -> None:
    """The cross-attention of variant `index` at `step`, layer by layer, and its loss and alignment curves."""
    variant, label, tr = run.variants[index], _(run.variants[index].label), session_translator()
    snapshot = variant.cross[variant.steps.index(step)]
    if not snapshot:
        st.info(
            _(
                "{variant} has no attention to show: its decoder reads one fixed summary of the whole source.",
                variant=label,
            )
        )
    ideal, at = run.probe_ideal() if variant.alignment else None, variant.steps.index(step)
    fit_px = narrowest_chart_px()
    for layer, maps in enumerate(snapshot):  # full width: a column of the heatmap per source token
        title = _("{variant}: cross-attention, layer {layer}, step {step}", variant=label, layer=layer, step=step)
        if ideal is None:
            figure = attention_heatmaps(maps, run.probe_tgt, run.probe_src, title, per_row=2, tr=tr, fit_px=fit_px)
        else:  # the ideal cells outlined and each head's score, as on Train and Decoding
            scores = [variant.alignment[head_label(layer, head)][at] for head in range(len(maps))]
            labels = run.probe_tgt, run.probe_src
            figure = ideal_over_learned(maps, ideal, scores, *labels, title, per_row=2, tr=tr, fit_px=fit_px)
        chart(st, figure, key=f"compare_heads_{layer}", config=PLOTLY_CONFIG)
    if ideal is not None and snapshot:
        st.caption(scoring_rule(run.experiment.data.task))
    loss_col, alignment_col = st.columns(2)
    if variant.history:
        chart(
            loss_col,
            loss_marker_figure(variant.history, step, label, variant_colour(index), tr=tr),
            key="compare_timeline_loss",
            config=PLOTLY_CONFIG,
        )
    if variant.alignment:
        chart(
            alignment_col,
            alignment_figure(variant.steps, variant.alignment, 1 / len(run.probe_src), step, tr=tr),
            key="compare_alignment",
            config=PLOTLY_CONFIG,
        )
    elif snapshot:
        alignment_col.info(
            _(
                "{task} has no fixed source position for each output token, so there is no ideal alignment to score "
                "the heads against.",
                task=run.experiment.data.task,
            )
        )
