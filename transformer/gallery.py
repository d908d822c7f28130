"""The gallery: generated tasks whose outputs differ in length or order from their inputs, what an encoder-decoder
is made for. Each has a vocabulary of its own, draws its own sources, and says in one line what it teaches.

Each states the default run that solves its whole held-out set (`defaults`: settings by name, its step budget among
them), as `python benchmarks/gallery_bench.py` shows (docs/benchmarks.md), and the steps such a run takes on average
(`usual_steps`, measured by the class load test, docs/classroom.md). Where the output tokens each come from one
source token, it gives the source position of each (`source_positions`): its ideal cross-attention.
"""

from __future__ import annotations

from collections.abc import Sequence
from string import ascii_lowercase

import torch

from .i18n import N_, Message
from .limits import MAX_SEQ_LEN
from .task import Task, register
from .vocab import MAX_SYMBOLS


class GalleryTask(Task):
    """A generated task of the gallery; its sources are drawn length by length (`rows`)."""

    def draw(self, lengths: list[int], n_symbols: int, generator: torch.Generator) -> list[list[int]]:
        sources: list[list[int]] = [[] for _ in lengths]
        for length in sorted(set(lengths)):
            where = [i for i, n in enumerate(lengths) if n == length]
            for i, row in zip(where, self.rows(length, len(where), n_symbols, generator).tolist()):
                sources[i] = row
        return sources


def _number(digits: Sequence[int], base: int) -> int:
    value = 0
    for d in digits:
        value = value * base + d
    return value


def _digits(value: int, base: int) -> list[int]:
    """`value`'s digits in `base`, most significant first."""
    digits = [value % base]
    while value := value // base:
        digits.append(value % base)
    return digits[::-1]


class Addition(GalleryTask):
    name = "add"
    description = N_(
        "Add two numbers, carries and all: 1 2 + 3 4 → 4 6, 5 8 + 7 → 6 5. Each output digit depends on the digits "
        "to its right, and the answer may be a digit longer than either number."
    )
    lengths = range(3, MAX_SEQ_LEN + 1)
    symbol_counts = range(2, 11)
    symbols_mean = N_("digits (the number base)")
    defaults = {"min_len": 3, "max_len": 5, "n_symbols": 10, "n_layers": 2, "lr": 0.01, "warmup": 200,
                "batch_size": 128, "steps": 4000, "time_budget_s": 120}  # fmt: skip
    usual_steps = 1531

    def symbols(self, n_symbols: int) -> tuple[str, ...]:
        return (*map(str, range(n_symbols)), "+")

    def target_symbols(self, n_symbols: int) -> range:
        return range(n_symbols)  # the digits: + joins the numbers of a source

    def target(self, source: Sequence[int], n_symbols: int) -> list[int]:
        plus = n_symbols
        if list(source).count(plus) != 1 or source[0] == plus or source[-1] == plus:
            raise ValueError(Message(N_("an addition is two numbers with a + between them, e.g. 1 2 + 3 4")))
        at = list(source).index(plus)
        return _digits(_number(source[:at], n_symbols) + _number(source[at + 1 :], n_symbols), n_symbols)

    def longest_target(self, max_len: int, n_symbols: int) -> int:
        return max_len - 1  # numbers of a and b digits add up to at most max(a, b) + 1 <= a + b digits

    def n_sources(self, length: int, n_symbols: int) -> int:
        def numbers(digits: int) -> int:  # without a leading zero
            return n_symbols if digits == 1 else (n_symbols - 1) * n_symbols ** (digits - 1)

        return sum(numbers(a) * numbers(length - 1 - a) for a in range(1, length - 1))

    def rows(self, length: int, count: int, n_symbols: int, generator: torch.Generator) -> torch.Tensor:
        split = torch.randint(1, length - 1, (count, 1), generator=generator)  # the digits of the first number
        digits = torch.randint(n_symbols, (count, length), generator=generator)
        leading = torch.randint(1, n_symbols, (count, length), generator=generator)
        at = torch.arange(length)
        first = (at == 0) & (split >= 2) | (at == split + 1) & (length - 1 - split >= 2)  # of a number of 2+ digits
        return torch.where(at == split, n_symbols, torch.where(first, leading, digits))


