"""Decoding, step by step: greedy, sampling and beam search on the model in hand, one generated token per click,
with each step's next-token probabilities and cross-attention, and a comparison with teacher forcing."""

from ui.streamlit_internals import rerun_inside_frame

rerun_inside_frame()  # first of all: see its docstring

import streamlit as st
import torch

from transformer.decoding import beam_search, decode_all_steps, sampling_probs, teacher_forced
from transformer.figures.decoding import (
    ATTENTION_COLUMN_PX,
    beam_tree,
    logit_lens_heatmap,
    probs_bar,
    step_attention_heatmap,
    teacher_forcing_table,
)
from transformer.i18n import N_
from transformer.inspection import logit_lens
from transformer.limits import check_probe_cost
from transformer.link_params import decoding_parsers, write_params
from transformer.literal import code_span, markdown_literal
from transformer.naming import length_span, task_label
from transformer.tasks import DataConfig, TaskData, longest_input, task_of
from ui.accessibility import shortcut_help
from ui.alignment_view import cross_attention_caption, decoding_alignment
from ui.charts import EXPANDER_INSET_PX, chart, narrowest_chart_px
from ui.decoding_inputs import (
    STRATEGY,
    example_text,
    set_input,
    show_what_is_shown,
    source_input,
    strategy_settings,
)
from ui.language import _, on_its_own, said, session_translator, worded
from ui.links import link_values, share_link
from ui.state import (
    claim_inputs,
    following_run,
    in_hand_label,
    keep_result,
    kept_result,
    model_in_hand,
    model_page,
)

ATTENTION_LABELS = {"cross": N_("over the source (cross)"), "self": N_("over its own input (self)")}
TOP_BARS = 10  # bars in the next-token chart
EXTRA_STEPS = 4  # decoding may run this many tokens past the expected output, so a missed EOS shows
LINKED_WIDGETS = {  # link parameter -> widget key
    "input": "decode_input",
    "strategy": STRATEGY,
    "temperature": "decode_temperature",
    "top_k": "decode_top_k",
    "seed": "decode_seed",
    "beam": "decode_beam_width",
}


@st.cache_resource(show_spinner=False, max_entries=16)
def held_out_sources(task: DataConfig) -> list[list[int]]:
    """The task's held-out source sequences (symbol indices): inputs the model never trained on."""
    return TaskData(task).valid_sources


def go_to(step: int) -> None:
    """Show decoding step `step`, kept within the computed steps."""
    last = len(kept_result("decoding").value["steps"]) - 1
    st.session_state["decode_step"] = max(0, min(step, last))


checkpoint = model_page(
    "decode",
    _("Decoding, step by step"),
    _(
        "The decoder writes its output one token at a time and feeds each token back in as input for the next: it "
        "is *auto-regressive* (section 3 of the paper). At step t it turns its last hidden state h_t into a "
        "distribution over the vocabulary, and a decoding strategy picks the next token from it."
    ),
    r"p(y_t \mid y_{<t},\, x) = \mathrm{softmax}(W\, h_t + b)",
)
model, vocab, task = checkpoint.model, checkpoint.vocab, checkpoint.task
examples = held_out_sources(task)

if claim_inputs("decode", task):  # a model for another task, or a first visit: start from one of its examples
    set_input(example_text(examples[0], vocab.symbols), N_("the first held-out example of its task"))

limit = longest_input(task, model.config.longest_sequence)  # repeat's source: half the positions
link = link_values("decode", decoding_parsers(vocab, limit))
st.session_state.update({LINKED_WIDGETS[name]: value for name, value in link.items() if name in LINKED_WIDGETS})
if "input" in link:
    st.session_state["decode_input_origin"] = (link["input"], N_("the opened link"))
show_what_is_shown(checkpoint, in_hand_label(model_in_hand()[1]))
if link.keys() & {"input", "step"}:
    st.session_state["decode_link_step"] = link.get("step")  # None: the last step, the whole output
text = source_input(task, vocab, limit, examples)
strategy, temperature, top_k, seed, beam_width = strategy_settings(len(vocab))

try:
    ids = vocab.encode(text, max_len=limit, symbols=task_of(task).source_symbols(task.n_symbols))
except ValueError as err:
    example = code_span(example_text(examples[0], vocab.symbols))
    st.error(_("{error}. For example: {example}.", error=markdown_literal(on_its_own(_(err))), example=example))
    st.stop()
if not task.min_len <= len(ids) <= task.max_len:
    st.warning(
        _(
            "The model was trained on lengths {lengths}; an input of {n} tests whether it generalizes beyond "
            "them. The Length test page scores every length at once.",
            lengths=length_span(task),
            n=len(ids),
        )
    )

