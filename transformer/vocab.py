"""Token vocabulary: three special tokens followed by a task's symbols."""

from __future__ import annotations

import operator
import unicodedata
from collections.abc import Collection, Iterable, Sequence

from .i18n import N_, Message
from .limits import MAX_SYMBOL_CHARS, MAX_SYMBOLS
from .literal import JOINERS

_UNJOINED = dict.fromkeys(map(ord, JOINERS))  # str.translate: JOINERS removed
N_SPECIAL = 3  # PAD, BOS, EOS take ids 0..2, so symbol index i has token id i + N_SPECIAL


def _preview(text: str, limit: int = 20) -> str:
    """Short repr of possibly huge user text, for error messages."""
    return repr(text[:limit]) + ("..." if len(text) > limit else "")


def _describe(symbols: tuple[str, ...]) -> str:
    """Compact list of the allowed symbols, e.g. '0-9' or 'a b c'."""
    if len(symbols) > 1 and symbols == tuple(map(str, range(len(symbols)))):
        return f"0-{len(symbols) - 1}"
    text = " ".join(symbols[:12])
    return text[:60] + " ..." if len(symbols) > 12 or len(text) > 60 else text


def wide(char: str) -> bool:
    """Whether `char` is drawn wide, as a Chinese character or a full-width form is (Unicode's East Asian Width)."""
    return unicodedata.east_asian_width(char) in "WF"


def check_symbol(s: object) -> None:
    """ValueError unless `s` can be a symbol: text of 1 to MAX_SYMBOL_CHARS printable characters without spaces (and
    JOINERS between them: 👨‍👩‍👧 is one emoji of five characters), and not the name of a special token."""
    if not isinstance(s, str):
        raise ValueError(Message(N_("symbols must be strings, got {got}"), got=type(s).__name__))
    shown = s.strip(JOINERS)
    if s.split() != [s] or shown != s or not shown.translate(_UNJOINED).isprintable() or len(s) > MAX_SYMBOL_CHARS:
        template = N_("symbol {symbol} is empty, longer than {most} characters, or holds spaces or control characters")
        raise ValueError(Message(template, symbol=_preview(s), most=MAX_SYMBOL_CHARS))
    if s in (Vocab.PAD, Vocab.BOS, Vocab.EOS):
        raise ValueError(Message(N_("symbol {symbol} is reserved for a special token"), symbol=repr(s)))