SOURCE_WORDS = {  # the source language, subject-verb-object, adjectives before their noun
    "verb": ("sees", "likes", "chases", "hears", "finds"),
    "adjective": ("big", "small", "red", "old"),
    "noun": ("cat", "dog", "bird", "fish", "fox", "owl", "frog", "bear", "wolf", "mouse"),
}
TARGET_WORDS = {  # its translation: subject-object-verb, adjectives after their noun
    "verb": ("selu", "lika", "chazo", "heru", "fina"),
    "adjective": ("gra", "pti", "ruo", "ald"),
    "noun": ("miko", "doro", "pilu", "fesa", "voko", "ulma", "gren", "bako", "wuli", "mosi"),
}
_VERBS, _ADJECTIVES = len(SOURCE_WORDS["verb"]), len(SOURCE_WORDS["adjective"])
_MOST_ADJECTIVES = 2  # per noun, all different


NO_SENTENCE = N_("translate reads sentences of adjectives, a noun, a verb, adjectives and a noun")


def _phrases(source: Sequence[int]) -> tuple[list[int], int, list[int]]:
    """The subject's and the object's positions (adjectives, then the noun) and the verb's, in a source of
    translate (symbol indices: verbs, adjectives, then nouns); ValueError if it is no sentence."""
    kinds = ["verb" if s < _VERBS else "adjective" if s < _VERBS + _ADJECTIVES else "noun" for s in source]
    if kinds.count("verb") != 1 or "verb" not in kinds[1:-1]:
        raise ValueError(Message(NO_SENTENCE))
    verb = kinds.index("verb")
    subject, obj = list(range(verb)), list(range(verb + 1, len(source)))
    for phrase in subject, obj:
        if [kinds[i] for i in phrase] != ["adjective"] * (len(phrase) - 1) + ["noun"]:
            raise ValueError(Message(NO_SENTENCE))
    return subject, verb, obj


def word_order(source: Sequence[int]) -> list[int]:
    """The source position of each word of translate's target: the subject's noun then its adjectives, the object's
    noun then its adjectives, then the verb."""
    subject, verb, obj = _phrases(source)
    return [*subject[-1:], *subject[:-1], *obj[-1:], *obj[:-1], verb]


class Translation(GalleryTask):
    name = "translate"
    description = N_(
        "Translate a toy language into another with its own words, subject-verb-object into subject-object-verb: "
        "big cat sees dog → miko gra doro selu. The output's order differs from the input's."
    )
    lengths = range(3, 4 + 2 * _MOST_ADJECTIVES)
    symbol_counts = range(2, len(SOURCE_WORDS["noun"]) + 1)
    symbols_mean = N_("nouns")
    defaults = {"min_len": 3, "max_len": 7, "n_symbols": 10, "steps": 1000}  # the Train page's model and batch
    usual_steps = 165

    def symbols(self, n_symbols: int) -> tuple[str, ...]:
        words = SOURCE_WORDS, TARGET_WORDS
        return tuple(w for lexicon in words for kind, all_of in lexicon.items() for w in _some(kind, all_of, n_symbols))

    def source_symbols(self, n_symbols: int) -> range:
        return range(_words(n_symbols))  # the source language's words come first

    def target_symbols(self, n_symbols: int) -> range:
        return range(_words(n_symbols), 2 * _words(n_symbols))

    def target(self, source: Sequence[int], n_symbols: int) -> list[int]:
        offset = _words(n_symbols)  # the target language's words follow the source language's
        return [source[i] + offset for i in word_order(source)]

    def source_positions(self, source: Sequence[int]) -> list[int]:
        return word_order(source)

    def n_sources(self, length: int, n_symbols: int) -> int:
        return sum(_phrases_of(a, n_symbols) * _VERBS * _phrases_of(length - 3 - a, n_symbols) for a in range(3))

    def rows(self, length: int, count: int, n_symbols: int, generator: torch.Generator) -> torch.Tensor:
        adjectives = length - 3
        low, high = max(0, adjectives - _MOST_ADJECTIVES), min(_MOST_ADJECTIVES, adjectives)
        first = torch.randint(low, high + 1, (count,), generator=generator).tolist()  # the subject's adjectives
        picks = torch.rand(count, 2, _ADJECTIVES, generator=generator).argsort(dim=2)[..., :_MOST_ADJECTIVES] + _VERBS
        nouns = torch.randint(n_symbols, (count, 2), generator=generator) + _VERBS + _ADJECTIVES
        verbs = torch.randint(_VERBS, (count,), generator=generator).tolist()
        rows = []  # built as lists: a tensor indexed row by row costs a few microseconds an index
        for a, (subject, obj), (noun, other), verb in zip(first, picks.tolist(), nouns.tolist(), verbs):
            rows.append([*subject[:a], noun, verb, *obj[: adjectives - a], other])
        return torch.tensor(rows, dtype=torch.int64).reshape(count, length)


