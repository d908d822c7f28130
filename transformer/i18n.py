"""The interface's languages: gettext catalogues read with Babel, and one translator per language.

Nothing here is process-wide (no `gettext.install`): a page asks `translator(language)` for the session's own.
The package marks what it says to people and leaves translating to the page that shows it:

    N_("Pick a task")                                   # marks a fixed sentence for the catalogue
    Message(N_("seed must be in 0..{top}"), top=9999)   # a sentence with parameters, filled in after translation

An exception whose text a page shows is raised with a Message as its one argument, so `str(exc)` stays the English
sentence (logs, the command line, tests) and a page shows `_(exc)`, translated; any other exception shows as its
English text. Text is never built from a Message (slicing, `+`, `%` and `*` raise a TypeError): it would be English
no page could translate; pass it as a parameter instead. A parameter that is itself a Message or such an exception is
translated too:

    raise ValueError(Message(N_("seed must be in 0..{top}"), top=9999))
    raise ValueError(Message(N_("could not read {name}: {reason}"), name=name, reason=err))   # err translated too

A catalogue is every `.po` file under `locale/<language>/`, one per area of the app, merged when first read; the
`.po` files are read directly (no compiled `.mo` in the repository). A sentence missing from a catalogue shows in
English, and so does a translation whose placeholders differ from its sentence's. Placeholders are `str.format`
names: `{top}`, never positional. Terms that stay in Latin letters in every language (d_model, Softmax, Q/K/V, code
names) are listed in `locale/allow_list.txt` (`latin_terms`). docs/translation.md says how to add a language.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from gettext import c2py
from pathlib import Path
from string import Formatter
from typing import NoReturn

from babel.messages.plurals import get_plural
from babel.messages.pofile import read_po

LANGUAGES = {"en": "English", "zh-CN": "简体中文"}  # language tag -> its own name, for the picker
DEFAULT_LANGUAGE = "en"  # the language the code is written in
LOCALE_DIR = Path(__file__).parent / "locale"
ALLOW_LIST = LOCALE_DIR / "allow_list.txt"  # terms kept in Latin letters in every language, one a line
SOURCE_PLURAL = get_plural(DEFAULT_LANGUAGE).plural_expr  # the code's own language's plural rule: `(n != 1)`
_english_plural = c2py(SOURCE_PLURAL)
# Languages written without spaces between their characters: a translation spaces a placeholder off from its words
# for the numbers and Latin names it mostly holds ("共 {n} 个"), and the space goes where it holds the lab's own words
# in the language's characters ("全部 48" in "的 {sample} 个": "的全部 48 个"; `_closed_up`).
CLOSED_UP = {"zh-CN"}
_FORMATTER = Formatter()


def N_(message: str) -> str:
    """Mark `message` for the catalogue without translating it (it is translated where a page shows it)."""
    return message


def _untranslated(operation: str) -> Callable[..., NoReturn]:
    """A `str` operation that a Message refuses: it would build English text that no page could translate."""

    def refuse(self: Message, *args: object) -> NoReturn:
        raise TypeError(
            f"{operation} of a Message would build untranslated English text: translate it first (`_(message)` on a"
            " page, `translator(language)(message)`), pass it as a parameter of another Message, or take its"
            " English explicitly with `message.english`"
        )

    return refuse


class Message(str):
    """A sentence for a person, kept as its English template and its parameters until a page translates it. It is
    the English sentence itself (a `str`), so code and tests that read text read it unchanged (`str(message)`,
    `==`, hashing, `in`, `.startswith`); a page that shows it translates it with `_(message)`.

    Building new text from it fails loudly: slicing, `+`, `%` and `*` raise a TypeError, since their result would
    be English that no page can translate; `message.english` is the English text, taken on purpose. An f-string or
    `str.format` still reads the English sentence: logs, the command line and exception texts build lines with
    them, and a page never shows such a line (it translates the Message, or the exception raised with it).
    `str.join` and `str(message)` give English too (Python builds those without asking the Message)."""

    template: str
    params: Mapping[str, object]

    __getitem__ = _untranslated("Slicing or indexing")
    __add__ = __radd__ = _untranslated("Concatenation (+)")
    __mod__ = __rmod__ = _untranslated("%-formatting")
    __mul__ = __rmul__ = _untranslated("Repetition (*)")

    @property
    def english(self) -> str:
        """The English sentence as plain text, for code that builds text from it on purpose (a log line cut short)."""
        return str.__str__(self)

    def __new__(cls, template: str, **params: object) -> Message:
        if isinstance(template, Message) and not params:  # a sentence that is already a Message stays itself
            return template
        message = super().__new__(cls, template.format(**params) if params else template)
        message.template, message.params = template, params
        return message

    def __reduce__(self) -> tuple:  # pickled as its template and parameters (a run's notice crosses processes)
        return _message, (self.template, self.params)


def _message(template: str, params: Mapping[str, object]) -> Message:
    return Message(template, **params)


def joined(parts: Iterable[str], separator: str = " · ") -> Message:
    """One Message of `parts` joined by `separator` (a mark, not a word), each part, and the mark, translated where
    it is shown: `N_("; ")` reads "；" in Chinese."""
    named = {f"part{i}": part if isinstance(part, Message) else Message(part) for i, part in enumerate(parts)}
    template = "{separator}".join(f"{{{name}}}" for name in named)
    return Message(template, separator=Message(separator), **named)


def message_of(error: BaseException) -> Message | str:
    """The Message an exception was raised with (its one argument), else its English text."""
    args = error.args
    return args[0] if len(args) == 1 and isinstance(args[0], Message) else str(error)


def bounded(error: BaseException, most: int) -> Message | str:
    """What a sentence can say of `error`: the Message it was raised with (its values bounded where it was raised,
    translated where it is shown), else its English text cut to `most` characters."""
    said = message_of(error)
    return said if isinstance(said, Message) else said[:most]


def language_for(tag: str | None) -> str | None:
    """The interface language for a language tag from a link or a browser (`zh`, `zh-Hans-CN`, `en-GB`), or None
    when the lab has no interface in it: the one of LANGUAGES with the tag's primary language (`zh` -> `zh-CN`)."""
    if not isinstance(tag, str):
        return None
    return {_primary(language): language for language in LANGUAGES}.get(_primary(tag))


