"""Length test: the model in hand on unseen inputs of every length, shorter and longer than any it trained on."""

from ui.streamlit_internals import rerun_inside_frame

rerun_inside_frame()  # first of all: see its docstring

from functools import partial

import streamlit as st

from transformer.checkpoint import Checkpoint
from transformer.figures.lengths import length_accuracy_figure, output_length_figure
from transformer.i18n import N_, Message
from transformer.lengths import LengthReport, inputs_within_budget, score_lengths, summary, testable_lengths, untested
from transformer.limits import INPUTS_PER_LENGTH
from transformer.link_params import lengths_parsers, write_params
from transformer.literal import markdown_literal
from transformer.naming import length_span, task_label
from ui.charts import chart
from ui.common import shipped_checkpoint
from ui.downloads import csv_download
from ui.language import _, session_translator
from ui.links import link_values, share_link
from ui.report_view import keep_class_length_test
from ui.state import claim_inputs, decode_on_decoding_page, model_page, per_model, shipped_name
from ui.tables import apart, symbols_apart


@st.cache_resource(show_spinner=False, max_entries=64)
def shipped_report(name: str, low: int, high: int, n: int) -> LengthReport:
    """A shipped model's test, scored once per server and shared read-only: a class opening the page together waits
    once."""
    checkpoint = shipped_checkpoint(name)
    return score_lengths(checkpoint.model, checkpoint.vocab, checkpoint.task, range(low, high + 1), n)


checkpoint = model_page(
    "lengths",
    _("Length test: inputs it never saw"),
    _(
        "A model that gets every held-out input right has learned its task *for the lengths it trained on*. Here "
        "it meets unseen inputs of every length, shorter and longer ones included, and decodes them greedily. At the "
        "trained lengths the inputs come from the run's held-out set; at every other length they are random, since "
        "training never drew that length at all."
    ),
)
model, vocab, task = checkpoint.model, checkpoint.vocab, checkpoint.task
lengths = testable_lengths(task, model.config)
if claim_inputs("lengths", task):  # a model for another task: its own lengths, from the slider's default
    st.session_state.pop("lengths_range", None)
if "lengths" in (link := link_values("lengths", lengths_parsers(lengths))):
    st.session_state["lengths_range"] = link["lengths"]
if not set(st.session_state.get("lengths_range", ())) <= set(lengths):  # chosen for another model in hand
    del st.session_state["lengths_range"]

range_col, n_col = st.columns([3, 1])
if len(lengths) > 1:
    low, high = range_col.slider(
        _("Input lengths"),
        lengths[0],
        lengths[-1],
        (lengths[0], min(lengths[-1], 2 * task.max_len)),
        key="lengths_range",
        persist_state="session",
        help=_(
            "The model trained on lengths {lengths}. The test offers lengths {first}-{last}: those its task has "
            "inputs of, up to the longest its positional encoding covers.",
            lengths=length_span(task),
            first=lengths[0],
            last=lengths[-1],
        ),
    )
else:  # a slider needs two values to slide between
    low = high = lengths[0]
    range_col.markdown(_("Input length: {n}, the only one this model can be tested at.", n=low))
if lengths[-1] <= task.max_len:  # translate's sentences are at most 7 words; a model's positions may end there too
    st.caption(
        _(
            "No input longer than those it trained on can be tested: {task}'s inputs, or this model's positions, "
            "end at length {n}.",
            task=markdown_literal(task_label(task)),
            n=lengths[-1],
        )
    )
n = n_col.select_slider(
    _("Inputs per length"),
    INPUTS_PER_LENGTH,
    100,
    key="lengths_n",
    persist_state="session",
    help=_("At most: the held-out set has fewer of the shortest lengths."),
)

affordable = inputs_within_budget(model.config, range(low, high + 1), n)
if affordable == 0:
    st.error(_("This model is too large to test so many lengths at once on a shared server: choose fewer lengths."))
    st.stop()
