"""Every chart of the lab drawn one way: `st.plotly_chart` with its text alternative, in the session's language, for
screen readers (WCAG 1.1.1), and in the lab's look (`transformer.figures.theme`), the report's too, in place of
Streamlit's chart theme. The text is read off the figure (`transformer.figures.summary.describe`).

    from ui.charts import chart
    chart(st, lr_figure(config, step, tr=tr), key="train_lr_chart")
    chart(loss_col, loss_figure(rows, tr=tr), key="train_loss_chart")
"""

from types import ModuleType
from typing import Any

from streamlit.delta_generator import DeltaGenerator

from transformer.figures.summary import describe
from transformer.figures.theme import Figure, themed
from ui.language import session_translator


def chart(where: DeltaGenerator | ModuleType, fig: Figure, key: str, **options: Any) -> None:
    """Draw `fig` under `key` in `where` (`st` itself, or a column or container), with the figure's description as
    its accessible name. `options`: more of `st.plotly_chart`'s (config, ...)."""
    where.plotly_chart(themed(fig), key=key, alt=describe(fig, session_translator()), theme=None, **options)