def _primary(tag: str) -> str:
    """A language tag's primary language: `zh` of `zh_Hans-CN`."""
    return tag.strip().replace("_", "-").split("-")[0].lower()


class Catalogue(dict):
    """One language's translated sentences (msgid -> msgstr, (singular, plural) -> forms) and its catalogue's
    `Plural-Forms` rule, `plural`: a C expression of `n` giving the index of the form to use."""

    plural: str = SOURCE_PLURAL


class Translator:
    """One language's sentences: `gettext(message, **params)` translates, then fills in the parameters.
    `plural`: the catalogue's Plural-Forms rule for its translated plural sentences (a sentence it lacks shows in
    English, by English's rule)."""

    def __init__(
        self,
        language: str,
        catalogue: Mapping[str | tuple[str, str], str | tuple[str, ...]],
        plural: str = SOURCE_PLURAL,
    ):
        self.language = language
        self._catalogue = catalogue
        self._plural = c2py(plural)

    def gettext(self, message: str | Message | BaseException, **params: object) -> str:
        """`message` in this language, its `{name}` placeholders filled from `params` (or the Message's own), each
        parameter that is a Message or an exception translated first. An exception reads as the Message it was
        raised with, else as its English text."""
        if isinstance(message, BaseException):
            message = message_of(message)
        if isinstance(message, Message):
            message, params = message.template, {**message.params, **params}
        return self._fill(self._catalogue.get(message) or message, params)

    def ngettext(self, singular: str, plural: str, n: int, **params: object) -> str:
        """The form of `singular`/`plural` for a count of `n` in this language, with `n` and `params` filled in."""
        forms = self._catalogue.get((singular, plural)) or ()
        index = self._plural(n)
        if index < len(forms) and forms[index]:
            text = forms[index]
        else:
            text = (singular, plural)[_english_plural(n)]
        return self._fill(text, {"n": n, **params})

    def _fill(self, text: str, params: Mapping[str, object]) -> str:
        """`text` with its placeholders filled from `params`, a parameter that is a Message or an exception
        translated first."""
        if not params:
            return text
        shown = {name: self.gettext(v) if isinstance(v, (Message, BaseException)) else v for name, v in params.items()}
        if self.language not in CLOSED_UP:
            return text.format(**shown)
        return _closed_up(text, shown, {name for name, v in params.items() if isinstance(v, (Message, BaseException))})

    __call__ = gettext


