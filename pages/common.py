"""State and resources shared by the pages: the model in hand, the training job, shipped checkpoints.

Session state keys:
- "in_hand": the `Checkpoint` every probing page uses (shipped, trained here, or uploaded), or absent;
- "in_hand_name": its label in the sidebar;
- "job": the session's Train `Run` (its own, or one it joined: identical runs are one run), or absent;
- "watcher": this session's id as a watcher of runs when the browser has no id (see `watcher_id`);
- "follow_job": True from Start until the run is put in hand; a model loaded meanwhile sets it False, and stays;
- "trained": {name: checkpoint bytes} of the last MAX_TRAINED runs finished in this session;
- "train_saved": the finished job last saved, its name, checkpoint bytes or error (see `save_finished_job`);
- "load_result": ("success" | "error", message) of the last shipped-checkpoint button, until shown.
A reload starts a new session: `reattach_runs` hands it the browser's Train run and Compare rerun, if they still
train.
Pages keep their own widget state under keys prefixed with the page's name.
"""

import sys
import uuid
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import streamlit as st
import torch

from pages.streamlit_internals import leave_legacy_pages_mode, page_connected, this_browser
from transformer import Checkpoint, CheckpointError, load_checkpoint, pick_device
from transformer.checkpoint import checkpoint_bytes
from transformer.device import device_label
from transformer.experiments import LiveExperiment
from transformer.literal import markdown_literal
from transformer.live import run_name
from transformer.serving import Run, RunRegistry, ServerSettings
from transformer.serving.worker import READY_TIMEOUT_S
from transformer.tasks import DataConfig
from transformer.training import warm_up
from transformer.url_state import Parser, model_parsers, read_params

# Streamlit treats a folder named pages/ as legacy auto-discovered pages until some run calls st.navigation, so the
# first request after a (re)start that opens a page's own URL (a shared link to /compare) would run that page
# without the frame. The first run on a server switches to st.navigation and starts over.
if leave_legacy_pages_mode():
    st.rerun()

CHECKPOINT_DIR = Path(__file__).resolve().parent.parent / "checkpoints"
SHIPPED_PREFIX = "shipped: "  # the sidebar's label of a shipped checkpoint in hand, before its name
MAX_TRAINED = 10  # checkpoints of finished runs a session keeps (about 140 KB each at the default size)
LIVE_POLL_S = 0.5  # the Train page's live view redraws twice a second while a run trains...
LIVE_REDRAWS_PER_S = 8.0  # ...unless the whole server's live views would redraw more often than this together


@st.cache_resource
def setup_torch() -> str:
    """Process-wide torch settings, once; returns the device label.

    One intra-op thread per computation: sessions already run on threads of their own, and on a small shared
    server two jobs each spinning two OpenMP threads on two cores slow each other down many times over. The
    one-off costs of a first training step are paid here, on a thread of their own, not by the first student.
    """
    settings = run_registry().settings  # also starts the training workers now, not at the first Start
    torch.set_num_threads(settings.torch_threads)
    # How long a thread may hold the GIL while another waits for it (Python's default: 5 ms): a step on a server
    # thread gives up the GIL at every small torch op, and would wait that long behind a page drawing its charts.
    sys.setswitchinterval(settings.switch_interval_s)
    warm_up()
    return device_label(pick_device())


@st.cache_resource(on_release=RunRegistry.close)
def run_registry() -> RunRegistry:
    """Every training run on this server, shared by every session (Train's runs and Compare's variants): joins
    identical runs, queues distinct ones, and trains them in its worker processes (docs/design.md). Its settings
    come from the `LAB_*` environment variables (docs/classroom.md)."""
    registry = RunRegistry(ServerSettings.from_env())
    registry.wait_ready(READY_TIMEOUT_S)  # the first page waits a few seconds; every Start after it, none
    return registry


@st.cache_resource
def _runs_by_browser() -> dict[tuple[str, str], tuple[Run | LiveExperiment, dict]]:
    """The run each browser started last on a page, by (`browser_id`, its session-state key: "job" for Train,
    "compare_job" for Compare), with the session state to restore alongside it; shared by every session."""
    return {}