if affordable < n:
    st.caption(
        _(
            "This model is large: {n} inputs per length, so that one test stays within a few seconds.",
            n=affordable,
        )
    )
    n = affordable
share_link(write_params({"lengths": (low, high)}))


def score_every_length(checkpoint: Checkpoint, low: int, high: int, n: int) -> LengthReport:
    try:
        with st.spinner(_("Decoding up to {n:,} inputs...", n=n * (high - low + 1))):
            name = shipped_name(checkpoint)
            return (
                shipped_report(name, low, high, n)
                if name
                else score_lengths(checkpoint.model, checkpoint.vocab, checkpoint.task, range(low, high + 1), n)
            )
    except ValueError as err:
        st.error(_("Could not test this model: {error}", error=markdown_literal(_(err))))
        st.stop()


scoring = partial(score_every_length, checkpoint, low, high, n)
report: LengthReport = per_model("lengths", model, (low, high, n), scoring)  # once per (model, settings)
keep_class_length_test(model, report)  # a class student's test of their run's model joins their class report
scores, mistakes = report.scores, report.mistakes

asked, tr = range(low, high + 1), session_translator()
st.markdown("\n".join(f"- {_(line)}" for line in summary(scores, task, asked)))
if left_out := untested(scores, asked, task, tr):
    st.info("\n\n".join(left_out), icon=":material/info:")
accuracy_col, length_col = st.columns(2)
chart(accuracy_col, length_accuracy_figure(scores, tr=tr), key="lengths_accuracy")
chart(length_col, output_length_figure(scores, tr=tr), key="lengths_output")
st.caption(
    _(
        "Exact match needs the whole output right, EOS included; *symbols in the right place* counts the expected "
        "symbols the output has at the same position, so it shows how far off a wrong output is. What to look for: "
        "whether exact match holds outside the trained lengths, and whether the output length still follows the "
        "expected one. A task whose output grows with its input often fails within a symbol or two past the "
        "longest trained length: the shipped models stop near the longest they saw (*reverse*, trained on lengths "
        "1-10, writes 10.4 to 10.8 symbols on average for inputs of 11 to 16); below the shortest, the output "
        "length can be far off either way. Past the longest, the positions are new to the model too: sinusoidal "
        "encodings it never learned to read, or, with a learned encoding, vectors never trained at all (see the "
        "position similarity on Anatomy)."
    )
)

st.header(_("Wrong outputs"))
if mistakes.empty:
    st.success(_("Every output was right."))
else:
    wrong_at = sorted(mistakes["length"].unique().tolist())
    pick = st.selectbox(
        _("Input length"),
        wrong_at,
        key="lengths_mistakes_at",
        help=_("Only lengths with a wrong output are listed; up to 5 of them each."),
    )
    shown = mistakes[mistakes["length"] == pick].reset_index(drop=True)
    headers = {"input": _("input"), "expected": _("expected"), "output": _("output")}
    st.dataframe(symbols_apart(shown.drop(columns="length")).rename(columns=headers), hide_index=True)
    row_col, button_col = st.columns([3, 1], vertical_alignment="bottom")
    outputs = dict(zip(shown["input"], shown["output"]))  # distinct inputs: options change with the length
    wrong_input = row_col.selectbox(
        _("Wrong output to decode"),
        list(outputs),
        key="lengths_decode_row",
        format_func=lambda text: f"{apart(text)}  →  {apart(outputs[text])}",
    )
    if button_col.button(
        _("Decode it step by step"),
        key="lengths_decode",
        icon=":material/skip_next:",
        width="stretch",
        help=_("Opens it on the Decoding page: watch where its attention goes, one token at a time."),
    ):
        origin = Message(N_("a wrong output of the Length test, length {length}"), length=pick)
        decode_on_decoding_page(wrong_input, task, origin)
csv_download(
    st,
    _("Download the scores (CSV)"),
    scores,
    f"length-test-{task.task}.csv",
    "lengths_download",
    icon=":material/download:",
)
