"""The Compare timeline's figures: each title fits its half-page column, in English and Chinese."""

import pytest

from tests.helpers.figures import title_overflow
from transformer.figures import COLUMN_PX
from transformer.figures.compare import alignment_figure, loss_marker_figure
from transformer.i18n import translator


@pytest.mark.parametrize("language", ["en", "zh-CN"])
@pytest.mark.parametrize("variant", ["sinusoidal PE", "averaged weights (EMA 0.99)", "GRU + additive attention"])
def test_the_loss_title_fits_its_column(language, variant):
    """Drawn at Plotly's title size, 22 px: "Loss of averaged weights (EMA 0.99)" is two lines."""
    tr = translator(language)
    figure = loss_marker_figure(
        [{"step": 0, "train_loss": 2.0}, {"step": 10, "train_loss": 1.0}], 10, tr.gettext(variant), tr=tr
    )
    assert not title_overflow(figure, COLUMN_PX), figure.layout.title.text


@pytest.mark.parametrize("language", ["en", "zh-CN"])
def test_the_alignment_title_fits_its_column(language):
    figure = alignment_figure([0, 25], {"L0 H0": [0.5, 0.9]}, chance=0.2, tr=translator(language))
    assert not title_overflow(figure, COLUMN_PX), figure.layout.title.text
