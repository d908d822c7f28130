"""Link encoding: a page's settings as URL query parameters, and back, every value checked against the app's
bounds. A bad value falls back to its default with a notice; nothing here ever raises on a link.

`read_params` reads the values a page names with one `Parser` each (`choice`, `whole`, `number`, `sequence`
through the model's Vocab, `length_range`, `switch_values`); `write_params` writes them back. The model in hand,
Decoding, Masking lab and Length test have their parsers here, and a setting of a run its own (`setting_param`);
Compare's settings are `compare_state.CompareState`.
"""

import math
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, get_args

from .decoding import Strategy
from .device import pick_device
from .experiments.definitions import Switch, SwitchValue
from .i18n import LANGUAGES, N_, Message, language_for, message_of
from .limits import (
    DECODING_BEAM_WIDTHS,
    DECODING_SEEDS,
    DECODING_TEMPERATURES,
    MAX_DECODE_STEPS,
    MAX_PARAM_CHARS,
    MAX_VARIANTS,
)
from .literal import printable
from .settings import Setting, Value
from .vocab import Vocab

Parser = Callable[[str], Any]  # a link's text -> the value it stands for; ValueError saying what it must be
CLASS_CODE = re.compile(r"[a-z]{2,12}-[a-z]{2,12}-[0-9]{4}")


def _param(params: Mapping[str, Any], name: str) -> str | None:
    """The text of parameter `name`, or None; a repeated parameter's last value counts, as in st.query_params."""
    value = params.get(name)
    if isinstance(value, (list, tuple)):
        value = value[-1] if value else None
    return None if value is None else str(value)


DEFAULT_USED = N_("The link's {name} {problem}, so the page's default is used.")
LEFT_OUT = N_("The link's {name} {problem}, so the page opens without it.")  # a class or board: it has no default


def read_params(
    params: Mapping[str, Any], parsers: Mapping[str, Parser], notice: str = DEFAULT_USED
) -> tuple[dict[str, Any], list[Message]]:
    """The values of the parameters `parsers` names that the link holds, each checked by its parser; a bad one is
    left out with a `notice` (DEFAULT_USED, or LEFT_OUT for a parameter with no default). Never raises: unknown
    parameters are ignored, and notices never repeat a value."""
    values, notices = {}, []
    for name, parse in parsers.items():
        if (text := _param(params, name)) is None:
            continue
        try:
            if len(text) > MAX_PARAM_CHARS:
                raise ValueError(Message(N_("is longer than {most} characters"), most=MAX_PARAM_CHARS))
            values[name] = parse(text)
        except ValueError as err:
            notices.append(Message(notice, name=name, problem=message_of(err)))
    return values, notices


MOST_NAMED = 5  # a notice of parameters a page does not take names at most this many
NAME_CHARS = 24  # of a parameter's name a notice shows at most this many characters


def untaken_params(params: Mapping[str, Any], taken: Collection[str]) -> list[str]:
    """The names of the link's parameters that are not among `taken` (a page's own and the lab's), which the page
    drops (a teacher's `?task=add` on a page that takes no settings from a link): the first MOST_NAMED, each cut to
    NAME_CHARS, and "…" for the rest. Names only, never values: a link is anyone's text."""
    names = [printable(name) for name in params if name not in taken]  # a direction override turned no text round
    shown = [name if len(name) <= NAME_CHARS else name[: NAME_CHARS - 1] + "…" for name in names[:MOST_NAMED]]
    return shown + (["…"] if len(names) > MOST_NAMED else [])


def write_params(values: Mapping[str, Any]) -> dict[str, str]:
    """Values as URL query parameters, the inverse of `read_params` (a pair of lengths as "low-high")."""
    return {name: "-".join(map(str, v)) if isinstance(v, tuple) else str(v) for name, v in values.items()}


def choice(options: Sequence[str | int]) -> Parser:
    """One of `options`, written as `str` writes it."""

    def parse(text: str) -> str | int:
        for option in options:
            if str(option) == text.strip():
                return option
        raise ValueError(Message(N_("is not one of {options}"), options=", ".join(map(str, options))))

    return parse


def whole(low: int, high: int) -> Parser:
    """A whole number in low..high."""

    def parse(text: str) -> int:
        if not text.strip().isdecimal() or not low <= int(text) <= high:
            raise ValueError(Message(N_("is not a whole number in {low}..{high}"), low=low, high=high))
        return int(text)

    return parse


def number(low: float, high: float) -> Parser:
    """A number in [low, high]."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not low <= value <= high:  # NaN and infinities fail too
            raise ValueError(Message(N_("is not a number in {low:g}..{high:g}"), low=low, high=high))
        return value

    return parse


def sequence(vocab: Vocab, max_len: int) -> Parser:
    """A source or target sequence of `vocab`'s symbols, at most `max_len` of them, written as `vocab` writes it."""

    def parse(text: str) -> str:
        try:
            return vocab.decode(vocab.encode(text, max_len=max_len))
        except ValueError:  # its message quotes the text: not repeated
            problem = N_("is not a sequence of at most {max_len} of this model's symbols")
            raise ValueError(Message(problem, max_len=max_len)) from None

    return parse