def _cjk(char: str) -> bool:
    """Whether `char` is a Chinese character or punctuation mark (CJK ideographs, symbols, full-width forms)."""
    return "\u3000" <= char <= "\u9fff" or "\uf900" <= char <= "\ufaff" or "\uff00" <= char <= "\uffef"


def _closed_up(text: str, params: Mapping[str, object], ours: set[str]) -> str:
    """`text.format(**params)`, without the space the template puts between a Chinese character and a placeholder
    of `ours` (the lab's own words, translated) whose value begins (or ends, for a space after it) with one. Any
    other value (a student's name, a file's) keeps its spaces, as do the words inside a value."""
    pieces: list[tuple[str, bool]] = []  # (text, whether it is one of `ours`' values)
    for literal, field, spec, conversion in _FORMATTER.parse(text):
        pieces.append((literal, False))
        if field is not None:
            value = _FORMATTER.convert_field(_FORMATTER.get_field(field, (), params)[0], conversion)
            pieces.append((_FORMATTER.format_field(value, _FORMATTER.vformat(spec or "", (), params)), field in ours))
    for i, (value, is_value) in enumerate(pieces):
        if not is_value or not value:
            continue
        before, after = pieces[i - 1][0], pieces[i + 1][0] if i + 1 < len(pieces) else ""
        if before[-2:-1] and before[-1] == " " and _cjk(before[-2]) and _cjk(value[0]):
            pieces[i - 1] = before[:-1], False
        if after[1:2] and after[0] == " " and _cjk(after[1]) and _cjk(value[-1]):
            pieces[i + 1] = after[1:], False
    return "".join(text for text, _ in pieces)


@lru_cache(maxsize=len(LANGUAGES))
def translator(language: str) -> Translator:
    """The translator for one of LANGUAGES (read from its catalogues once per process); English for any other."""
    if language not in LANGUAGES or language == DEFAULT_LANGUAGE:
        return Translator(DEFAULT_LANGUAGE, {})
    catalogue = read_catalogue(language)
    return Translator(language, catalogue, catalogue.plural)


def catalogue_files(language: str) -> list[Path]:
    """The `.po` files that make up one language's catalogue."""
    return sorted((LOCALE_DIR / language.replace("-", "_")).glob("*.po"))


def read_catalogue(language: str) -> Catalogue:
    """Every translated sentence of one language: msgid -> msgstr, and (singular, plural) -> forms, with the
    catalogue's Plural-Forms rule (its files' headers, which must agree; ValueError when they do not). A translation
    that is fuzzy, empty, or whose placeholders differ from its sentence's is left out: that sentence shows in
    English, never as an error."""
    catalogue, rules = Catalogue(), {}
    for path in catalogue_files(language):
        with path.open("rb") as file:
            po = read_po(file, locale=language.replace("-", "_"))
            rules[path.name] = catalogue.plural = po.plural_expr
            for entry in po:
                key = tuple(entry.id) if isinstance(entry.id, (list, tuple)) else entry.id
                text = tuple(entry.string) if isinstance(entry.string, (list, tuple)) else entry.string
                if key and any(text or ()) and not entry.fuzzy and keeps_placeholders(key, text):
                    catalogue[key] = text
    if len(set(rules.values())) > 1:
        raise ValueError(f"the {language} catalogue's files differ in their Plural-Forms: {rules}")
    return catalogue


def placeholders(text: str) -> set[str]:
    """The names of the `str.format` placeholders in `text` (`{top}`, `{lr:g}` -> {"top", "lr"}); ValueError when
    its braces do not parse."""
    return {name.split(".")[0].split("[")[0] for _, name, _, _ in Formatter().parse(text) if name is not None}


def keeps_placeholders(message: str | tuple[str, ...], translation: str | tuple[str, ...]) -> bool:
    """Whether every form of `translation` has exactly the placeholders of `message` (both forms of a plural
    message together, `{n}` included), and parses."""
    try:
        wanted = set().union(*map(placeholders, message)) if isinstance(message, tuple) else placeholders(message)
        forms = translation if isinstance(translation, tuple) else (translation,)
        return all(placeholders(form) == wanted for form in forms if form)
    except ValueError:
        return False


def latin_terms() -> list[str]:
    """The terms every language keeps in Latin letters (ALLOW_LIST: d_model, Softmax, Q/K/V, code names...)."""
    lines = ALLOW_LIST.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
