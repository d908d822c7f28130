"""A session's state: its keys, the model in hand, its runs, one-off messages and results kept per model.

Session state keys the pages share (each named once, here):
- IN_HAND, "in_hand": the `Checkpoint` every probing page uses (shipped, trained here, or uploaded), or absent;
- IN_HAND_NAME, "in_hand_name": its label in the sidebar;
- RUN, "run": the session's Train `Run` (its own, or one it joined: identical runs are one run), or absent;
- COMPARE_JOB, "compare_job": the session's Compare rerun, a `LiveExperiment`, or absent;
- WATCHER, "watcher": this session's id as a watcher of runs when the browser has no id (see `watcher_id`);
- FOLLOW_RUN, "follow_run": True from Start until the run is put in hand; a model loaded meanwhile sets it False;
- TRAINED, "trained": {name: checkpoint bytes} of the last MAX_TRAINED runs finished in this session;
- TRAINED_RUNS, "trained_runs": {(run key, queued at): name} of those runs, so that a run joined again is listed once;
- UPLOADED, "uploaded": {file name: checkpoint bytes} of the last MAX_UPLOADED checkpoints uploaded in this session;
- TRAIN_SAVED, "train_saved": the finished run last saved, its name, checkpoint bytes or error (`save_finished_run`);
  whether it is the model in hand is read from IN_HAND_NAME each time (`saved_run_in_hand`), never kept;
- FLASHES, "flashes": {place: (kind, text)}, the one-off message each place shows at its next draw (`flash`);
- RESULTS, "results": {name: `ModelResult`}, what a page computed for a model (`per_model`);
- CLASS_CODE, "class_code": the class the opened link (`?class=...`) named; every page keeps it in the address, so
  a reload keeps the student in the class (ui/classes.py has the class's own keys);
- RUN_SEAT, "run_seat": `Seat.key` of the seat RUN was started in, None outside a class: a class's pages show and
  report only a run of its own seat (`ui.classes.run_of_seat`).
A reload starts a new session: `take_back_models` hands it the browser's lists of trained and uploaded models, the
model it had in hand and what its pages last computed (RESULTS), and `reattach_runs` its Train
run and Compare rerun, if they still train. Pages keep their own widget state under keys prefixed with the page's name;
a page's inputs wait for the student while they visit other pages (`persist_state="session"`), for the task they were
typed for (`claim_inputs`).
"""

import os
import time
import uuid
from collections.abc import Callable, Hashable
from dataclasses import asdict
from typing import Any, NamedTuple

import streamlit as st

from transformer import Checkpoint, CheckpointError, load_checkpoint
from transformer.checkpoint import FINAL, checkpoint_bytes
from transformer.experiments import LiveExperiment
from transformer.i18n import N_
from transformer.limits import ENDED_RUN_KEPT_S
from transformer.literal import markdown_literal
from transformer.naming import run_name, task_label
from transformer.serving import Run, run_key
from transformer.tasks import DataConfig
from ui.common import models_by_browser, runs_by_browser, shipped_checkpoint, shipped_checkpoints
from ui.decoding_inputs import STRATEGY, set_input
from ui.language import _
from ui.streamlit_internals import this_browser

IN_HAND, IN_HAND_NAME, RUN, COMPARE_JOB = "in_hand", "in_hand_name", "run", "compare_job"
WATCHER, FOLLOW_RUN, TRAINED, TRAIN_SAVED = "watcher", "follow_run", "trained", "train_saved"
TRAINED_RUNS = "trained_runs"
FLASHES, RESULTS, CLASS_CODE, UPLOADED = "flashes", "results", "class_code", "uploaded"
RUN_SEAT = "run_seat"
SHIPPED_PREFIX = "shipped: "  # the sidebar's label of a shipped checkpoint in hand, before its name
TRAINED_PREFIX = "trained: "  # and of a checkpoint trained in this session
SOURCES = {"shipped": N_("shipped"), "trained": N_("trained"), "uploaded": N_("uploaded")}  # where a model came from
MAX_TRAINED = 10  # checkpoints of finished runs a session keeps (about 140 KB each at the default size)
MAX_UPLOADED = 3  # uploaded checkpoints a session keeps listed (each at most the upload limit)

