"""One look for every chart: the app and the report draw each figure with the lab's template, in the app's own
typefaces and text colour, and every chart of a loss draws it on the same axis."""

import json
import tomllib
from pathlib import Path

import pandas as pd
from streamlit.testing.v1 import AppTest

from transformer.classroom.board import GroupCurves
from transformer.figures.board import group_curves_figure
from transformer.figures.compare import comparison_figure, loss_marker_figure
from transformer.figures.palette import contrast_ratio
from transformer.figures.standalone import figure_json, template_json
from transformer.figures.theme import FONT_FAMILY, OUTLINE, PRIMARY, TEMPLATE, TEXT
from transformer.figures.training import loss_figure

ROOT = Path(__file__).resolve().parents[2]


def test_the_charts_speak_in_the_app_s_typefaces_and_text_colour():
    theme = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())["theme"]
    assert FONT_FAMILY == theme["font"] and TEXT == theme["textColor"] and PRIMARY == theme["primaryColor"]
    assert TEMPLATE.layout.font.family.startswith(FONT_FAMILY)


def test_a_control_s_edge_reads_at_3_to_1_on_the_page_and_on_the_sidebar():
    """WCAG 1.4.11: a field's edge shows where it is, on the page's white and on the sidebar's grey."""
    theme = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())["theme"]
    assert theme["borderColor"] == OUTLINE
    assert (
        min(contrast_ratio(OUTLINE, ground) for ground in (theme["backgroundColor"], theme["secondaryBackgroundColor"]))
        >= 3
    )


def test_a_chart_s_toolbar_icons_read_against_its_white_ground():
    """Plotly's icons are 30% grey (1.7:1 on white); a control's icon needs 3:1 (WCAG 1.4.11)."""
    modebar = TEMPLATE.layout.modebar
    assert min(contrast_ratio(colour, "#ffffff") for colour in (modebar.color, modebar.activecolor)) >= 3


def test_the_app_draws_a_chart_with_the_lab_s_template_not_streamlit_s_theme():
    def page():
        import plotly.graph_objects as go

        from ui.charts import chart

        chart(__import__("streamlit"), go.Figure(go.Scatter(x=[1, 2], y=[3, 4])), key="a_chart")

    at = AppTest.from_function(page).run()
    assert not at.exception
    drawn = at.get("plotly_chart")[0].proto
    assert drawn.theme == ""  # Streamlit's chart theme off: the figure's own template decides
    assert json.loads(drawn.spec)["layout"]["template"] == json.loads(TEMPLATE.to_json())


def test_the_report_draws_its_figures_with_the_same_template():
    assert json.loads(template_json()) == json.loads(TEMPLATE.to_json())
    data, height = figure_json(loss_figure([ROW], height=300))
    assert "template" not in json.loads(data)["layout"] and height == 300  # the file's one template is given to each


ROW = dict(step=1, train_loss=3.0, val_loss=2.5, token_acc=0.1, exact_match=0.0)
LATER = dict(step=200, train_loss=0.02, val_loss=0.03, token_acc=1.0, exact_match=1.0)


def test_every_chart_of_a_loss_draws_it_on_one_log_axis():
    """Losses that span more than a factor of ten are ticked at powers of ten on every chart that draws them."""
    rows = [ROW, LATER]
    members = pd.DataFrame({7: [3.0, 0.02]}, index=[1, 200])
    charts = {
        "Train": loss_figure(rows).layout.yaxis,
        "Compare, curves": comparison_figure({"a": rows}).layout.yaxis,
        "Compare, timeline": loss_marker_figure(rows, 1, "a").layout.yaxis,
        "Teacher's board": group_curves_figure({"g": GroupCurves(members, members.median(axis=1))}, "t").layout.yaxis,
    }
    for name, axis in charts.items():
        assert (axis.type, axis.dtick, axis.exponentformat) == ("log", 1, "power"), name  # 10⁻⁶, never "1µ"
