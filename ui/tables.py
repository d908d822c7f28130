"""Data grids as the pages show them: a column as wide as its widest cell, and sequences whose symbols stand apart.

Streamlit sizes a grid's column to its cells only when the grid is first drawn, and keeps that width on every
redraw: a board first drawn while its runs queued cut the states ("训练中，第 675 步") and results that came later,
and Checkpoints' listing cut a name uploaded since ("mymodel (2).p"). A page gives such a column `fitted_px`.

A grid draws its text on a canvas, where no style reaches, and there a space is a third of a digit wide: on a phone
Knockout's "5 4 3 3 7 6 6 0 4" read as one number. A table of sequences is shown through `symbols_apart`, and a
sequence in a select box's option through `apart`.

No column is pinned: a grid draws a pinned column's text faded, at about 3:1 on white, where text needs 4.5:1 (WCAG
1.4.3); Checkpoints' names read grey.
"""

from collections.abc import Iterable

import pandas as pd

from transformer.figures import drawn_px

TABLE_PADDING_PX = 24  # a cell's padding on both sides


def fitted_px(cells: Iterable[object]) -> int:
    """A table column's width in pixels that shows the widest of its `cells` (texts and numbers) whole."""
    widest = max((drawn_px(str(cell)) for cell in cells if isinstance(cell, (str, int, float))), default=0)
    return round(TABLE_PADDING_PX + widest)


SYMBOL_GAP = "\u2002"  # an en space: as wide as a digit


def apart(sequence: str) -> str:
    """`sequence` with an en space between its symbols: copied, it still reads as its symbols wherever the lab takes
    one (any space separates them)."""
    return sequence.replace(" ", SYMBOL_GAP)


def symbols_apart(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame`, a table of sequences, with each sequence `apart`; a Message (a page's words, such as "(nothing)") is
    left as it is."""
    return frame.map(lambda cell: apart(cell) if type(cell) is str else cell)