def length_range(low: int, high: int) -> Parser:
    """Two whole numbers "a-b" with low <= a <= b <= high."""

    def parse(text: str) -> tuple[int, int]:
        a, _, b = text.partition("-")
        if not (a.strip().isdecimal() and b.strip().isdecimal() and low <= int(a) <= int(b) <= high):
            raise ValueError(Message(N_("is not a range a-b within {low}..{high}, a at most b"), low=low, high=high))
        return int(a), int(b)

    return parse


def switch_values(switch: Switch) -> Parser:
    """2 to MAX_VARIANTS different choices of `switch`, separated by commas, as `Switch.token` writes them (a choice
    named twice counts once)."""

    def parse(text: str) -> tuple[SwitchValue, ...]:
        try:
            values = tuple(dict.fromkeys(switch.parse(v) for v in text.split(",")))
        except ValueError:  # its message is the choices, said below
            values = ()
        if not 2 <= len(values) <= MAX_VARIANTS:
            tokens = ", ".join(map(switch.token, switch.choices))
            problem = N_("is not 2-{most} different settings of {setting} among {tokens}")
            raise ValueError(Message(problem, most=MAX_VARIANTS, setting=Message(switch.title), tokens=tokens))
        return values

    return parse


AUTO = "auto"  # a setting left for the run to pick (a default of None), as a link writes it


def setting_param(s: Setting) -> Parser:
    """A value of setting `s` within its bounds (`Setting.bounds`), written as `setting_token` writes it."""
    parse = choice(s.options) if s.options else whole(*s.bounds) if s.kind == "int" else number(*s.bounds)

    def parse_setting(text: str) -> Value:
        if s.default is None and text.strip() == AUTO:
            return None
        value = parse(text)
        if s.name == "device":  # one this server has: a link from a GPU's server opens with a notice here
            try:
                pick_device(str(value))
            except ValueError:
                missing = N_("asks for {device}, which this server does not have")
                raise ValueError(Message(missing, device=value)) from None
        return value

    return parse_setting


def setting_token(value: Value) -> str:
    """A setting's value as a link writes it, read back by `setting_param`."""
    return AUTO if value is None else str(value)


# ------------------------------------------------------------------------------------------- the model in hand


def class_code_parser() -> Parser:
    """A class's code as `classroom.codes` draws it (`amber-otter-7351`): its shape only; the class database says
    whether such a class exists."""

    def parse(text: str) -> str:
        code = text.strip().lower()
        if not CLASS_CODE.fullmatch(code):
            raise ValueError(Message(N_("is not a class code like amber-otter-7351")))
        return code

    return parse


def language_parser() -> Parser:
    """`lang`: an interface language, `zh-CN` (a tag naming one, as `zh` or `en-GB`, reads as that language)."""

    def parse(text: str) -> str:
        if (language := language_for(text)) is None:
            raise ValueError(Message(N_("is not one of {options}"), options=", ".join(LANGUAGES)))
        return language

    return parse


def model_parsers(shipped: Sequence[str]) -> dict[str, Parser]:
    """`model`: the name of a shipped checkpoint (a trained or uploaded model cannot travel in a link)."""
    return {"model": choice(shipped)}


# ---------------------------------------------------------------------------------------------------- Decoding

STRATEGIES: tuple[str, ...] = get_args(Strategy)


def decoding_parsers(vocab: Vocab, max_len: int) -> dict[str, Parser]:
    """The Decoding page's input, strategy, step (1-based), and the strategy's settings. A link with an input but
    no step shows the last step: the whole output."""
    return {
        "input": sequence(vocab, max_len),
        "strategy": choice(STRATEGIES),
        "step": whole(1, MAX_DECODE_STEPS),
        "temperature": number(*DECODING_TEMPERATURES),
        "top_k": whole(0, len(vocab)),
        "seed": whole(*DECODING_SEEDS),
        "beam": whole(*DECODING_BEAM_WIDTHS),
    }


# ------------------------------------------------------------------------------------------------- Masking lab


def masking_parsers(vocab: Vocab, max_len: int) -> dict[str, Parser]:
    """The Masking lab's source, target, and the length both are padded to."""
    return {"source": sequence(vocab, max_len), "target": sequence(vocab, max_len), "pad": whole(1, max_len)}


# ------------------------------------------------------------------------------------------------- Length test


def lengths_parsers(lengths: range) -> dict[str, Parser]:
    """The Length test's range of input lengths, "low-high", within `lengths`."""
    return {"lengths": length_range(lengths[0], lengths[-1])}
