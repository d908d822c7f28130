"""What people type into a class (a name, a class's title, a rejoin code): `check_text` takes it only as printable
text on one line, so that no name can hide, disguise itself or cover the names around it wherever it is shown."""

import unicodedata
from itertools import groupby
from typing import Any

from ..i18n import N_, Message
from ..literal import JOINERS
from .errors import ClassroomError

# Combining marks one letter carries, at most: Thai's vowel and tone marks, or Devanagari's, stack two or three;
# "Zalgo" text stacks dozens, a tower that covers the lines above and below a name wherever it is shown.
MOST_MARKS = 4
HIDDEN_KINDS = {  # Unicode's categories of characters that do not show as themselves, in words for a student
    "Cc": N_("a control character, such as a line break or a tab"),
    "Cf": N_("an invisible formatting character, such as a direction mark"),
    "Zl": N_("a line break"),
    "Zp": N_("a paragraph break"),
}
# Letters and symbols drawn as blank space, which no normalisation folds: "Alice⠀" (a blank braille cell) reads as
# "Alice", and a Hangul filler alone as no name at all.
BLANKS = "\u115f\u1160\u2800\u3164\uffa0"


def _shows(char: str) -> bool:
    """Whether `char` is drawn as something of its own: a letter, digit, punctuation mark or symbol (not a mark on
    the letter before it, a space, a joiner, a variation selector or one of the BLANKS)."""
    return unicodedata.category(char)[0] in "LNPS" and char not in BLANKS


def _is_mark(char: str) -> bool:
    return unicodedata.category(char) in ("Mn", "Me")  # a combining mark: drawn on the letter before it


def _hidden(char: str) -> bool:
    """Whether `char` does not show as itself: a control or format character (but the JOINERS), a line or paragraph
    break, or one of the BLANKS."""
    category = unicodedata.category(char)
    return char not in JOINERS and (category[0] == "C" or category in HIDDEN_KINDS or char in BLANKS)


def check_text(text: Any, what: str, longest: int) -> str:
    """`text` in Unicode's composed form (NFC), without surrounding spaces, if it is then 1..`longest` characters of
    printable text on one line (nothing hidden: `_hidden`; something that shows: `_shows`; at most MOST_MARKS
    combining marks on a letter), else ClassroomError. It stays literal: pages show it character for character."""
    if isinstance(text, str):
        text = unicodedata.normalize("NFC", text)  # counted as stored: composed, as a composing keyboard types it
    if not isinstance(text, str) or not 1 <= len(text.strip()) <= longest:
        has = len(text.strip()) if isinstance(text, str) else 0
        size = N_("{what} must be 1 to {longest} characters; it has {n}")
        raise ClassroomError(Message(size, what=Message(what), longest=longest, n=f"{has:,}"))
    hidden = [c for c in text if _hidden(c)]
    if hidden:  # named by its code point: a line break, a tab or a direction mark shows as nothing, or as a space
        kind = HIDDEN_KINDS.get(unicodedata.category(hidden[0]), N_("a character that does not show"))
        problem = N_("{what} must be plain text on one line: it holds {code}, {kind}")
        raise ClassroomError(Message(problem, what=Message(what), code=f"U+{ord(hidden[0]):04X}", kind=Message(kind)))
    if not any(map(_shows, text)):  # joiners, variation selectors or marks alone: a name no one sees
        unseen = N_("{what} must show at least one letter, digit or sign: it holds only characters that do not show")
        raise ClassroomError(Message(unseen, what=Message(what)))
    marks = max((len(list(run)) for mark, run in groupby(text, _is_mark) if mark), default=0)
    if marks > MOST_MARKS:
        stacked = N_("{what} must be plain text: one of its letters carries {n} marks, more than {most}")
        raise ClassroomError(Message(stacked, what=Message(what), n=marks, most=MOST_MARKS))
    return text.strip()