def watcher_id() -> str:
    """Who watches a run: the browser (all its tabs count as one student), or this session when the browser has
    no id."""
    return this_browser() or st.session_state.setdefault("watcher", uuid.uuid4().hex)


def remember_run(key: str, job: Run | LiveExperiment, restore: dict) -> None:
    """Note `job`, kept in session state under `key`, as this browser's run, so that a reload can pick it back up
    along with the session-state entries `restore`."""
    if (browser := this_browser()) is not None:
        _runs_by_browser()[browser, key] = job, {key: job, **restore}


def forget_run(key: str) -> None:
    """This browser left its run under `key`: a reload must not hand it back."""
    if (browser := this_browser()) is not None:
        _runs_by_browser().pop((browser, key), None)


def reattach_runs() -> None:
    """After a reload (a new session, so no run of its own), take back this browser's runs that still train."""
    runs = _runs_by_browser()
    for other, (job, _) in list(runs.items()):  # an ended run is not taken back: let it go
        if job.done:
            runs.pop(other, None)
    if (browser := this_browser()) is None:
        return
    for key in ("job", "compare_job"):
        if key not in st.session_state and (browser, key) in runs:
            st.session_state.update(runs[browser, key][1])
            st.toast("Your run kept training through the reload: it is back here.", icon=":material/sync:")


def session_run_elsewhere(page: str) -> str | None:
    """Why this session may not start a run on `page` ("train" or "compare"): one run per student at a time, since
    each holds one of the server's few training slots. None when it may."""
    if page == "compare" and _running("job") is not None:
        return "Your run on the Train page is still training: stop it or let it finish first."
    if page == "train" and _running("compare_job") is not None:
        return "Your comparison on the Compare page is still training: stop it or let it finish first."
    return None


def shipped_checkpoints() -> list[str]:
    return sorted(p.stem for p in CHECKPOINT_DIR.glob("*.pt"))


@st.cache_resource(show_spinner=False)
def shipped_checkpoint(name: str) -> Checkpoint:
    """A shipped checkpoint, loaded once per server and shared read-only by every session."""
    return load_checkpoint(CHECKPOINT_DIR / f"{name}.pt")


def shipped_name(checkpoint: Checkpoint) -> str | None:
    """The name of the shipped checkpoint that `checkpoint` is (the object every session shares), else None."""
    name = st.session_state.get("in_hand_name", "").removeprefix(SHIPPED_PREFIX)
    return name if name in shipped_checkpoints() and shipped_checkpoint(name) is checkpoint else None


def put_in_hand(checkpoint: Checkpoint, name: str) -> None:
    """Make `checkpoint` the model every page probes; a run still training no longer takes its place."""
    st.session_state["in_hand"] = checkpoint
    st.session_state["in_hand_name"] = name
    st.session_state["follow_job"] = False


def load_shipped_checkpoint(name: str) -> None:
    """Button callback: runs before the page is drawn, so the sidebar already shows the new model."""
    try:
        put_in_hand(shipped_checkpoint(name), SHIPPED_PREFIX + name)
        st.session_state["load_result"] = ("success", f"Loaded **{name}**. Try the Decoding or Masking pages next.")
    except CheckpointError as err:
        st.session_state["load_result"] = ("error", f"Could not load {name}: {err}")


def shipped_checkpoint_buttons(key_prefix: str) -> None:
    """A "Load <name>" button per shipped checkpoint, side by side, and the outcome of the last click."""
    names = shipped_checkpoints()
    if not names:
        st.warning("No shipped checkpoints found in `checkpoints/`: train one on the Train page.")
    for col, name in zip(st.columns(max(len(names), 1)), names):
        col.button(
            f"Load {name}", key=f"{key_prefix}_{name}", on_click=load_shipped_checkpoint, args=(name,), width="stretch"
        )
    if result := st.session_state.pop("load_result", None):
        kind, text = result
        st.success(text) if kind == "success" else st.error(text)


def following_run() -> bool:
    """Whether the model in hand is the snapshot of a run that is still training."""
    return _running("job") is not None and bool(st.session_state.get("follow_job"))