# ------------------------------------------------------------------------------------------- one-off messages


def flash(place: str, kind: str, text: str) -> None:
    """Keep a message for `place` to show once, at its next draw (`show_flashes`); it replaces the one waiting
    there. `kind`: "success", "info", "warning" or "error". A callback runs before the page is drawn, so a message
    it keeps shows in the same redraw."""
    st.session_state.setdefault(FLASHES, {})[place] = (kind, text)


def show_flashes(place: str, keep: bool = False) -> None:
    """Show the message waiting for `place`, if any, and drop it; with `keep`, leave it for the next draw too (a
    fragment that redraws on its own shows it until `drop_flash`)."""
    waiting = st.session_state.get(FLASHES, {})
    if (message := waiting.get(place) if keep else waiting.pop(place, None)) is not None:
        kind, text = message
        getattr(st, kind)(text)


def drop_flash(place: str) -> tuple[str, str] | None:
    """Drop the message waiting for `place` unshown; returns it (kind, text), or None."""
    return st.session_state.get(FLASHES, {}).pop(place, None)


# --------------------------------------------------------------------------------------- results per model


class ModelResult(NamedTuple):
    model: object  # the model it was computed for, compared by identity
    key: Hashable  # the settings it was computed with
    value: Any


def kept_result(name: str) -> ModelResult | None:
    """The result last kept under `name`, whatever model it was computed for."""
    return st.session_state.get(RESULTS, {}).get(name)


def keep_result(name: str, model: object, key: Hashable, value: Any) -> ModelResult:
    """Keep `value`, computed for `model` with settings `key`, under `name`, in place of the one kept before."""
    kept = ModelResult(model, key, value)
    st.session_state.setdefault(RESULTS, {})[name] = kept
    return kept


def result_for(name: str, model: object, key: Hashable) -> Any | None:
    """The value kept under `name` if it was computed for this very `model` with settings `key`, else None."""
    kept = kept_result(name)
    return kept.value if _computed_for(kept, model, key) else None


def _computed_for(kept: ModelResult | None, model: object, key: Hashable) -> bool:
    return kept is not None and kept.model is model and kept.key == key


def per_model(name: str, model: object, key: Hashable, compute: Callable[[], Any]) -> Any:
    """`compute()`, run once per model and settings `key`: changing page and coming back shows the same result.
    One result per `name`; another model in hand (a new object) or other settings compute it again."""
    kept = kept_result(name)
    if _computed_for(kept, model, key):
        return kept.value
    value = compute()
    keep_result(name, model, key, value)
    return value


# -------------------------------------------------------------------------------------------- the session's runs


def watcher_id() -> str:
    """Who watches a run: the browser (all its tabs count as one student), or this session when the browser has
    no id."""
    return this_browser() or st.session_state.setdefault(WATCHER, uuid.uuid4().hex)


def running(key: str) -> Run | LiveExperiment | None:
    """The session's run under `key` (RUN or COMPARE_JOB) while it has not ended: queued, preparing, training or
    paused."""
    run = st.session_state.get(key)
    return run if run is not None and not run.done else None


def session_run_elsewhere(page: str) -> str | None:
    """Why this session may not start a run on `page` ("train" or "compare"): one run per student at a time, since
    each holds one of the server's few training slots. None when it may."""
    if page == "compare" and running(RUN) is not None:
        return _("Your run on the Train page is still training: stop it or let it finish first.")
    if page == "train" and running(COMPARE_JOB) is not None:
        return _("Your comparison on the Compare page is still training: stop it or let it finish first.")
    return None


SHARED_LISTS = (TRAINED, TRAINED_RUNS, UPLOADED)  # a browser's sessions share these (`take_back_models`)
HAND = "hand"  # in a browser's models: (checkpoint, label) it last put in hand


