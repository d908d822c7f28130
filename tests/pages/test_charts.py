"""Every chart a page draws carries its text alternative (`alt`): the figure's title, then what it shows, in the
session's language (`transformer.figures.summary.describe`, tested in tests/figures/test_summary.py)."""

import json

import pytest

from tests.helpers.apptest import open_anatomy
from tests.helpers.models import random_checkpoint
from transformer.figures.summary import plain


@pytest.mark.parametrize("lang, stop, diagram", [("en", ".", "Diagram"), ("zh-CN", "。", "示意图")])
def test_every_chart_on_anatomy_has_an_alt_that_states_its_title_and_what_it_shows(lang, stop, diagram):
    at = open_anatomy(random_checkpoint(), lang)
    charts = at.get("plotly_chart")
    assert len(charts) >= 5
    for chart in charts:
        title = plain(json.loads(chart.proto.spec)["layout"].get("title", {}).get("text")) or diagram
        assert chart.proto.alt.startswith(title.rstrip(".。") + stop), (chart.proto.id, chart.proto.alt)
        assert len(chart.proto.alt) > len(title) + 20, chart.proto.alt  # more than the title: what it shows