def model_in_hand() -> tuple[Checkpoint | None, str]:
    """The checkpoint probing pages use, and its label. While a run trains, its latest snapshot is in hand, unless
    the student has put another model in hand since it started."""
    run: Run | None = st.session_state.get("job")
    if following_run():
        model = run.model()
        if model is not None:
            rows = run.rows[:]
            label = f"training {run.data_config.task} (step {rows[-1]['step'] if rows else 0})"
            return Checkpoint(model, run.data().vocab, model.config, run.data_config, rows, {}), label
    return st.session_state.get("in_hand"), st.session_state.get("in_hand_name", "")


def require_model() -> Checkpoint:
    """The model in hand, or a hint and a stop when there is none."""
    checkpoint, _ = model_in_hand()
    if checkpoint is None:
        st.info("No model in hand yet: load a shipped one here, train one, or upload one on Checkpoints.")
        shipped_checkpoint_buttons("require_load")
        st.stop()
    st.session_state.pop("load_result", None)  # loaded from this page's buttons: the page itself shows the model
    return checkpoint


def decode_on_decoding_page(text: str, task: DataConfig) -> None:
    """Go to the Decoding page with `text`, a source sequence of `task`, as its input."""
    st.session_state["decode_task"] = task  # the Decoding page keeps an input only for the task it was typed for
    st.session_state["decode_input"] = text
    st.switch_page("pages/decoding.py")


def _running(key: str) -> Run | LiveExperiment | None:
    """The session's run under `key` while it has not ended: queued, preparing, training or paused."""
    job = st.session_state.get(key)
    return job if job is not None and not job.done else None


@st.fragment(run_every=2.0)
def _job_heartbeat(page: str) -> None:
    """While this session trains (a Train run or a Compare rerun), keep it going and show its progress and the
    model in hand on every page: a run that no page polls (the tab was closed) stops after the idle timeout
    (see `Run`).
    The Train and Compare pages draw their own run's progress, so the sidebar leaves it out there."""
    job, comparison = _running("job"), _running("compare_job")
    if job is None and comparison is None:
        st.rerun()  # the run ended: redraw the page without this poll
    if job is not None:
        job.touch(watcher_id(), page_connected())
        if page != "train":
            steps = job.train_config.steps
            text = "Queued for training" if job.status == "queued" else f"Training: step {job.step} of {steps}"
            st.progress(min(job.step / steps, 1.0), text=text)
    if comparison is not None:
        comparison.chain.touch(page_connected())
        done, total = comparison.progress()
        if page != "compare":
            st.progress(min(done / total, 1.0), text=f"Comparing: step {done} of {total}")
    _model_in_hand_label(page)


def save_finished_job() -> None:
    """Once per finished job: a checkpoint of its model, listed on the Checkpoints page and put in hand (unless
    the student put another model in hand during the run).

    Runs on every page, so a run that ends while the student is elsewhere still becomes the model in hand.
    """
    run: Run | None = st.session_state.get("job")
    if run is None or not run.done or run.result is None or run.result.steps == 0:  # stopped before its first step
        return
    if st.session_state.get("train_saved", {}).get("job") is run:
        return
    trained = st.session_state.setdefault("trained", {})
    name = run_name(run.model_config, run.data_config, {*trained, *shipped_checkpoints()})
    saved = {"job": run, "name": name, "data": None, "error": None, "in_hand": st.session_state.get("follow_job")}
    try:
        saved["data"] = checkpoint_bytes(
            run.model(), run.data().vocab, run.data_config, run.rows[:], asdict(run.train_config), meta={"name": name}
        )
        if saved["in_hand"]:
            put_in_hand(load_checkpoint(saved["data"]), f"trained: {name}")
        trained[name] = saved["data"]
        for oldest in list(trained)[:-MAX_TRAINED]:
            del trained[oldest]
    except (ValueError, CheckpointError) as err:
        saved["error"] = str(err)
    st.session_state["train_saved"] = saved


def live_poll_s() -> float:
    """Seconds between redraws of a live view: LIVE_POLL_S, or longer when so many pages watch runs that the
    server would spend its cores drawing charts instead of training (a class of 30 watching one run)."""
    return max(LIVE_POLL_S, run_registry().watching() / LIVE_REDRAWS_PER_S)


