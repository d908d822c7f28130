"""Server resources every session shares: the run registry, torch's settings, the shipped checkpoints, and the run
each browser started last (so that a reload can take it back)."""

import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import streamlit as st
import torch

from transformer import Checkpoint, load_checkpoint, pick_device
from transformer.device import device_label
from transformer.experiments import LiveExperiment
from transformer.serving import LostRun, LostRuns, Run, RunRegistry, ServerSettings, data_dir, network_address
from transformer.serving.worker_link import READY_TIMEOUT_S
from transformer.training import warm_up
from ui.language import _
from ui.streamlit_internals import this_browser

CHECKPOINT_DIR = Path(__file__).resolve().parent.parent / "checkpoints"
LIVE_POLL_S = 0.5  # the Train page's live view redraws twice a second while a run trains...
LIVE_REDRAWS_PER_S = 8.0  # ...unless the whole server's live views would redraw more often than this together


@st.cache_resource
def setup_torch() -> str:
    """Process-wide torch settings, once; returns the device label.

    One intra-op thread per computation: sessions already run on threads of their own, and on a small shared
    server two runs each spinning two OpenMP threads on two cores slow each other down many times over. When runs
    train on server threads, the one-off costs of a first training step are paid here, on a thread of their own,
    not by the first student; worker processes pay their own before they are ready, and the server's cores are
    left to the pages.
    """
    settings = run_registry().settings  # also starts the training workers now, not at the first Start
    torch.set_num_threads(settings.torch_threads)
    # How long a thread may hold the GIL while another waits for it (Python's default: 5 ms): a step on a server
    # thread gives up the GIL at every small torch op, and would wait that long behind a page drawing its charts.
    sys.setswitchinterval(settings.switch_interval_s)
    if not settings.worker_processes:
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


@st.cache_resource(on_release=LostRuns.close)
def lost_runs() -> LostRuns:
    """The Train runs in flight on this server, written down for the next, and those the last one left in flight."""
    return LostRuns(data_dir() / "runs_in_flight.json")


def note_in_flight(run: Run, form: dict) -> None:
    """Write down this browser's Train run, started with the form's values `form`, for a server that replaces this
    one while it trains."""
    if (browser := this_browser()) is not None:
        lost_runs().follow(browser, run, form)


def lost_in_restart() -> LostRun | None:
    """The Train run this browser had in flight when the server before this one stopped, until it starts another;
    None if none."""
    browser = this_browser()
    return None if browser is None else lost_runs().lost(browser)


def queue_notice(run: Run, wait: str, unknown: str) -> None:
    """Where `run` stands in the queue, if it is queued: the message `wait` with its place and expected wait, or
    `unknown` with its place before a run of its kind has finished on this server."""
    if (place := run_registry().place(run)) is not None:
        said = _(wait if place.known else unknown, position=place.position, wait_s=place.wait_s)
        st.info(said, icon=":material/hourglass_top:")


def cluster_not_used() -> bool:
    """Whether the server was given a Ray cluster (`LAB_RAY_ADDRESS`) and trains on its own workers instead: the
    address was malformed or the cluster could not be reached (the server log says which)."""
    registry = run_registry()
    return bool(registry.settings.ray_address) and registry.ray_address is None


def live_poll_s() -> float:
    """Seconds between redraws of a live view: LIVE_POLL_S, or longer when so many pages watch runs that the
    server would spend its cores drawing charts instead of training (a class of 30 watching one run)."""
    return max(LIVE_POLL_S, run_registry().watching() / LIVE_REDRAWS_PER_S)


def client_address() -> str | None:
    """The network address this page comes from, as far as the server can tell (`network_address`); None when
    unknown, as behind a proxy that passes no address."""
    return network_address(st.context.ip_address, st.context.headers.get("X-Forwarded-For"))


def shipped_checkpoints() -> list[str]:
    return sorted(p.stem for p in CHECKPOINT_DIR.glob("*.pt"))


@st.cache_resource(show_spinner=False)
def shipped_checkpoint(name: str) -> Checkpoint:
    """A shipped checkpoint, loaded once per server and shared read-only by every session."""
    return load_checkpoint(CHECKPOINT_DIR / f"{name}.pt")


@dataclass
class BrowserRun:
    """A browser's last run on a page, and the session state a reload restores with it."""

    run: Run | LiveExperiment
    restore: dict
    ended_seen: float | None = None  # time.monotonic() when the run was first seen ended
    told_ended: bool = False  # a reload's page has said that it ended before the reload: once is enough


@st.cache_resource
def runs_by_browser() -> dict[tuple[str, str], BrowserRun]:
    """The run each browser started last on a page, by (`browser_id`, its session-state key: "run" for Train,
    "compare_job" for Compare); shared by every session."""
    return {}


@st.cache_resource
def models_by_browser() -> dict[str, dict]:
    """Each browser's models, by `browser_id`: the session-state lists of its trained and uploaded checkpoints (the
    very dicts its sessions hold), the model it last put in hand, and when a page of it last ran (`ui.state`'s
    `take_back_models`); shared by every session."""
    return {}


def remember_run(key: str, run: Run | LiveExperiment, restore: dict) -> None:
    """Note `run`, kept in session state under `key`, as this browser's run, so that a reload can pick it back up
    along with the session-state entries `restore`."""
    if (browser := this_browser()) is not None:
        runs_by_browser()[browser, key] = BrowserRun(run, {key: run, **restore})


def forget_run(key: str) -> Run | LiveExperiment | None:
    """This session lets go of its run under `key`, which it returns (None when it has none): the session state drops
    it, and neither the next script run nor a reload hands it back (`ui.state.reattach_runs`)."""
    if (browser := this_browser()) is not None:
        runs_by_browser().pop((browser, key), None)
    return st.session_state.pop(key, None)


def local_time(when: datetime | None = None) -> datetime:
    """`when` (None: now; a naive time is UTC, as the class database keeps times) in the browser's time zone
    (`st.context.timezone`; UTC where the browser gives none), the zone named by its offset, "UTC+8", which reads
    the same in every language and, unlike "CST", names one zone."""
    when = datetime.now(UTC) if when is None else when if when.tzinfo else when.replace(tzinfo=UTC)
    local = when.astimezone(_browser_zone())
    offset = local.utcoffset() or timedelta(0)
    minutes = int(offset.total_seconds()) // 60
    hours, rest = divmod(abs(minutes), 60)
    name = "UTC" if not minutes else f"UTC{'+' if minutes > 0 else '−'}{hours}" + (f":{rest:02d}" if rest else "")
    return local.replace(tzinfo=timezone(offset, name))


def _browser_zone() -> tzinfo:
    try:
        return ZoneInfo(st.context.timezone or "UTC")
    except (AttributeError, ValueError, ZoneInfoNotFoundError):  # no browser (AppTest), or a zone Python lacks
        return UTC
