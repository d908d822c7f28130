"""Train's view of how training reshapes the model: the symbols' embeddings at a metric row picked with a slider,
and each layer's gradient norm at every row."""

import streamlit as st

from transformer.figures import COLUMN_PX
from transformer.figures.dynamics import embedding_figure, gradient_figure
from transformer.serving import Run
from ui.charts import chart, narrowest_chart_px
from ui.language import _, session_translator

CHART_HEIGHT = 360
POLL_S = 2.0  # how often the charts follow a run in training: a new row every few tenths of a second is not needed


def dynamics_view(job: Run) -> None:
    """An expander with the run's embeddings and gradient norms at its metric rows, following it while it trains."""
    if job.done and not job.dynamics:  # ended before its first row
        return
    with st.expander(_("How training reshapes the model"), key="train_dynamics_expander"):
        st.fragment(charts, run_every=None if job.done else POLL_S)(job)  # the page redraws when the run ends


def charts(job: Run) -> None:
    """The charts of the rows so far. While the run trains they show the newest row; once it is paused or ended,
    the slider picks a row (moving it redraws only this part)."""
    records = job.dynamics[:]
    if not records:
        st.caption(_("The charts start at the first metric row, at step {step}.", step=job.train_config.eval_every))
        return
    steps = [record["step"] for record in records]
    index = len(records) - 1
    if len(records) > 1:  # a slider per count of rows: it starts at the newest row
        training = job.status == "training"
        step = st.select_slider(
            _("Metric row at step"),
            steps,
            steps[-1],
            key=f"dynamics_step_{len(records)}",
            disabled=training,
            help=_("Pause the run, or let it end, to slide back through its rows.") if training else None,
        )
        index = steps.index(step)
    tr, embeddings_col, gradients_col = session_translator(), *st.columns(2)
    fit_px = narrowest_chart_px(COLUMN_PX)  # half the page, or a phone's page where the columns stack
    chart(
        embeddings_col,
        embedding_figure(records, index, job.data().vocab.symbols, height=CHART_HEIGHT, tr=tr, fit_px=fit_px),
        key="dynamics_embeddings",
    )
    embeddings_col.caption(
        _(
            "Each symbol's embedding (the model the run keeps), on two fixed axes: the directions along which the "
            "symbols' embeddings differed most at the first metric row. The axes never change during the run, so "
            "a symbol that moves here moved in the model; the grey lines are the paths they took to this row."
        )
    )
    chart(gradients_col, gradient_figure(records, CHART_HEIGHT, tr, fit_px), key="dynamics_gradients")
    gradients_col.caption(
        _(
            "How large each layer's gradient was at each metric row's step, before clipping: the length of the "
            "vector of all its weights' gradients. Train once with each *LayerNorm* setting, post-norm and "
            "pre-norm, to see where each sends the largest updates."
        )
    )
