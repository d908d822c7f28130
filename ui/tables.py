"""Data grids as the pages show them: a column as wide as its widest cell.

Streamlit sizes a grid's column to its cells only when the grid is first drawn, and keeps that width on every
redraw: a board first drawn while its runs queued cut the states ("训练中，第 675 步") and results that came later,
and Checkpoints' listing cut a name uploaded since ("mymodel (2).p"). A page gives such a column `fitted_px`.
"""

from collections.abc import Iterable

from transformer.figures import drawn_px

TABLE_PADDING_PX = 24  # a cell's padding on both sides


def fitted_px(cells: Iterable[object]) -> int:
    """A table column's width in pixels that shows the widest of its `cells` (texts and numbers) whole."""
    widest = max((drawn_px(str(cell)) for cell in cells if isinstance(cell, (str, int, float))), default=0)
    return round(TABLE_PADDING_PX + widest)