def take_back_models() -> None:
    """The session takes this browser's lists of trained and uploaded models, the same dicts its other sessions hold
    (its other tabs, and the session a reload ended), and, when it has no model in hand, the one the browser last put
    there, unless a run of it still trains into its hand (`reattach_runs` hands that back); and, when it has computed
    nothing yet, a copy of what its pages last computed for a model (RESULTS: a length test survives a reload into the
    lab report). A browser's lists are let go ENDED_RUN_KEPT_S after its last page ran."""
    if (browser := this_browser()) is None:
        return
    kept, now = models_by_browser(), time.monotonic()
    for other in [b for b, models in kept.items() if now - models["seen"] > ENDED_RUN_KEPT_S]:
        del kept[other]
    models = kept.setdefault(browser, {HAND: None, **{key: st.session_state.get(key, {}) for key in SHARED_LISTS}})
    models["seen"] = now
    for key in SHARED_LISTS:
        st.session_state[key] = models[key]
    followed = runs_by_browser().get((browser, RUN))
    following = followed is not None and followed.restore.get(FOLLOW_RUN) and not followed.run.done
    if IN_HAND not in st.session_state and models[HAND] is not None and not following:
        st.session_state[IN_HAND], st.session_state[IN_HAND_NAME] = models[HAND]
    if RESULTS not in st.session_state:  # a copy: a tab's results are its own, each kept for the model it is of
        st.session_state[RESULTS] = dict(models.get(RESULTS, {}))
    models[RESULTS] = st.session_state[RESULTS]  # the results of the page that ran last, for a reload to take


def reattach_runs() -> None:
    """After a reload (a new session, so no run of its own), take back this browser's runs: one still training, or
    one that ended within ENDED_RUN_KEPT_S, with its outcome and model (in hand, unless the opened link put a model
    in hand; a run that ended while no tab was open takes the place of the model taken back from before it). Runs
    ended longer ago are let go."""
    runs, now = runs_by_browser(), time.monotonic()
    for other, kept in list(runs.items()):
        if kept.run.done:
            kept.ended_seen = kept.ended_seen or now
            if now - kept.ended_seen > ENDED_RUN_KEPT_S:
                runs.pop(other, None)
    if (browser := this_browser()) is None:
        return
    hand = models_by_browser().get(browser, {}).get(HAND)
    taken_back = hand is not None and st.session_state.get(IN_HAND) is hand[0]  # by `take_back_models`: the browser's
    for key in (RUN, COMPARE_JOB):
        if key not in st.session_state and (browser, key) in runs:
            kept, linked = runs[browser, key], IN_HAND in st.session_state and not taken_back  # the opened link's
            st.session_state.update(kept.restore)
            if linked:  # stays in hand: the run's model is not followed into it
                st.session_state[FOLLOW_RUN] = False
            if kept.run.done and not kept.told_ended:
                kept.told_ended = True
                st.toast(
                    _("Your run ended before the reload: its outcome and model are back here."), icon=":material/sync:"
                )
            elif not kept.run.done:
                st.toast(_("Your run kept training through the reload: it is back here."), icon=":material/sync:")


def save_finished_run() -> None:
    """Once per finished run: a checkpoint of its model, listed on the Checkpoints page and put in hand (unless
    the student put another model in hand during the run).

    Runs on every page, so a run that ends while the student is elsewhere still becomes the model in hand.
    """
    run: Run | None = st.session_state.get(RUN)
    if run is None or not run.done or run.result is None or run.result.steps == 0:  # stopped before its first step
        return
    if st.session_state.get(TRAIN_SAVED, {}).get("run") is run:
        return
    trained = st.session_state.setdefault(TRAINED, {})
    names = st.session_state.setdefault(TRAINED_RUNS, {})
    key = run_key(run.model_config, run.data_config, run.train_config), run.queued_at  # this run, not its settings
    name = names.get(key)  # a run listed before (Start with its settings again joined it): listed once, newest
    if name not in trained:
        name = run_name(run.model_config, run.data_config, {*trained, *shipped_checkpoints()})
    saved = {"run": run, "name": name, "data": trained.pop(name, None), "error": None}
    try:
        if saved["data"] is None:
            meta = {"name": name, FINAL: run.result.exact_match}  # the score the Train page says, not a row's sample
            saved["data"] = checkpoint_bytes(
                run.model(), run.data().vocab, run.data_config, run.rows[:], asdict(run.train_config), meta=meta
            )
        if st.session_state.get(FOLLOW_RUN):
            put_in_hand(load_checkpoint(saved["data"]), TRAINED_PREFIX + name)
        trained[name], names[key] = saved["data"], name
        for oldest in list(trained)[:-MAX_TRAINED]:
            del trained[oldest]
        for gone in [k for k, listed in names.items() if listed not in trained]:
            del names[gone]
    except (ValueError, CheckpointError) as err:
        saved["error"] = _(err)
    st.session_state[TRAIN_SAVED] = saved


