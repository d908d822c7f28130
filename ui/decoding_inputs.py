"""The Decoding page's inputs: the source sequence, and the decoding strategy with its settings."""

import random

import streamlit as st

from transformer import Checkpoint
from transformer.i18n import N_
from transformer.limits import DECODING_BEAM_WIDTHS, DECODING_SEEDS, DECODING_TEMPERATURES
from transformer.literal import markdown_literal
from transformer.naming import length_span, task_label
from transformer.tasks import DataConfig, task_of
from transformer.vocab import Vocab
from ui.language import _, on_its_own, said, worded

STRATEGIES = {
    "greedy": (N_("Greedy"), N_("take the most likely token")),
    "sample": (N_("Sampling"), N_("draw the token at random from the distribution")),
    "beam": (N_("Beam search"), N_("keep the k best partial outputs")),
}
RANDOM_EXAMPLE = N_("a random held-out example")  # where an input came from, said when it is shown
DEFAULTS = {"decode_temperature": 1.0, "decode_top_k": 0, "decode_seed": 0, "decode_beam_width": 3}  # 0: all tokens
STRATEGY = "decode_strategy"  # session_state key: the strategy's radio


def example_text(source: list[int], symbols: tuple[str, ...]) -> str:
    """A source sequence of symbol indices as the text a student would type."""
    return " ".join(symbols[s] for s in source)


def set_input(text: str, origin: str) -> None:
    """Put `text` in the input box; `origin` says where it comes from, e.g. RANDOM_EXAMPLE (translated when
    shown)."""
    st.session_state["decode_input"] = text
    st.session_state["decode_input_origin"] = (text, origin)


def show_what_is_shown(checkpoint: Checkpoint, label: str) -> None:
    """One line naming the model in hand and where the input comes from."""
    task, history, name = checkpoint.task, checkpoint.history, markdown_literal(label)
    lengths = dict(task=markdown_literal(task_label(task)), lengths=length_span(task))
    if history:
        model = _(
            "**{name}** ({task}, trained on lengths {lengths} for {steps} steps)",
            name=name,
            steps=history[-1]["step"],
            **lengths,
        )
    else:
        model = _("**{name}** ({task}, trained on lengths {lengths})", name=name, **lengths)
    text, origin = st.session_state.get("decode_input_origin", (None, ""))
    where = origin if text == st.session_state.get("decode_input") else N_("typed by you")
    st.markdown(_("Decoding with {model} · input: {origin}.", model=model, origin=markdown_literal(_(where))))


def source_input(task: DataConfig, vocab: Vocab, limit: int, examples: list[list[int]]) -> str:
    """The source sequence to decode, typed or drawn at random from the task's held-out `examples`."""
    text_col, random_col = st.columns([3, 1], vertical_alignment="bottom")
    text = text_col.text_input(
        _(
            "Source sequence ({task}: {description} {hint})",
            task=markdown_literal(task_label(task)),
            description=_(task_of(task).description),
            hint=on_its_own(_(vocab.input_hint(limit))),
        ),
        key="decode_input",
        persist_state="session",
    )
    random_col.button(
        _("Random"),
        key="decode_random",
        icon=":material/shuffle:",
        on_click=lambda: set_input(example_text(random.choice(examples), vocab.symbols), RANDOM_EXAMPLE),
        help=_("A random held-out sequence of the task: the model never saw it in training."),
        width="stretch",
    )
    return text


def strategy_settings(vocab_size: int) -> tuple[str, float, int | None, int, int]:
    """The decoding strategy and its settings: (strategy, temperature, top_k, seed, beam width); the settings a
    strategy does not use keep their defaults. Each widget shows the value its key holds, DEFAULTS at first, and
    keeps it while the student visits other pages."""
    for key, value in DEFAULTS.items():
        st.session_state.setdefault(key, value)
    strategy = st.radio(
        _("Strategy"),
        list(STRATEGIES),
        format_func=said(lambda s: STRATEGIES[s][0]),
        captions=[_(caption) for name, caption in STRATEGIES.values()],
        horizontal=True,
        key=worded(STRATEGY),
        persist_state="session",
    )
    temperature, top_k, seed = DEFAULTS["decode_temperature"], None, DEFAULTS["decode_seed"]
    beam_width = DEFAULTS["decode_beam_width"]
    if strategy == "sample":
        t_col, k_col, seed_col = st.columns(3)
        temperature = t_col.slider(
            _("Temperature"),
            *DECODING_TEMPERATURES,
            step=0.1,
            key="decode_temperature",
            persist_state="session",
            help=_("Divides the logits before the softmax: below 1 sharpens, above 1 flattens."),
        )
        top_k = (
            k_col.number_input(
                _("Top-k (0 = all tokens)"),
                0,
                vocab_size,
                key="decode_top_k",
                persist_state="session",
                help=_("Sample only among the k most likely tokens."),
            )
            or None
        )
        seed = seed_col.number_input(
            _("Seed"),
            *DECODING_SEEDS,
            key="decode_seed",
            persist_state="session",
            help=_("The same seed draws the same sequence; change it to draw another."),
        )
    elif strategy == "beam":
        beam_width = st.slider(
            _("Beam width"),
            *DECODING_BEAM_WIDTHS,
            key="decode_beam_width",
            persist_state="session",
            help=_(
                "Hypotheses kept at each step, ranked by summed log-probability, which favours shorter outputs; the "
                "paper used width 4 with a length penalty against that. 1 is greedy."
            ),
        )
    return strategy, temperature, top_k, seed, beam_width