# All steps are computed once per (model, input, strategy, settings); Next and Back only move through them.
key = (tuple(ids), strategy, temperature, top_k, seed, beam_width)
kept = kept_result("decoding")  # (model, key, trace) of the steps last computed
st.session_state.setdefault("decode_step", 0)  # a reload's session takes back the steps, not the one it was at
trace = None if kept is None else kept.value
live, model_step = following_run(), checkpoint.history[-1]["step"] if checkpoint.history else 0
if (
    kept is not None
    and kept.key == key
    and kept.model is not model
    and live
    and trace["live"]
    and not st.session_state.pop("decode_refresh", False)
):
    # The run in hand trained on: keep the walkthrough on the snapshot it started with until the student asks.
    info_col, refresh_col = st.columns([4, 1], vertical_alignment="center")
    info_col.info(
        _(
            "The run has trained on to step {step}; these steps still show the model as of step {shown}.",
            step=model_step,
            shown=trace["model_step"],
        )
    )
    refresh_col.button(
        _("Decode again"),
        key="decode_refresh_button",
        width="stretch",
        on_click=lambda: st.session_state.update(decode_refresh=True),
        help=_("Recompute every step with the run's newest model, staying at this step."),
    )
elif kept is None or kept.model is not model or kept.key != key:
    symbols = [vocab.symbol_index(i) for i in ids]
    try:  # a typed input may have no target: not a sum for add, no pair's source for a task from examples
        expected, no_target = [vocab.symbol_id(s) for s in task_of(task).target(symbols, task.n_symbols)], None
    except ValueError as err:
        expected, no_target = None, err
    src = torch.tensor([ids], device=next(model.parameters()).device)  # (1, S)
    longest = model.config.max_len if expected is None else len(expected) + 1 + EXTRA_STEPS
    bos, eos, max_len = vocab.bos_id, vocab.eos_id, longest
    try:  # three passes: the steps, the beam's own search or the greedy output, and the teacher-forced one
        check_probe_cost(model.config, beam_width if strategy == "beam" else 1, max_len, passes=3)
        steps = decode_all_steps(model, src, bos, eos, max_len, strategy, temperature, top_k, beam_width, seed)
        if strategy == "beam":
            output = beam_search(model, src, bos, eos, max_len, beam_width)[0]
        else:
            output = [s.token for s in steps]
        forced = None if expected is None else teacher_forced(model, src, [bos, *expected])
    except ValueError as err:
        st.error(_("Could not decode this input: {error}", error=markdown_literal(_(err))))
        st.stop()
    same_input = kept is not None and kept.key == key  # only the model changed: a training run moved on
    st.session_state["decode_step"] = min(st.session_state["decode_step"], len(steps) - 1) if same_input else 0
    trace = dict(steps=steps, output=output, expected=expected, forced=forced, live=live, model_step=model_step)
    trace["no_target"] = no_target
    kept = keep_result("decoding", model, key, trace)
if "decode_link_step" in st.session_state:  # the link's step (1-based), once the steps are known
    wanted = st.session_state.pop("decode_link_step")
    go_to(len(trace["steps"]) - 1 if wanted is None else wanted - 1)
steps, i = trace["steps"], st.session_state["decode_step"]
step, last = steps[i], len(steps) - 1
linked = {"input": vocab.decode(ids)}
if strategy == "sample":
    linked |= {"strategy": strategy, "temperature": temperature, "top_k": top_k or 0, "seed": seed}
elif strategy == "beam":
    linked |= {"strategy": strategy, "beam": beam_width}
share_link(write_params(linked if i == last else {**linked, "step": i + 1}))
if trace["expected"] is None:  # said from the first step, not only once the student has stepped to the end
    no_target = trace["no_target"]  # a Message: why the task has none
    reason = markdown_literal(_(no_target))
    st.info(_("The task has no expected output for this input ({reason}): nothing to compare with.", reason=reason))

reset_col, back_col, next_col, end_col = st.columns(4)
reset_col.button(
    _("Reset"),
    key="decode_reset",
    icon=":material/first_page:",
    on_click=go_to,
    args=(0,),
    disabled=i == 0,
    width="stretch",
)
back_col.button(
    _("Back"),
    key="decode_back",
    icon=":material/chevron_left:",
    on_click=go_to,
    args=(i - 1,),
    disabled=i == 0,
    width="stretch",
    help=shortcut_help(_("Go back one token."), "Left"),
    shortcut="Left",
)
next_col.button(
    _("Next"),
    key="decode_next",
    icon=":material/chevron_right:",
    on_click=go_to,
    args=(i + 1,),
    disabled=i == last,
    type="primary",
    width="stretch",
    help=shortcut_help(_("Decode the next token."), "Right"),
    shortcut="Right",
)
end_col.button(
    _("Run to end"),
    key="decode_run_to_end",
    icon=":material/last_page:",
    on_click=go_to,
    args=(last,),
    disabled=i == last,
    width="stretch",
)

chips = " ".join(map(code_span, vocab.tokens(step.prefix)))
chance = _("model p = {p:.2f}", p=float(step.probs[step.token]))
if strategy == "sample":
    shown = sampling_probs(step.probs.log(), temperature, top_k)  # what the draw used
    chance = _("{chance}, sampled with p = {p:.2f}", chance=chance, p=float(shown[step.token]))
