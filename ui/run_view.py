"""A run as the Train page shows it while it trains: its progress line, the classmates who watch it, its loss and
accuracy charts and a few held-out inputs decoded. A class watching one run polls it many times a second, so its
charts and decoded inputs are built once for every watcher (`shared_charts`, `shared_examples`)."""

import streamlit as st

from transformer.figures import COLUMN_PX
from transformer.figures.training import accuracy_figure, loss_figure
from transformer.i18n import translator
from transformer.live_examples import live_examples
from transformer.progress import progress
from transformer.serving import Run
from transformer.training import smoothed_loss_floor
from ui.charts import chart
from ui.language import _, language, ngettext, table_cells
from ui.tables import symbols_apart

CHART_HEIGHT = 320  # both charts fit beside each other under the controls at 1280x800
STEPS_PER_FRAME = 10  # the live loss curve moves in whole frames of this many steps, drawn once for all watchers


def run_id(run: Run) -> tuple[int, float]:
    """A key for a started run's shared drawings: its identity and start time (an id alone may be reused)."""
    return id(run), run.started_at


@st.cache_resource(max_entries=64, show_spinner=False)
def shared_examples(run_ident: tuple, step: int, _run: Run):
    """Up to five held-out inputs decoded by the run's model at `step`, decoded once for every watcher of the run."""
    return live_examples(_run.model(), _run.data())


@st.cache_resource(max_entries=64, show_spinner=False)
def shared_charts(run_ident: tuple, n_rows: int, n_steps: int, language: str, _run: Run):
    """The loss and accuracy figures of a run's first `n_rows` metric rows and `n_steps` steps in `language`, built
    once for every watcher of the run (a class watching one run polls it many times a second). Read-only."""
    rows, losses, tr = _run.rows[:n_rows], _run.losses[:n_steps], translator(language)
    floor = smoothed_loss_floor(_run.train_config.label_smoothing, _run.model_config.vocab_size)
    loss = loss_figure(rows, train_floor=floor, step_losses=losses, height=CHART_HEIGHT, tr=tr, fit_px=COLUMN_PX)
    return loss, accuracy_figure(rows, height=CHART_HEIGHT, tr=tr, fit_px=COLUMN_PX)


def progress_line(run: Run, rows: list) -> tuple[float, str]:
    """A training run's progress bar and its words. A run that stops once solved fills the bar with its held-out
    exact match, the measure that ends it; its step budget is a ceiling, not a forecast. Any other run fills it with
    its step budget, which it trains to the end."""
    paused = run.status == "paused"
    config, p = run.train_config, progress(rows, run.train_config)
    where = _("Paused at step {step}", step=run.step) if paused else _("Training: step {step}", step=run.step)
    # its budgets' seconds are training's (`device.training_clock`), which a busy server's wait between steps is not
    left = (
        ""
        if p.eta_s is None
        else _(" (at most {seconds:.0f} s more of training, longer on a busy server)", seconds=p.eta_s)
    )
    if not config.early_stop:
        return p.fraction, _("{where} of {steps:,}{left}", where=where, steps=config.steps, left=left)
    # A run still training has not got its whole held-out set right (that would end it), whatever the latest row's
    # sample of it says: at most 99%. A float: st.progress reads an int as percent.
    solved = min(float(rows[-1]["exact_match"]), 0.99) if rows else 0.0
    return solved, _(
        "{where} · held-out exact match {solved:.0%}: the run stops when it reaches 100%. Its budget of {steps:,} "
        "steps{left} is a ceiling, not a forecast.",
        where=where,
        solved=solved,
        steps=config.steps,
        left=left,
    )


def classmates_line(run: Run) -> int:
    """How many classmates watch this same run, said when there are any; returns their number."""
    classmates = run.open_pages() - 1
    if classmates > 0:
        together = (
            ngettext(
                "Same settings as {n} classmate: you all trained this one run. Same seed, same run.",
                "Same settings as {n} classmates: you all trained this one run. Same seed, same run.",
                classmates,
            )
            if run.done
            else ngettext(
                "Same settings as {n} classmate: you are all watching one run. Same seed, same run.",
                "Same settings as {n} classmates: you are all watching one run. Same seed, same run.",
                classmates,
            )
        )
        st.caption(together)
    return classmates


def live_charts(run: Run, rows: list, losses: list) -> None:
    """The loss and accuracy charts side by side, and what label smoothing does to the training loss's floor."""
    loss_col, acc_col = st.columns(2)
    smoothing, vocab_size = run.train_config.label_smoothing, run.model_config.vocab_size
    floor = smoothed_loss_floor(smoothing, vocab_size)
    # whole frames while it trains; the first steps at once (the curve starts moving) and every step at the end
    steps = len(losses) if run.done or len(losses) < STEPS_PER_FRAME else len(losses) - len(losses) % STEPS_PER_FRAME
    loss_chart, accuracy_chart = shared_charts(run_id(run), len(rows), steps, language(), run)
    chart(loss_col, loss_chart, key="train_loss_chart")
    chart(acc_col, accuracy_chart, key="train_accuracy_chart")
    if floor:
        loss_col.caption(
            _(
                "With label smoothing {smoothing:g}, training aims at a target that is not all on the right token, "
                "so even a perfect model's training loss is {floor:.2f} (dotted line). The held-out loss is plain "
                "cross-entropy and can go to 0.",
                smoothing=smoothing,
                floor=floor,
            )
        )


def held_out_examples(run: Run, rows: list) -> None:
    """Up to five held-out inputs decoded by the model as of the last metric row, each marked right or wrong."""
    step = int(rows[-1]["step"])
    examples = shared_examples(run_id(run), step, run)  # fewer when the task holds fewer out
    st.markdown(
        ngettext(
            "**{n} held-out input**, decoded greedily by the model as of step {step}:",
            "**{n} held-out inputs**, decoded greedily by the model as of step {step}:",
            len(examples),
            step=step,
        )
    )
    # its symbols apart, its empty output's words and its headers translated
    shown = table_cells(symbols_apart(examples)).rename(columns=_)
    st.dataframe(shown, hide_index=True)
