"""Plotly figures, built by pure functions (data in, `plotly.graph_objects.Figure` out), one module per topic.

The only part of the package that imports plotly. Every figure speaks the language of the translator it is given
(`tr`, a `transformer.i18n.Translator`; English by default): titles, axes, legends and hover text. Hover templates
are translated whole, with Plotly's own `%{...}` fields passed in as parameters.
"""

import re
from collections.abc import Callable

from ..i18n import DEFAULT_LANGUAGE, translator
from ..vocab import wide

ENGLISH = translator(DEFAULT_LANGUAGE)  # every figure's default translator

TOOLBAR_PX = 38  # Plotly's toolbar (27 px tall) shows along a chart's top edge on hover, or a tap on a phone
TITLE_LINE_PX = 26  # a line of a title in the projector-sized font
RAISED_PX = 14  # how far Plotly raises a title of several lines above where its top is set


def title_layout(text: str, font: dict | None = None) -> dict:
    """A figure's title, set under the toolbar: on a narrow chart a title reaches the right edge, where the toolbar
    shows."""
    pad = TOOLBAR_PX + (RAISED_PX if "<br>" in text else 0)
    return dict(text=text, y=1, yref="container", yanchor="top", pad=dict(t=pad), **({"font": font} if font else {}))


def top_margin(title: str, least: int = 0) -> int:
    """The top margin that holds the toolbar and every line of `title` above the plot, at least `least` px."""
    lines = title.count("<br>") + 1
    return max(least, TOOLBAR_PX + (RAISED_PX if lines > 1 else 0) + TITLE_LINE_PX * lines + 12)


TITLE_SIZE_PX = 22  # Plotly draws a title at 1.4 times the figure's font (`theme.FONT`, 16 px)
TITLE_INSET_PX = 10  # the room a title leaves at each side of its chart
PHONE_CHART_PX = 356  # a chart across a phone's page (390 px, less Streamlit's padding), measured in Chromium
# A chart in a half-page column (`st.columns(2)`) where it is narrowest, measured in Chromium: 241.6 px in a 1280 px
# window at 150% zoom (853 CSS px), sidebar open; on a phone the columns stack, PHONE_CHART_PX wide
COLUMN_PX = 241
PAGE_PX = 2 * COLUMN_PX + 16  # a chart across that page: two such columns and Streamlit's 1 rem gap between them


CJK_WIDTH = 1.7  # a Chinese character is drawn about as wide as 1.7 Latin characters of the same font
OPEN_BRACKETS, CLOSE_BRACKETS = "（［【「『《〈([{", "）］】」』》〉)]}"
OPENING = OPEN_BRACKETS + "“‘"  # never ends a line (避头尾): it stays with what it opens
CLOSING = CLOSE_BRACKETS + "”’，。、：；！？…·-"  # never starts a line: it stays with what it closes (a hyphen too)
NO_BREAK = "\xa0"  # a no-break space: "temperature\xa02" stays on one line
OPERATORS = set("+−-×÷=≈·→")  # a lone operator stays with its right operand: "× √d_model", "+ 因果"
# Chinese words of the figures' titles and labels that a line never splits (Chinese has no spaces to say where a word
# ends): "精确 / 匹配" and "多 / 头注意力" read as two words on a projector
WHOLE_WORDS = (
    "多头", "注意力", "精确匹配", "留出集", "位置编码", "编码器", "解码器", "残差连接", "归一化", "前馈", "词元",
    "准确率", "学习率", "对齐得分", "损失", "掩码", "训练步数", "完整模型", "层数", "头数", "预期", "输出长度", "填充",
    "仅供参考", "解出", "交叉注意力", "自注意力", "交叉", "训练", "嵌入", "梯度", "权重", "模型", "序列",
)  # fmt: skip


def text_width(text: str) -> float:
    """How many Latin characters `text` is as wide as: a Chinese character counts CJK_WIDTH."""
    return sum(CJK_WIDTH if wide(c) else 1 for c in text)


# How wide Chromium draws each ASCII character of Source Sans at 14 px (canvas measureText), rounded up to half a
# pixel; any other character as a capital, a Chinese one a square of the font's size. At another size, in proportion.
GLYPH_PX = {
    3.0: " ", 3.5: "i|j',.:;", 4.0: "lI!", 4.5: "f()[]{}-", 5.0: "tr/\\", 6.0: 'sz*?"', 6.5: "xcvy",
    7.0: "JYLekF0123456789#$+<=>^_~", 7.5: "agVXESTZ", 8.0: "houA`bndpqPCR", 8.5: "KB&", 9.0: "DGU", 9.5: "HNOQ",
    10.5: "wM", 11.0: "W", 12.0: "%m@",
}  # fmt: skip
GLYPH_SIZE_PX = 14  # the font size GLYPH_PX was measured at
_CHAR_PX = {char: px for px, chars in GLYPH_PX.items() for char in chars}
_OTHER_PX = 9.5