st.markdown(
    _(
        "**Step {step} of {steps}** · decoder input so far: {chips} → chooses **{token}** ({chance})",
        step=i + 1,
        steps=len(steps),
        chips=chips,
        token=code_span(vocab.tokens([step.token])[0]),
        chance=chance,
    )
)
if strategy == "beam":
    st.caption(_("Beam search: the prefix, probabilities and attention follow this step's best hypothesis."))

src_labels, tr = vocab.tokens(ids), session_translator()
probs_col, attention_col = st.columns([2, 3])  # the heatmap needs the room: a column per source token
with probs_col:
    if strategy == "sample":
        # no-break spaces keep each setting with its value when the title wraps
        title = _(
            "Sampling distribution (temperature\u00a0{temperature:g}, top-k\u00a0{top_k})",
            temperature=temperature,
            top_k=top_k or _("all"),
        )
    else:
        shown, title = step.probs, _("Next-token probabilities")
    chart(st, probs_bar(shown, vocab.itos, step.token, TOP_BARS, title, tr=tr), key="decode_probs")
with attention_col:
    kind_col, layer_col = st.columns([3, 2])
    kind = kind_col.radio(
        _("Attention"), ["cross", "self"], format_func=said(ATTENTION_LABELS.get), key=worded("decode_attention")
    )
    layer = layer_col.selectbox(_("Decoder layer"), range(len(step.cross_attention)), key="decode_layer")
    fit_px = narrowest_chart_px(ATTENTION_COLUMN_PX)
    if kind == "cross":
        chart(
            st,
            step_attention_heatmap(
                step.cross_attention[layer],
                src_labels,
                _("Cross-attention of step {step}, layer {layer}", step=i + 1, layer=layer),
                tr=tr,
                fit_px=fit_px,
            ),
            key="decode_cross_attention",
        )
        st.caption(cross_attention_caption(task, examples[0]))
    else:
        chart(
            st,
            step_attention_heatmap(
                step.self_attention[layer],
                vocab.tokens(step.prefix),
                _("Self-attention of step {step}, layer {layer}", step=i + 1, layer=layer),
                keys="input",
                tr=tr,
                fit_px=fit_px,
            ),
            key="decode_self_attention",
        )
        st.caption(
            _(
                "Where this step's query looks among the decoder's inputs so far: BOS, then the tokens already "
                "written. Later positions do not exist yet while decoding; in training they do, and the causal mask "
                "is what hides them."
            )
        )
decoding_alignment(steps, ids, task.task, vocab, layer)
# Logit lens: each decoder layer's guess at this step, computed once per step shown.
with st.expander(_("Logit lens: at which layer does the answer appear?"), key="decoding_lens_expander"):
    lens = trace.setdefault("lens", {})
    if i not in lens:
        lens[i] = logit_lens(kept.model, torch.tensor([ids]), step.prefix)
    guess = _("Each decoder layer's next-token guess, step {step}", step=i + 1)
    lens_px = narrowest_chart_px() - EXPANDER_INSET_PX
    chart(st, logit_lens_heatmap(lens[i], vocab.itos, title=guess, tr=tr, fit_px=lens_px), key="decode_logit_lens")
    st.caption(
        _(
            "Each row sends one decoder layer's output at this step straight to the generator (through the final "
            "LayerNorm, where a pre-norm model has one), as if the stack ended there; the last row is the model's "
            "own distribution, before any temperature or top-k. A row that already puts most of its probability on "
            "the chosen token shows the layer where the answer appears; the layers above only confirm it."
        )
    )

if strategy == "beam":
    best = [vocab.bos_id, *trace["output"]] if i == last else None
    chart(st, beam_tree(steps[: i + 1], vocab.itos, best, tr=tr), key="decode_beam_tree")

if i == last and trace["expected"] is None:  # nothing to compare with, as said above
    answer = vocab.decode(trace["output"])
    st.success(_("Output: {output}", output=code_span(answer) if answer else _("(empty)")))
elif i == last:
    output, expected = trace["output"], trace["expected"]
    answer, right_answer = vocab.decode(output), vocab.decode(expected)
    with st.container(key="decode_output"):
        st.success(_("Output: {output}", output=code_span(answer) if answer else _("(empty)")))
        verdict = (
            _(":green[:material/check_circle: right]") if answer == right_answer else _(":red[:material/cancel: wrong]")
        )
        st.markdown(
            _(
                "Expected ({task}): {answer} {verdict}",
                task=markdown_literal(task_label(task)),
                answer=code_span(right_answer),
                verdict=verdict,
            )
        )
    if strategy == "beam":
        st.caption(
            _(
                "Beam search returns the finished hypothesis with the highest summed log-probability (the thick line "
                "above), which may have finished before the last step."
            )
        )

    st.header(_("Compare with teacher forcing"))
    st.markdown(
        _(
            "In training the decoder is fed the **true** previous tokens (teacher forcing); when decoding it is fed "
            "**its own** previous outputs, so one early mistake can derail every token after it. Red cells differ "
            "from the target."
        )
    )
    st.dataframe(
        teacher_forcing_table(
            vocab.tokens([*expected, vocab.eos_id]), vocab.tokens(trace["forced"]), vocab.tokens(output), tr=tr
        ),
        hide_index=True,
    )
