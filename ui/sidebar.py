"""The sidebar every page shares: the language picker, the device, the progress of a run training on another page,
the model in hand."""

import streamlit as st

from transformer.literal import markdown_literal
from transformer.naming import length_span, switch_words, task_label
from ui.accessibility import accessible_page
from ui.common import setup_torch
from ui.language import _, language_picker, ngettext
from ui.state import (
    COMPARE_JOB,
    RUN,
    following_run,
    in_hand_label,
    model_in_hand,
    reattach_runs,
    running,
    save_finished_run,
    take_back_models,
    watcher_id,
)
from ui.streamlit_internals import page_connected, page_waker


def sidebar(page: str) -> None:
    """The shared sidebar: the language picker, device, the progress of the run in training, and the model in hand.
    `page`: the page's url path."""
    with st.sidebar:
        language_picker()
        accessible_page()
        st.caption(_("Device: {device}", device=setup_torch()))
        take_back_models()
        reattach_runs()
        save_finished_run()
        if running(COMPARE_JOB) is not None or (running(RUN) is not None and page != "train"):
            _run_heartbeat(page)  # redraws the model in hand too: a run in hand moves on while the page stays
        else:
            _model_in_hand_label(page)


@st.fragment(run_every=2.0)
def _run_heartbeat(page: str) -> None:
    """While this session trains (a Train run or a Compare rerun), keep it going and show its progress and the
    model in hand on every page: a run that no page polls (the tab was closed) stops after the idle timeout
    (see `Run`).
    The Train and Compare pages draw their own run's progress, so the sidebar leaves it out there."""
    run, comparison = running(RUN), running(COMPARE_JOB)
    if run is None and comparison is None:
        st.rerun()  # the run ended: redraw the page without this poll
    if run is not None:
        run.touch(watcher_id(), page_connected(), page_waker())
        if page != "train":
            steps = run.train_config.steps
            if run.status == "queued":
                text = _("Queued for training")
            elif run.status == "paused":
                text = _("Paused at step {step}, at most {steps:,}", step=run.step, steps=steps)
            else:
                text = _("Training: step {step}, at most {steps:,}", step=run.step, steps=steps)
            st.progress(min(run.step / steps, 1.0), text=text)
    if comparison is not None:
        comparison.chain.touch(page_connected())
        done, total = comparison.progress()
        if page != "compare":
            st.progress(min(done / total, 1.0), text=_("Comparing: step {done} of {total}", done=done, total=total))
    _model_in_hand_label(page)


def _model_in_hand_label(page: str) -> None:
    if page == "train" and following_run():  # drawn once while the run moves on: no step that would go stale
        st.markdown(_("**Model in hand:** the run on this page, at its latest step"))
        return
    checkpoint, name = model_in_hand()
    if checkpoint is None:
        st.markdown(_("**Model in hand:** none yet"))
        return
    c = checkpoint.config
    st.markdown(_("**Model in hand:** {name}", name=markdown_literal(in_hand_label(name))))
    task, heads = checkpoint.task, ngettext("{n} head", "{n} heads", c.n_heads)
    st.caption(
        " · ".join(
            (
                _("task {task}, lengths {lengths}", task=markdown_literal(task_label(task)), lengths=length_span(task)),
                _("d_model {d_model}, {heads}, {n}+{n} layers", d_model=c.d_model, heads=heads, n=c.n_layers),
                *(_(words) for words in switch_words(c)),  # the teaching switches set away from the default model
            )
        )
    )