def _words(n_nouns: int) -> int:
    """How many words each language of translate has: its verbs, its adjectives and `n_nouns` nouns."""
    return _VERBS + _ADJECTIVES + n_nouns


def _some(kind: str, words: tuple[str, ...], n_nouns: int) -> tuple[str, ...]:
    return words[:n_nouns] if kind == "noun" else words


def _phrases_of(adjectives: int, n_nouns: int) -> int:
    """How many noun phrases have this many different adjectives."""
    if not 0 <= adjectives <= _MOST_ADJECTIVES:
        return 0
    ways = 1
    for i in range(adjectives):
        ways *= _ADJECTIVES - i
    return ways * n_nouns


class Deduplicate(GalleryTask):
    name = "dedup"
    description = N_(
        "Keep the first of each symbol and drop its repeats: 3 1 3 2 1 → 3 1 2. How much shorter the output is "
        "depends on what the input holds."
    )
    defaults = {"min_len": 4, "max_len": 8, "n_symbols": 6, "lr": 0.01, "steps": 3000}  # the Train page's model
    usual_steps = 619

    def target(self, source: Sequence[int], n_symbols: int) -> list[int]:
        return list(dict.fromkeys(source))

    def source_positions(self, source: Sequence[int]) -> list[int]:
        return first_places(source)


def first_places(source: Sequence[int]) -> list[int]:
    """The source position of each output token of dedup: each symbol's first place."""
    return sorted({s: i for i, s in reversed(list(enumerate(source)))}.values())


def _letters(n: int) -> tuple[str, ...]:
    return tuple(ascii_lowercase[:n])


class Count(GalleryTask):
    name = "count"
    description = N_(
        "Count each letter: with the letters a b c d, b a b d b → 1 3 0 1. The output is as long as the alphabet, "
        "whatever the input's length, and each count gathers every place its letter occurs."
    )
    lengths = range(1, 10)  # every count is one digit
    symbol_counts = range(2, 11)
    symbols_mean = N_("letters")
    defaults = {"min_len": 3, "max_len": 8, "n_symbols": 4, "d_model": 64, "n_layers": 2, "d_ff": 256,
                "warmup": 100, "steps": 3000, "time_budget_s": 120}  # fmt: skip
    usual_steps = 2289  # seeds 100-129: 17 solved, 13 at the budget (docs/classroom.md)

    def symbols(self, n_symbols: int) -> tuple[str, ...]:
        return (*_letters(n_symbols), *map(str, range(10)))

    def source_symbols(self, n_symbols: int) -> range:
        return range(n_symbols)  # the letters: the digits are counts

    def target_symbols(self, n_symbols: int) -> range:
        return range(n_symbols, len(self.symbols(n_symbols)))

    def target(self, source: Sequence[int], n_symbols: int) -> list[int]:
        if not all(0 <= s < n_symbols for s in source) or len(source) > self.lengths[-1]:
            raise ValueError(Message(N_("count reads 1 to {most} letters"), most=self.lengths[-1]))
        return [n_symbols + list(source).count(letter) for letter in range(n_symbols)]

    def longest_target(self, max_len: int, n_symbols: int) -> int:
        return n_symbols


BRACKETS = ("(", ")", "[", "]", "{", "}", "<", ">")  # pairs: an opening bracket, then its closing one


def balanced(source: Sequence[int]) -> bool:
    """Whether the brackets of `source` (indices into BRACKETS) balance: each closes the last one still open."""
    stack = []
    for s in source:
        if s % 2 == 0:
            stack.append(s + 1)
        elif not stack or stack.pop() != s:
            return False
    return not stack