def saved_run_in_hand() -> bool:
    """Whether the model in hand now is the last finished run's checkpoint (TRAIN_SAVED): put in hand when the run
    ended, or loaded again since on Checkpoints; False once another model took its place."""
    saved = st.session_state.get(TRAIN_SAVED)
    return saved is not None and st.session_state.get(IN_HAND_NAME) == TRAINED_PREFIX + saved["name"]


def keep_upload(name: str, data: bytes) -> tuple[str, list[str]]:
    """List an uploaded checkpoint on the Checkpoints page, last, in place of the oldest of MAX_UPLOADED; returns the
    name it is listed under and the names no longer listed. Another file of the same name (two classmates' models of
    one task) is listed beside it as "name (2).pt"; the same file again moves to the end."""
    uploaded = st.session_state.setdefault(UPLOADED, {})
    (stem, extension), listed, n = os.path.splitext(name), name, 1
    while uploaded.get(listed, data) != data:  # another file is listed under this name
        n += 1
        listed = f"{stem} ({n}){extension}"
    uploaded.pop(listed, None)
    uploaded[listed] = data
    dropped = list(uploaded)[:-MAX_UPLOADED]
    for oldest in dropped:
        del uploaded[oldest]
    return listed, dropped


# ------------------------------------------------------------------------------------------ the model in hand


def put_in_hand(checkpoint: Checkpoint, name: str) -> None:
    """Make `checkpoint` the model every page probes; a run still training no longer takes its place, in this
    session or the one a reload starts."""
    st.session_state[IN_HAND] = checkpoint
    st.session_state[IN_HAND_NAME] = name
    st.session_state[FOLLOW_RUN] = False
    if (browser := this_browser()) is not None:
        if browser in models_by_browser():
            models_by_browser()[browser][HAND] = checkpoint, name
        if (browser, RUN) in runs_by_browser():
            runs_by_browser()[browser, RUN].restore[FOLLOW_RUN] = False


def following_run() -> bool:
    """Whether the model in hand is the snapshot of a run that is still training."""
    return running(RUN) is not None and bool(st.session_state.get(FOLLOW_RUN))


def model_in_hand() -> tuple[Checkpoint | None, str]:
    """The checkpoint probing pages use, and its label. While a run trains, its latest snapshot is in hand, unless
    the student has put another model in hand since it started."""
    run: Run | None = st.session_state.get(RUN)
    if following_run():
        model = run.model()
        if model is not None:
            rows, task = run.rows[:], task_label(run.data_config)
            step = rows[-1]["step"] if rows else 0
            paused = run.status == "paused"
            label = (
                _("paused {task}, step {step}", task=task, step=step)
                if paused
                else _("training {task}, step {step}", task=task, step=step)
            )
            return Checkpoint(model, run.data().vocab, model.config, run.data_config, rows, {}), label
    return st.session_state.get(IN_HAND), st.session_state.get(IN_HAND_NAME, "")


def in_hand_label(name: str) -> str:
    """A model in hand's label (IN_HAND_NAME: "shipped: reverse", "uploaded: mine.pt") in the session's language."""
    source, colon, rest = name.partition(": ")
    return _("{source}: {name}", source=_(SOURCES[source]), name=rest) if colon and source in SOURCES else name