def sidebar(page: str) -> None:
    """The shared sidebar: device, the running job's progress, and the model in hand. `page`: the page's url path."""
    with st.sidebar:
        st.caption(f"Device: {setup_torch()}")
        reattach_runs()
        save_finished_job()
        if _running("compare_job") is not None or (_running("job") is not None and page != "train"):
            _job_heartbeat(page)  # redraws the model in hand too: a run in hand moves on while the page stays
        else:
            _model_in_hand_label(page)


def _model_in_hand_label(page: str) -> None:
    if page == "train" and following_run():  # drawn once while the run moves on: no step that would go stale
        st.markdown("**Model in hand:** the run on this page, at its latest step")
        return
    checkpoint, name = model_in_hand()
    if checkpoint is None:
        st.markdown("**Model in hand:** none yet")
        return
    c = checkpoint.config
    st.markdown(f"**Model in hand:** {markdown_literal(name)}")
    st.caption(
        f"task {checkpoint.task.task}, lengths {checkpoint.task.min_len}-{checkpoint.task.max_len} · "
        f"d_model {c.d_model}, {c.n_heads} heads, {c.n_layers}+{c.n_layers} layers · "
        f"{'pre' if c.norm_first else 'post'}-norm"
    )


# ------------------------------------------------------------------------------------------------------- links


def shipped_in_hand() -> str | None:
    """The name of the shipped model in hand, the only kind a link can carry (`?model=reverse`); else None."""
    checkpoint, _ = model_in_hand()
    return None if checkpoint is None else shipped_name(checkpoint)


def show_link_notices(notices: list[str]) -> None:
    """What the opened link got wrong, and that the page uses its defaults instead. A notice names the parameter,
    never the value the link held, so nothing from the link reaches the page."""
    for notice in notices:
        st.warning(f"{notice} Check the link you opened.", icon=":material/link_off:")


def model_from_link() -> None:
    """The frame's part of a link, on every run: once per session, put in hand the shipped model the opened link
    names; then keep the address bar's `model` on the shipped model in hand, or drop it for any other model."""
    if "link_model_read" not in st.session_state:
        st.session_state["link_model_read"] = True
        values, notices = read_params(st.query_params.to_dict(), model_parsers(shipped_checkpoints()))
        show_link_notices(notices)
        if "model" in values:
            try:
                put_in_hand(shipped_checkpoint(values["model"]), SHIPPED_PREFIX + values["model"])
            except CheckpointError as err:
                st.error(f"Could not load {values['model']}: {err}")
    name = shipped_in_hand()
    if name is not None and st.query_params.get("model") != name:
        st.query_params["model"] = name
    elif name is None and "model" in st.query_params:
        del st.query_params["model"]


def link_values(page: str, parsers: Mapping[str, Parser]) -> dict[str, Any]:
    """What the opened link says for this page, checked by `parsers`, on the page's first run in the session (with
    a notice per bad value); {} on every later run, when the page's own state counts."""
    if f"{page}_link_read" in st.session_state:
        return {}
    st.session_state[f"{page}_link_read"] = True
    values, notices = read_params(st.query_params.to_dict(), parsers)
    show_link_notices(notices)
    return values


def share_link(params: Mapping[str, str] | None = None) -> None:
    """Put the shipped model in hand and the page's settings `params` in the address bar, and offer the link to
    copy in the sidebar. A model trained here or uploaded cannot travel in a link: the offer says so."""
    name = shipped_in_hand()
    wanted = {**({"model": name} if name else {}), **(params or {})}
    if st.query_params.to_dict() != wanted:
        st.query_params.from_dict(wanted)
    query = urlencode(wanted, quote_via=quote)
    url = (st.context.url or "") + (f"?{query}" if query else "")  # no URL without a browser: a relative link
    with st.sidebar.popover("Copy link", icon=":material/link:", width="stretch"):
        st.caption("A link to this page as you see it: copy it with the button at its right.")
        st.code(url, language=None, wrap_lines=True)
        if name is None and model_in_hand()[0] is not None:
            st.caption(
                "The link cannot carry the model in hand: only shipped models travel in a link. Download this one "
                "and share the file; whoever opens the link uploads it on Checkpoints."
            )
            st.page_link("pages/checkpoints.py", label="Download it on Checkpoints", icon=":material/download:")