class Brackets(GalleryTask):
    name = "brackets"
    description = N_(
        "Say whether the brackets balance: ( [ ] ) < > → yes, ( [ ) ] < > → no. The answer is one word, and it "
        "depends on every symbol of the input."
    )
    symbol_counts = range(2, len(BRACKETS) + 1, 2)
    symbols_mean = N_("bracket symbols (two per kind of bracket)")
    # the Train page's model, its raw weights: the network solves the task long before its running average does
    defaults = {"min_len": 6, "max_len": 10, "n_symbols": 8, "lr": 0.005, "batch_size": 128, "ema_decay": 0.0,
                "steps": 3000}  # fmt: skip
    usual_steps = 1037

    def symbols(self, n_symbols: int) -> tuple[str, ...]:
        return (*BRACKETS[:n_symbols], "yes", "no")

    def source_symbols(self, n_symbols: int) -> range:
        return range(n_symbols)  # the brackets: yes and no are answers

    def target_symbols(self, n_symbols: int) -> range:
        return range(n_symbols, len(self.symbols(n_symbols)))

    def target(self, source: Sequence[int], n_symbols: int) -> list[int]:
        if not all(0 <= s < n_symbols for s in source):
            raise ValueError(Message(N_("brackets reads brackets only")))
        return [n_symbols if balanced(source) else n_symbols + 1]

    def longest_target(self, max_len: int, n_symbols: int) -> int:
        return 1

    def rows(self, length: int, count: int, n_symbols: int, generator: torch.Generator) -> torch.Tensor:
        """Half balanced (at even lengths), a quarter balanced but for one changed symbol, a quarter at random: so
        that about half the answers are yes, and many no's are near misses."""
        kind = torch.randint(4, (count,), generator=generator).tolist()
        opens = torch.rand(count, length, generator=generator).tolist()
        pairs = torch.randint(n_symbols // 2, (count, length), generator=generator).tolist()
        changed = torch.randint(length, (count,), generator=generator).tolist()
        rows = torch.randint(n_symbols, (count, length), generator=generator).tolist()  # lists: cheap to index
        for i in range(count):
            if length % 2 == 0 and kind[i] < 3:
                rows[i] = _balanced_row(opens[i], pairs[i])
                if kind[i] == 2:  # one bracket changed into the next symbol: the counts no longer match
                    rows[i][changed[i]] = (rows[i][changed[i]] + 1) % n_symbols
        return torch.tensor(rows, dtype=torch.int64).reshape(count, length)


def _balanced_row(opens: list[float], pairs: list[int]) -> list[int]:
    """A balanced row: at each place, open a bracket of kind `pairs[i]` with chance 1/2 while it can still close."""
    row, stack, length = [], [], len(opens)
    for i in range(length):
        if stack and (len(stack) == length - i or opens[i] < 0.5):
            row.append(stack.pop())
        else:
            row.append(2 * pairs[i])
            stack.append(2 * pairs[i] + 1)
    return row


def _keyed(source: Sequence[int]) -> None:
    """ValueError unless `source` is a source of caesar: a key letter, then at least one letter to shift."""
    if len(source) < 2:
        raise ValueError(Message(N_("caesar reads a key letter, then at least one letter to shift")))


class Caesar(GalleryTask):
    name = "caesar"
    description = N_(
        "A Caesar shift whose key is the first letter: with the letters a-h, d a b h → d e c (d is 3 after a: shift "
        "by 3, and h wraps round to c). Each output letter depends on two places, its own letter and the key."
    )
    lengths = range(2, MAX_SEQ_LEN + 1)
    symbol_counts = range(2, len(ascii_lowercase) + 1)
    symbols_mean = N_("letters")
    defaults = {"min_len": 3, "max_len": 8, "n_symbols": 8, "lr": 0.01, "steps": 1500}  # the Train page's model
    usual_steps = 428

    def symbols(self, n_symbols: int) -> tuple[str, ...]:
        return _letters(n_symbols)

    def target(self, source: Sequence[int], n_symbols: int) -> list[int]:
        _keyed(source)
        return [(letter + source[0]) % n_symbols for letter in source[1:]]

    def source_positions(self, source: Sequence[int]) -> list[int]:
        _keyed(source)
        return list(range(1, len(source)))  # each letter's own place; the key, at 0, is read by every output

    def longest_target(self, max_len: int, n_symbols: int) -> int:
        return max_len - 1


class Repeat(GalleryTask):
    name = "repeat"
    description = N_(
        "Say every symbol twice: 1 2 3 → 1 1 2 2 3 3. The output is twice as long, and two output tokens read each "
        "input position."
    )
    lengths = range(1, MAX_SEQ_LEN // 2 + 1)
    symbol_counts = range(2, MAX_SYMBOLS + 1)
    defaults = {"min_len": 1, "max_len": 8, "n_symbols": 10, "steps": 1000}  # the Train page's model and batch
    usual_steps = 227

    def target(self, source: Sequence[int], n_symbols: int) -> list[int]:
        return [s for s in source for _ in range(2)]

    def source_positions(self, source: Sequence[int]) -> list[int]:
        return [i // 2 for i in range(2 * len(source))]

    def longest_target(self, max_len: int, n_symbols: int) -> int:
        return 2 * max_len


for _task in (Addition(), Translation(), Deduplicate(), Count(), Brackets(), Caesar(), Repeat()):
    register(_task)
