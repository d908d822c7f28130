"""Text from files, links and students shown as what it is, never as Markdown, HTML or a link.

Streamlit renders Markdown in `st.markdown`, `st.caption`, `st.error` and the other messages; these helpers make
untrusted text inside them read character for character.
"""

import re
import unicodedata

_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")  # every ASCII punctuation character
WORD_JOINER = "\u2060"  # invisible, and no line break at it
# Zero-width non-joiner and joiner: format characters that Persian and Indic words, and emoji such as 👩‍🔬, are
# written with, shown as part of what they join. Every other format character (a bidi override, a zero-width space)
# can disguise text.
JOINERS = "\u200c\u200d"
# Where Streamlit's Markdown would still make a link or an emoji of text whose punctuation is escaped: its GitHub
# autolinks (www.x.y, http://x, a@b.c) and emoji short codes (:smile:) are found in the text after escapes are read.
_AUTOLINK_OR_EMOJI = re.compile(r"(?i)(?<=www)(?=\.)|(?<=@)|(?<=:)(?=/|[\w+-]+:)")
# Streamlit's Markdown turns these, standing alone between spaces, into a dash, arrows and signs ("Tom -- Jerry" into
# "Tom — Jerry", "a -> b" into "a → b", ">=" into "≥") in the text it has read, escapes or not: a word joiner after
# their first character keeps each as typed.
_TYPOGRAPHY = re.compile(r"(?<![^\s\ufeff])(?:<->|->|<-|--|>=|<=|~=)(?![^\s\ufeff])")  # JavaScript's \s has U+FEFF


def markdown_literal(text: object) -> str:
    """`text` with every ASCII punctuation character backslash-escaped and line breaks as spaces: no emphasis,
    heading, list, image, link, HTML, LaTeX or code span can start in it (CommonMark escapes, section 2.4); and a
    word joiner inside each web or mail address, emoji short code and `--`, `->` or `>=` standing alone, which
    Streamlit would make a link, an emoji or a typographic sign of whatever its escapes."""
    text = _AUTOLINK_OR_EMOJI.sub(WORD_JOINER, " ".join(str(text).splitlines()))
    text = _TYPOGRAPHY.sub(lambda pair: pair[0][0] + WORD_JOINER + pair[0][1:], text)
    return _PUNCTUATION.sub(r"\\\1", text)


def code_span(text: object) -> str:
    """`text` as one inline code span, shown literally whatever backticks it holds (CommonMark section 6.1)."""
    text = " ".join(str(text).splitlines())
    fence = "`" * (max(map(len, re.findall("`+", text)), default=0) + 1)
    pad = " " if text[:1] == "`" or text[-1:] == "`" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def printable(text: object) -> str:
    """`text` for a terminal, or a page's line around it: control and format characters (escapes, bidi overrides,
    newlines) replaced by spaces, so that what a file or a link holds cannot move the cursor, clear or recolour the
    terminal, fake another line, or turn the rest of a sentence round (JOINERS stay, in what they join)."""
    return "".join(" " if unicodedata.category(c) in ("Cc", "Cf") and c not in JOINERS else c for c in str(text))