class Vocab:
    """Token <-> id mapping with explicit special tokens: PAD=0, BOS=1, EOS=2, then the task's symbols."""

    PAD, BOS, EOS = "PAD", "BOS", "EOS"  # named as the pages and docs name them, in tables and charts alike
    pad_id, bos_id, eos_id = 0, 1, 2

    def __init__(self, symbols: Sequence[str]):
        symbols = tuple(symbols)
        if not 1 <= len(symbols) <= MAX_SYMBOLS:
            template = N_("a vocabulary needs 1 to {most} symbols, got {got}")
            raise ValueError(Message(template, most=MAX_SYMBOLS, got=len(symbols)))
        seen = set()
        for s in symbols:
            check_symbol(s)
            if s in seen:
                raise ValueError(Message(N_("duplicate symbol {symbol}"), symbol=_preview(s)))
            seen.add(s)
        self._symbols = symbols
        self._itos = [self.PAD, self.BOS, self.EOS, *symbols]
        self._stoi = {s: i for i, s in enumerate(self._itos)}
        self._allowed = _describe(symbols)
        self._symbol_chars = frozenset("".join(symbols))

    @classmethod
    def digits(cls, n: int = 10) -> Vocab:
        """Vocabulary of the symbols '0' .. str(n - 1)."""
        if not isinstance(n, int) or isinstance(n, bool) or not 2 <= n <= MAX_SYMBOLS:
            raise ValueError(f"number of digit symbols must be an integer in 2..{MAX_SYMBOLS}, got {n!r:.20}")
        return cls([str(i) for i in range(n)])

    @property
    def n_symbols(self) -> int:
        return len(self._symbols)

    @property
    def symbols(self) -> tuple[str, ...]:
        return self._symbols

    @property
    def spaces_optional(self) -> bool:
        """Whether every symbol is one character, so that "314" can only mean "3 1 4"."""
        return all(len(s) == 1 for s in self._symbols)

    @property
    def itos(self) -> list[str]:
        """Token string of every id, specials first."""
        return list(self._itos)

    def __len__(self) -> int:
        return len(self._itos)

    def symbol_id(self, i: int) -> int:
        """Token id of symbol index i."""
        if not 0 <= i < self.n_symbols:
            raise ValueError(f"symbol index {i} is outside 0..{self.n_symbols - 1}")
        return i + N_SPECIAL

    def symbol_index(self, token_id: int) -> int:
        """Symbol index of a (non-special) token id."""
        if not N_SPECIAL <= token_id < len(self):
            raise ValueError(f"token id {token_id} is not a symbol (symbols are {N_SPECIAL}..{len(self) - 1})")
        return token_id - N_SPECIAL

    def encode(self, text: str, max_len: int | None = None, symbols: Collection[int] | None = None) -> list[int]:
        """Token ids of the space-separated symbols in `text` (no BOS/EOS). When every symbol is one character,
        the spaces are optional: "314" reads as "3 1 4". `symbols`, where given, are the symbol indices `text` may
        hold (a task's `source_symbols`): any other symbol is unknown, and messages list only these."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a string of space-separated symbols, got {type(text).__name__}")
        typed = text.split()  # each word as typed, for messages: narrowing changes no character's place
        words = self._narrowed(text).split()
        allowed = self._allowed if symbols is None else _describe(tuple(self._symbols[i] for i in sorted(symbols)))
        if self.spaces_optional:  # split run-together symbols; anything else stays whole, for the error message
            runs = [self._run_of_symbols(word) for word in words]
            typed = [part for word, run in zip(typed, runs) for part in (word if run else [word])]
            words = [part for word, run in zip(words, runs) for part in (word if run else [word])]
        if not words:
            raise ValueError(Message(N_("enter at least one symbol ({allowed})"), allowed=allowed))
        if max_len is not None and len(words) > max_len:
            too_long = N_("input has {count} symbols; the most is {most}")
            raise ValueError(Message(too_long, count=len(words), most=max_len))
        ids = []
        for word, as_typed in zip(words, typed):
            i = self._stoi.get(word)
            if i is None or symbols is not None and i >= N_SPECIAL and i - N_SPECIAL not in symbols:
                unknown = N_("unknown symbol {symbol}; use {allowed}")
                if not self.spaces_optional:
                    unknown = N_("unknown symbol {symbol}; use {allowed}, separated by spaces")
                raise ValueError(Message(unknown, symbol=_preview(as_typed), allowed=allowed))
            if i < N_SPECIAL:
                special = N_("{token} is a special token; type only symbols ({allowed})")
                raise ValueError(Message(special, token=repr(as_typed), allowed=allowed))
            ids.append(i)
        return ids

    def _narrowed(self, text: str) -> str:
        """`text` with each full-width character (a Chinese keyboard's "１２３") read as the one it stands for, unless
        a symbol holds it as typed: a task whose symbols are full-width keeps them."""
        wide = [
            c for c in set(text) if c not in self._symbol_chars and unicodedata.decomposition(c).startswith("<wide>")
        ]
        return text.translate({ord(c): unicodedata.normalize("NFKC", c) for c in wide}) if wide else text

    def _run_of_symbols(self, word: str) -> bool:
        """Whether `word` is two or more one-character symbols written together."""
        return len(word) > 1 and all(c in self._stoi for c in word)

    def input_hint(self, max_len: int) -> Message:
        """How to type a sequence for `encode`, e.g. "at most 63 symbols, spaces optional"."""
        if self.spaces_optional:
            return Message(N_("at most {most} symbols, spaces optional"), most=max_len)
        return Message(N_("at most {most} symbols, separated by spaces"), most=max_len)

    def decode(self, ids: Iterable[int], strip_special: bool = True) -> str:
        """Space-joined tokens; with strip_special, stop at EOS and leave out BOS and PAD."""
        if not strip_special:
            return " ".join(self.tokens(ids))
        words = []
        for i in map(self._check_id, ids):
            if i == self.eos_id:
                break
            if i >= N_SPECIAL:
                words.append(self._itos[i])
        return " ".join(words)

    def tokens(self, ids: Iterable[int]) -> list[str]:
        """Token string of each id, specials included (e.g. for plot axis labels)."""
        return [self._itos[self._check_id(i)] for i in ids]

    def _check_id(self, i: int) -> int:
        i = operator.index(i)
        if not 0 <= i < len(self):
            raise ValueError(f"token id {i} is outside 0..{len(self) - 1}")
        return i

    def to_dict(self) -> dict:
        """Plain JSON-able form; inverse of from_dict."""
        return {"symbols": list(self._symbols)}

    @classmethod
    def from_dict(cls, d: dict) -> Vocab:
        """Vocabulary from to_dict's output; ValueError if `d` is malformed."""
        if not isinstance(d, dict) or set(d) != {"symbols"} or not isinstance(d["symbols"], list):
            raise ValueError(
                Message(N_("a vocabulary dict must be exactly {shape}"), shape='{"symbols": [list of strings]}')
            )
        return cls(d["symbols"])

    def __eq__(self, other: object) -> bool:
        return self._symbols == other._symbols if isinstance(other, Vocab) else NotImplemented

    def __hash__(self) -> int:
        return hash(self._symbols)

    def __repr__(self) -> str:
        return f"Vocab({self._allowed})"