def shipped_name(checkpoint: Checkpoint) -> str | None:
    """The name of the shipped checkpoint that `checkpoint` is (the object every session shares), else None."""
    name = st.session_state.get(IN_HAND_NAME, "").removeprefix(SHIPPED_PREFIX)
    return name if name in shipped_checkpoints() and shipped_checkpoint(name) is checkpoint else None


def load_shipped_checkpoint(name: str) -> None:
    """Button callback: runs before the page is drawn, so the sidebar already shows the new model."""
    try:
        put_in_hand(shipped_checkpoint(name), SHIPPED_PREFIX + name)
        flash("load", "success", _("Loaded **{name}**. Try the Decoding or Masking pages next.", name=name))
    except CheckpointError as err:
        flash("load", "error", _("Could not load {name}: {reason}", name=name, reason=err))


def shipped_checkpoint_buttons(key_prefix: str) -> None:
    """A "Load <name>" button per shipped checkpoint, side by side, and the outcome of the last click."""
    names = shipped_checkpoints()
    if not names:
        st.warning(_("No shipped checkpoints found in `checkpoints/`: train one on the Train page."))
    for col, name in zip(st.columns(max(len(names), 1)), names):
        col.button(
            _("Load {name}", name=name),
            key=f"{key_prefix}_{name}",
            on_click=load_shipped_checkpoint,
            args=(name,),
            width="stretch",
        )
    show_flashes("load")


def model_page(page: str, title: str, intro: str, formula: str | None = None) -> Checkpoint:
    """Open `page`, a page about the model in hand: its title, its introduction and a formula (LaTeX) under it, if
    any, and a notice when the model in hand changed since the page last showed one (the page's inputs may then
    start afresh: `claim_inputs`); returns the model in hand, or shows a hint and stops when there is none."""
    st.title(title)
    st.markdown(intro)
    if formula is not None:
        st.latex(formula)
    notice = st.empty()  # its place on every run: a notice there moves no field below it, whose unsent text the
    checkpoint = require_model()  # browser would drop with the field it redraws (a run ending as a student types)
    if (label := model_change(page)) is not None:
        model = f"**{markdown_literal(in_hand_label(label))}**"
        notice.info(_("The model in hand changed since this page last showed one: it is now {model}.", model=model))
    return checkpoint


def require_model() -> Checkpoint:
    """The model in hand, or a hint and a stop when there is none."""
    checkpoint = model_in_hand()[0]
    if checkpoint is None:
        st.info(_("No model in hand yet: load a shipped one here, train one, or upload one on Checkpoints."))
        shipped_checkpoint_buttons("require_load")
        st.stop()
    drop_flash("load")  # loaded from this page's buttons: the page itself shows the model
    return checkpoint


def model_change(page: str) -> str | None:
    """The label of the model in hand when `page` showed another model at its last draw, else None (a first visit,
    or a run in hand that trained on: still the same run). Remembers the model shown now."""
    checkpoint, label = model_in_hand()
    shown = st.session_state.get(RUN) if following_run() else checkpoint  # a run's snapshots are one model
    before = st.session_state.get(f"{page}_model", shown)
    st.session_state[f"{page}_model"] = shown
    return None if before is shown else label


def claim_inputs(page: str, task: DataConfig) -> bool:
    """Note that `page`'s inputs are for `task`, the model in hand's; returns whether they were not (another task's,
    or none yet): the page then starts them afresh. A page draws its inputs with `persist_state="session"`, so they
    wait for the student while they visit other pages; but another task's symbols would not read."""
    mark = f"{page}_task"
    fresh = st.session_state.get(mark) != task
    st.session_state[mark] = task
    return fresh


def decode_on_decoding_page(text: str, task: DataConfig, origin: str) -> None:
    """Go to the Decoding page with `text`, a source sequence of `task`, as its input, decoded greedily as the page
    it comes from decoded it (not the strategy last picked there); `origin` says where the input comes from, e.g. "a
    row of the Length test"."""
    claim_inputs("decode", task)
    set_input(text, origin)
    st.session_state[STRATEGY] = "greedy"
    st.switch_page("pages/decoding.py")