def drawn_px(text: str, size: float = GLYPH_SIZE_PX) -> float:
    """How wide `text` is drawn in the app's font at `size` px, in pixels (GLYPH_PX)."""
    return sum(_CHAR_PX.get(c, GLYPH_SIZE_PX if wide(c) else _OTHER_PX) for c in text) * size / GLYPH_SIZE_PX


def _pieces(text: str, width: float, measure: Callable[[str], float] = text_width) -> list[str]:
    """`text` cut where a line may break, each piece with the space before it (if any) at its start: between two
    Chinese characters but inside one of WHOLE_WORDS, or at a space but a no-break one; never inside a run of Latin
    letters, digits and signs (d_model, softmax), never after an opening bracket or a lone operator, never before a
    closing mark; and a bracketed group no wider than `width` (by `measure`) is one piece."""
    pieces: list[str] = []
    within = {at for word in WHOLE_WORDS for found in re.finditer(word, text) for at in range(*found.span())[1:]}
    for match in re.finditer(r"([^\S\xa0]*)([\S\xa0])", text):  # a no-break space is a character, never a break
        space, char = match.groups()
        glued = (
            bool(pieces)
            and not space
            and (
                match.start(2) in within  # inside a word
                or NO_BREAK in (char, pieces[-1][-1])  # either side of a no-break space
                or pieces[-1][-1] in OPENING  # after an opening bracket
                or char in CLOSING  # before a closing mark
                or not (wide(char) or wide(pieces[-1][-1]))  # inside a Latin run
            )
        )
        if glued or (bool(pieces) and pieces[-1].strip() in OPERATORS):
            pieces[-1] += (" " if space else "") + char
        else:
            pieces.append((" " if space and pieces else "") + char)
    grouped: list[str] = []
    for piece in pieces:
        opened = bool(grouped) and _depth(grouped[-1]) > 0
        if opened and measure(grouped[-1] + piece) <= width:
            grouped[-1] += piece
        else:
            grouped.append(piece)
    return grouped


def _depth(text: str) -> int:
    """How many brackets `text` leaves open."""
    return sum(c in OPEN_BRACKETS for c in text) - sum(c in CLOSE_BRACKETS for c in text)


def _fill(pieces: list[str], width: float, measure: Callable[[str], float] = text_width) -> list[str]:
    lines: list[str] = []
    for piece in pieces:
        if lines and measure(lines[-1] + piece) <= width:
            lines[-1] += piece
        else:
            lines.append(piece.lstrip())
    return lines


def wrap_lines(text: str, width: float, measure: Callable[[str], float] = text_width) -> list[str]:
    """`text` in as few lines as fit `width`, as `measure` measures it (in Latin characters, `text_width`, unless
    another is given), broken only where `_pieces` allows, the lines made as even as they can be; a piece wider than
    `width` has a line of its own, whole."""
    pieces = _pieces(text, width, measure)
    lines = _fill(pieces, width, measure)
    low, high = max((measure(p.lstrip()) for p in pieces), default=0.0), float(width)
    while high - low > 0.05:  # the narrowest width that needs no more lines: the breaks fall near the middle
        middle = (low + high) / 2
        low, high = (low, middle) if len(_fill(pieces, middle, measure)) <= len(lines) else (middle, high)
    return _fill(pieces, high, measure) if high < width else lines


def fit_title(title: str, px: float, size: float = TITLE_SIZE_PX) -> str:
    """A figure title broken into lines that fit a chart `px` pixels wide, measured as drawn at the title's `size`
    (`drawn_px`): in Chinese too, where `text_width`'s average undercounts a title's square glyphs."""
    return "<br>".join(wrap_lines(title, px - 2 * TITLE_INSET_PX, lambda line: drawn_px(line, size)))


LEGEND_SIZE_PX = 16  # a legend's names are drawn in the figure's font (`theme.FONT`)
LEGEND_SAMPLE_PX = 44  # a legend entry's line sample and the gap after it, and the room left at the chart's right


def fit_legend(name: str, px: float) -> str:
    """A legend name broken into lines that fit a chart `px` pixels wide beside its entry's line sample: a name wider
    than its chart is cut at the chart's edge ("training loss, mean of every 3 steps" in a half-page column)."""
    return "<br>".join(wrap_lines(name, px - LEGEND_SAMPLE_PX, lambda line: drawn_px(line, LEGEND_SIZE_PX)))


# A legend at the figure's foot, under the x axis's ticks and title whatever the plot's height (the bottom margin
# holds it): set relative to the plot, a short plot would draw it over the axis title.
LEGEND_AT_FOOT = dict(orientation="h", yref="container", y=0, yanchor="bottom", xanchor="left", x=0)
