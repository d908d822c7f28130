"""Load test: many students at once against one server.

Starts `streamlit run` (harness/server.py), opens N Playwright browser contexts in Debian's Chromium that all load
the home page at once, then sends T of them to the Train page, where every page clicks Start at the same moment (a
timer armed in each page): in the `defaults` scenario all with the Train page's defaults (one run, joined by
everyone), in the `seeds` scenario each with a seed of its own (T distinct runs, most of them queued), in the
`class` scenario as a class: every session opens the class link of a class made before the server starts
(groups PE / no PE on reverse, a question), joins by name and predicts, while a teacher's board is open and redraws
every 2 s (`--no-board` leaves it closed, to measure what the board costs the class's training).

Reports sessions served without error; training runs finished, refused, lapsed (the page polled too seldom to keep
its run) or failed; from Start to the run training and to finished, p50 / p95 / max, both as the server sent it
(the first websocket message after Start that carries it, as it reaches the browser) and as read on the page (its
text, every 0.5 s), and from Start to each run's queueing, start and end on the server (its log's lines, which
no browser delays); how many students were sent and saw their queue place, and saw the shared-run line; the
longest a page sent the server nothing between Start and its outcome (a page polls every few seconds); peak
server RSS (the process and its children, its training workers among them, sampled every 0.2 s); server and
browser CPU; and p50/p95 time to first paint (navigation start to the app's title shown with its script run
finished). The browsers stand in for the students' laptops. They run on the server's cores at `--browser-nice`
(`Renicer`): 19, the default, gives the server the cores it asks for and the browsers what is left; 0 shares the
cores equally. With `--server-cpus N` the server runs on N CPUs and the browsers on the others.

    python benchmarks/load_test.py [--sessions 30] [--trainers 30] [--scenario defaults|seeds|class] [--no-board]
                                   [--browser-nice 19] [--server-cpus N] [--json FILE]

Prints one line of progress every 10 s on stderr, then a JSON summary and a short table; exits 1 if any session
errored, or a training run lapsed or failed. Only 127.0.0.1 is contacted; every wait has a timeout.
"""

import argparse
import asyncio
import json
import os
import re
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Self

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import async_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository: harness; the class scenario's class
from harness.chromium import CHROMIUM, CHROMIUM_ARGS, NO_CHROMIUM, VIEWPORT
from harness.page import ERROR_TEXTS, EXCEPTION, IDLE, PAGES
from harness.paths import ARTIFACTS, SCREENSHOTS
from harness.server import LabServer

PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
LOAD_TIMEOUT_S = 180.0  # one session's first page load
TRAIN_TIMEOUT_S = 600.0  # one training run, Start to finished, queue included (30 distinct runs, 2 at a time)
SCENARIOS = ("defaults", "seeds", "class")
BOARD_SUMMARY = re.compile(r"^\d+ students?")  # the board's first line: "30 students · 12 training · 18 finished"
CLASS_STEPS = 600  # the class's step budget: a run without positional encoding never solves reverse, and runs on
BUSY_TEXT = "could not start"
LAPSED_TEXT = "left the queue without starting"
RUN_SUMMARY_TEXT = " · d_model "  # in the caption that opens a run's live view
STOPPED_TEXT = "Stopped at step"  # by its watchers' leaving, or going quiet for the idle timeout
DONE_TEXT = "Finished after"
QUEUE_TEXT = "in the queue"
SHARED_TEXT = "Same settings as"
MOVING_TEXT = "Training: step"
SENT_MARKERS = {"queue place": QUEUE_TEXT.encode(), "training": MOVING_TEXT.encode(), "finished": DONE_TEXT.encode()}
ERROR_ALERT = "[data-testid='stAlertContentError']"  # e.g. "Training stopped with an error"
READY_JS = f"""() => document.querySelector("{IDLE} h1") ? performance.now() : false"""
PAGE_STATE_JS = f"""() => ({{
    text: document.querySelector("[data-testid='stMain']")?.innerText ?? "",
    failed: document.querySelector("{EXCEPTION}, {ERROR_ALERT}") !== null,
}})"""
POLL_S = 0.5  # between two reads of a training student's page
ARM_START_JS = """(at) => {
    const start = [...document.querySelectorAll(".st-key-start_training button")].find((b) => b.offsetParent);
    if (start) setTimeout(() => start.click(), Math.max(0, at - Date.now()));
    return Boolean(start);
}"""
START_DELAY_S = 2.0  # from arming the first page's Start to the clicks: time enough to arm all the pages


@dataclass
class Session:
    index: int
    first_paint_s: float | None = None
    served: bool = False
    training: str | None = None  # completed, refused, lapsed (queued or stopped for want of polls), failed, None
    trained_steps: int | None = None  # of a completed run
    trained_s: float | None = None  # its training time, as the page reports it
    start_to_moving_s: float | None = None  # from the click on Start to the first view of the run training
    start_to_finished_s: float | None = None  # of a completed run, from the click on Start
    saw_queue_place: bool = False
    saw_shared_line: bool = False
    clicked_at: float | None = None  # perf_counter time of the click on Start
    sent_at: dict[str, float] = field(default_factory=dict)  # first frame from the server after it with each marker
    asked_at: list[float] = field(default_factory=list)  # frames the page sent the server after it (its reruns)
    ended_at: float | None = None  # when the run's outcome was read
    stage: str = "loading"  # where the session is now: loading, home, train page, started, queued, training, done
    errors: list[str] = field(default_factory=list)


@dataclass
class ClassLink:
    """The class the `class` scenario's students join: its code and teacher key, and what its board showed."""

    code: str
    key: str
    board_texts: list[str] = field(default_factory=list)  # the board's summary line at each read, changes only
    board_errors: list[str] = field(default_factory=list)


def make_class() -> ClassLink:
    """A class in the database the server will use (LAB_DATA_DIR): two groups that differ in positional encoding
    on reverse, and the question about it."""
    from transformer.classroom import Assignment, ClassStore, Group, database_url

    store = ClassStore(database_url(os.environ))
    code, key = store.create_class("load test")
    groups = (Group("with PE", "sinusoidal"), Group("no PE", "none"))
    store.set_assignment(
        code, key, Assignment({"task": "reverse", "steps": CLASS_STEPS}, frozenset(), "positional", groups)
    )
    store.set_question(code, key, "positional-none")
    store.close()
    return ClassLink(code, key)


class Every:
    """A context manager that calls `tick()` on a thread of its own every `every_s` seconds while it is open."""

    def __init__(self, every_s: float):
        self.every_s = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=type(self).__name__, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(5)

    def tick(self) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.tick()


class ServerSampler(Every):
    """On a thread: peak resident memory of the server process and its descendants (from /proc, every 0.2 s), and
    how long /_stcore/health takes to answer (every 1 s): the server's own responsiveness, whatever the browsers do."""

    def __init__(self, pid: int, url: str, every_s: float = 0.2, probe_every: int = 5):
        super().__init__(every_s)
        self.pid, self.url, self.probe_every = pid, url, probe_every
        self.peak_bytes = self.first_bytes = 0
        self.samples = 0
        self.health_s: list[float] = []

    def __enter__(self) -> Self:
        self.first_bytes = self.rss()
        return super().__enter__()

    def rss(self) -> int:
        return sum(_rss(pid) for pid in [self.pid, *_descendants(self.pid)])

    def cpu_s(self) -> float:
        """CPU seconds (user + system) the process and its live descendants (its training workers) have used."""
        return sum(_cpu_s(pid) for pid in [self.pid, *_descendants(self.pid)])

    def own_cpu_s(self) -> float:
        """CPU seconds the server process itself has used: serving pages, without its training workers."""
        return _cpu_s(self.pid)

    def tick(self) -> None:
        self.peak_bytes = max(self.peak_bytes, self.rss())
        self.samples += 1
        if self.samples % self.probe_every == 0:
            self.health_s.append(self._probe())

    def _probe(self, timeout_s: float = 10.0) -> float:
        start = time.perf_counter()
        try:
            with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=timeout_s) as answer:
                answer.read()
        except OSError:
            return timeout_s
        return time.perf_counter() - start


class Renicer(Every):
    """On a thread: holds every thread of this process's descendants but the server's at `nice`, every 0.5 s, and
    their scheduling autogroups too. Chromium running as root raises its own threads' priority (its browser and
    GPU processes to nice -8, its renderers to 0), so a nice set once at launch does not hold; and Playwright starts
    it in a session of its own, which Linux's autogroup scheduling (kernel.sched_autogroup_enabled) gives an equal
    share of the CPU with the server's whatever its threads' nice, unless the group's own nice is set. Also keeps
    the CPU seconds each of those processes has used, as last seen (`cpu_s`)."""

    def __init__(self, server_pid: int, nice: int, every_s: float = 0.5):
        super().__init__(every_s)
        self.server_pid, self.nice = server_pid, nice
        self._cpu_s: dict[int, float] = {}

    def cpu_s(self) -> float:
        """CPU seconds the browsers (and the test's own driver) have used, as of the last tick."""
        return sum(self._cpu_s.values())

    def __enter__(self) -> Self:
        os.setpriority(os.PRIO_PROCESS, 0, self.nice)  # this thread, and the browsers it starts from here on
        return super().__enter__()

    def tick(self) -> None:
        server = {self.server_pid, *_descendants(self.server_pid)}
        server_group = _autogroup(self.server_pid)
        for pid in set(_descendants(os.getpid())) - server:
            self._cpu_s[pid] = max(self._cpu_s.get(pid, 0.0), _cpu_s(pid))
            if _autogroup(pid)[:1] != server_group[:1]:  # never the server's own group
                _set_autogroup_nice(pid, self.nice)
            for task in Path(f"/proc/{pid}/task").glob("[0-9]*"):
                try:
                    if os.getpriority(os.PRIO_PROCESS, int(task.name)) != self.nice:
                        os.setpriority(os.PRIO_PROCESS, int(task.name), self.nice)
                except OSError:  # the thread just ended
                    continue


def _autogroup(pid: int) -> list[str]:
    """The autogroup `pid` is in and its nice (["/autogroup-49", "nice", "0"]); [] where there is none."""
    try:
        return Path(f"/proc/{pid}/autogroup").read_text().split()
    except OSError:  # no autogroups here, or the process just ended
        return []


def _set_autogroup_nice(pid: int, nice: int) -> None:
    group = _autogroup(pid)
    if group and group[-1] != str(nice):
        try:
            Path(f"/proc/{pid}/autogroup").write_text(str(nice))
        except OSError:
            return


def _cpu_s(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:  # the process just ended
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def _rss(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE_SIZE
    except (OSError, IndexError, ValueError):  # the process just ended
        return 0


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], list(children.get(pid, []))
    while todo:
        child = todo.pop()
        found.append(child)
        todo.extend(children.get(child, []))
    return found


async def page_errors(page) -> list[str]:
    problems = [f"exception element: {text[:300]}" for text in await page.locator(EXCEPTION).all_inner_texts()]
    body = await page.locator("body").inner_text()
    return problems + [f"{marker!r} on the page" for marker in ERROR_TEXTS if marker in body]


def watch_frames(page, session: Session) -> None:
    """Note when the server's websocket messages to this page first carry each of SENT_MARKERS after Start: what
    the server sent, whenever the page's renderer, short of CPU here, gets to draw it."""

    def on_frame(payload: str | bytes) -> None:
        now = time.perf_counter()
        if session.clicked_at is None or now < session.clicked_at:
            return
        data = payload if isinstance(payload, bytes) else payload.encode()
        for name, marker in SENT_MARKERS.items():
            if name not in session.sent_at and marker in data:
                session.sent_at[name] = now

    def on_sent(_payload: str | bytes) -> None:
        now = time.perf_counter()
        if session.clicked_at is not None and now >= session.clicked_at and session.ended_at is None:
            session.asked_at.append(now)

    def on_socket(socket) -> None:
        socket.on("framereceived", on_frame)
        socket.on("framesent", on_sent)

    page.on("websocket", on_socket)


async def open_home(browser, url: str, session: Session):
    """A fresh context loads the home page; records the time to first paint and whether it was served clean."""
    context = await browser.new_context(viewport=VIEWPORT)
    page = await context.new_page()
    watch_frames(page, session)
    try:
        await page.goto(url, wait_until="commit", timeout=LOAD_TIMEOUT_S * 1000)
        ready = await page.wait_for_function(READY_JS, polling=50, timeout=LOAD_TIMEOUT_S * 1000)
        session.first_paint_s = await ready.json_value() / 1000
        await page.wait_for_selector(IDLE, timeout=LOAD_TIMEOUT_S * 1000)
        session.errors += await page_errors(page)
        session.served = not session.errors and "Transformer Lab" in await page.locator("h1").first.inner_text()
        session.stage = "home"
    except PlaywrightError as err:  # a timeout or a dead page: this session was not served
        session.errors.append(f"loading home: {err!r:.300}")
    return context, page


async def go_to_train(page, session: Session, scenario: str) -> bool:
    """Through the sidebar (same session), then, in the seeds scenario, a seed of the session's own; False (with
    the error noted) if that fails."""
    try:
        await page.locator(f"[data-testid='stSidebarNav'] a[href$='/{PAGES['train']}']").first.click()
        ready = ".st-key-class_name" if scenario == "class" else ".st-key-start_training"
        await page.wait_for_selector(f"{IDLE} {ready}", timeout=LOAD_TIMEOUT_S * 1000)
        if scenario == "seeds":
            field_ = page.locator(".st-key-train_seed input")
            await field_.fill(str(100 + session.index), timeout=LOAD_TIMEOUT_S * 1000)
            await field_.press("Tab", timeout=LOAD_TIMEOUT_S * 1000)  # not Enter: that would submit the form
            await page.wait_for_selector(IDLE, timeout=LOAD_TIMEOUT_S * 1000)
        if scenario == "class":
            await join_class(page, session)
        session.stage = "train page"
        return True
    except PlaywrightError as err:
        session.errors.append(f"opening Train: {err!r:.300}")
        return False


async def join_class(page, session: Session) -> None:
    """On Train, a class student gives a name, joins (a seed and a group of their own), and predicts."""
    timeout = LOAD_TIMEOUT_S * 1000
    await page.locator(".st-key-class_name input").fill(f"student {session.index}", timeout=timeout)
    await page.locator(".st-key-class_join_button button").click(timeout=timeout)
    await page.wait_for_selector(f"{IDLE} .st-key-start_training", timeout=timeout)
    await page.wait_for_timeout(300)  # joining reruns the page twice: the second run redraws the question
    await page.wait_for_selector(IDLE, timeout=timeout)
    later = page.locator(".st-key-class_prediction label").filter(has_text="later").first
    while not await later.locator("input").is_checked(timeout=timeout):  # a click during a redraw is lost
        await later.click(timeout=timeout)
        await page.wait_for_timeout(200)


async def watch_board(browser, url: str, link: ClassLink) -> None:
    """The teacher's board, open until cancelled: its summary line read every 2 s, each change kept."""
    context = await browser.new_context(viewport=VIEWPORT)
    page = await context.new_page()
    timeout = LOAD_TIMEOUT_S * 1000
    try:
        await page.goto(f"{url}/teacher", wait_until="commit", timeout=timeout)
        await page.locator(".st-key-teacher_code input").fill(link.code, timeout=timeout)
        await page.locator(".st-key-teacher_key input").fill(link.key, timeout=timeout)
        await page.locator(".st-key-teacher_open_button button").click(timeout=timeout)
        while True:
            summary = page.locator("[data-testid='stMain'] p").filter(has_text=BOARD_SUMMARY)
            if await summary.count():
                text = await summary.first.inner_text()
                if not link.board_texts or link.board_texts[-1] != text:
                    link.board_texts.append(text)
            await asyncio.sleep(2.0)
    except PlaywrightError as err:
        link.board_errors.append(f"board: {err!r:.300}")
    finally:
        link.board_errors += await page_errors(page)
        await context.close()


async def train(page, session: Session, at: float) -> None:
    """Click Start at the wall-clock time `at` (a timer armed in the page, so that every student's click lands in
    the same second however busy the browsers are by then); the run must finish (any reason) or be refused within
    the timeout. Notes whether the student saw a queue place or the shared-run line on the way. The page is read
    every POLL_S in one call (PAGE_STATE_JS): reading a page costs its renderer the CPU it draws with."""
    try:
        session.clicked_at = time.perf_counter() + (at - time.time())
        if not await page.evaluate(ARM_START_JS, at * 1000):
            raise PlaywrightError("no visible Start button")
        await asyncio.sleep(max(0.0, at - time.time()))
        clicked = time.perf_counter()
        session.stage = "started"
        while time.perf_counter() - clicked < TRAIN_TIMEOUT_S:
            state = await page.evaluate(PAGE_STATE_JS)
            text = state["text"]
            session.saw_queue_place |= QUEUE_TEXT in text
            session.saw_shared_line |= SHARED_TEXT in text
            if QUEUE_TEXT in text:
                session.stage = "queued"
            if MOVING_TEXT in text:
                session.stage = "training"
                if session.start_to_moving_s is None:
                    session.start_to_moving_s = time.perf_counter() - clicked
            if DONE_TEXT in text:
                session.training = "completed"
                session.start_to_finished_s = time.perf_counter() - clicked
                if found := re.search(r"Finished after (\d+) steps in ([\d.]+) s", text):
                    session.trained_steps, session.trained_s = int(found.group(1)), float(found.group(2))
                break
            if BUSY_TEXT in text:
                session.training = "refused"
                break
            if LAPSED_TEXT in text or STOPPED_TEXT in text:  # the page polled too seldom to keep its run
                session.training = "lapsed"
                break
            if state["failed"]:
                session.training = "failed"
                break
            await asyncio.sleep(POLL_S)
        else:
            session.training = "failed"
            live = text[text.find(RUN_SUMMARY_TEXT) :][:600]  # the live view: status, controls, messages
            session.errors.append(f"no outcome {TRAIN_TIMEOUT_S:.0f} s after Start; the page read: {live!r}")
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            await page.screenshot(path=SCREENSHOTS / f"load-test-stuck-{session.index}.png")
        session.stage, session.ended_at = "done", time.perf_counter()
        session.errors += await page_errors(page)
    except PlaywrightError as err:
        session.training = "failed"
        session.errors.append(f"training: {err!r:.300}")


async def report_progress(sessions: list[Session], every_s: float = 10.0) -> None:
    """Every `every_s`, one line on stderr: how many sessions are at each stage (a slow run shows where it is)."""
    start = time.perf_counter()
    while True:
        await asyncio.sleep(every_s)
        stages = Counter(s.stage for s in sessions)
        print(f"{time.perf_counter() - start:5.0f} s: {dict(stages)}", file=sys.stderr, flush=True)


async def drive(
    url: str, n_sessions: int, n_trainers: int, warm_up: bool, scenario: str, link: ClassLink | None, board: bool
) -> tuple[list[Session], dict]:
    timings = {}
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            if warm_up:  # the first run imports torch and the package: a teacher opening the link before class
                start = time.perf_counter()
                context, _ = await open_home(browser, url, Session(-1))
                await context.close()
                timings["warm_up_s"] = round(time.perf_counter() - start, 2)
            sessions = [Session(i) for i in range(n_sessions)]
            progress = asyncio.create_task(report_progress(sessions))
            start = time.perf_counter()
            home = url if link is None else f"{url}/?class={link.code}"  # the class link opens the app
            opened = await asyncio.gather(*(open_home(browser, home, s) for s in sessions))
            timings["all_loaded_s"] = round(time.perf_counter() - start, 2)
            trainers = [(s, page) for s, (_, page) in zip(sessions, opened) if s.served][:n_trainers]
            ready = await asyncio.gather(*(go_to_train(page, s, scenario) for s, page in trainers))
            watching = asyncio.create_task(watch_board(browser, url, link)) if link is not None and board else None
            start = time.perf_counter()
            at = timings["start_at"] = time.time() + START_DELAY_S
            await asyncio.gather(*(train(page, s, at) for (s, page), ok in zip(trainers, ready) if ok))
            timings["training_phase_s"] = round(time.perf_counter() - start, 2)
            if watching is not None:
                await asyncio.sleep(4.0)  # two more redraws: the last runs' ends reach the board
                watching.cancel()
                await asyncio.gather(watching, return_exceptions=True)
            for session, (_, page) in zip(sessions, opened):  # nobody broke while the others trained
                if session.served:
                    try:
                        session.errors += await page_errors(page)
                    except PlaywrightError as err:
                        session.errors.append(f"final check: {err!r:.300}")
                    session.served = not session.errors
            progress.cancel()
            await asyncio.gather(*(context.close() for context, _ in opened))
        finally:
            await browser.close()
    return sessions, timings


RUN_EVENTS = ("queued", "started", "ended")
RUN_LOG_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) run (queued|started|ended): ([^,\n]+)", re.M)


def runs_on_server(log_text: str, since: float) -> list[dict[str, float]]:
    """Per run the server logged after `since` (a time.time()), seconds from `since` to each of RUN_EVENTS."""
    runs: dict[str, dict[str, float]] = {}
    for stamp, event, label in RUN_LOG_LINE.findall(log_text):
        at = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S.%f").timestamp()  # the server's local time, as ours
        if at >= since - 1.0:  # a click lands within a second of `since`, however busy the browsers
            runs.setdefault(label, {}).setdefault(event, round(at - since, 3))
    return list(runs.values())


def percentile(values: list[float], q: float) -> float | None:
    """The q-th percentile (0-100) by linear interpolation; None for no values."""
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[round(q) - 1]


def run(
    n_sessions: int = 30,
    n_trainers: int = 30,
    warm_up: bool = True,
    scenario: str = "defaults",
    browser_nice: int = 19,
    server_cpus: int = 0,
    board: bool = True,
) -> dict:
    """Run the load test against a fresh server and return the summary. With `server_cpus`, the server (and so its
    training workers) runs on that many of this process's CPUs and the browsers on the others; else all share them."""
    if not CHROMIUM.exists():
        raise SystemExit(NO_CHROMIUM)
    if scenario not in SCENARIOS:
        raise ValueError(f"scenario must be one of {', '.join(SCENARIOS)}")
    cpus = sorted(os.sched_getaffinity(0))
    if server_cpus and not 1 <= server_cpus < len(cpus):
        raise ValueError(f"server_cpus must leave the browsers at least one of the {len(cpus)} CPUs")
    started = time.perf_counter()
    link = None
    if scenario == "class":  # a class database of this run's own, made before the server that reads it starts
        os.environ["LAB_DATA_DIR"] = tempfile.mkdtemp(prefix="load-test-classes-")
        os.environ.pop("LAB_DATABASE_URL", None)
        link = make_class()
    if server_cpus:
        os.sched_setaffinity(0, cpus[:server_cpus])  # inherited by the server, started next
    with (
        LabServer(ARTIFACTS / "server-load-test.log") as server,
        ServerSampler(server.pid, server.url) as sampler,
        # The browsers stand in for students' laptops: at a lower priority than the server where they share its
        # cores (the server keeps its own).
        Renicer(server.pid, browser_nice) as renicer,
    ):
        if server_cpus:
            os.sched_setaffinity(0, cpus[server_cpus:])  # inherited by the browsers, started next
        drive_all = drive(server.url, n_sessions, n_trainers, warm_up, scenario, link, board)
        sessions, timings = asyncio.run(asyncio.wait_for(drive_all, TRAIN_TIMEOUT_S + 2 * LOAD_TIMEOUT_S))
        server.check_alive()
        server_cpu_s = sampler.cpu_s()
        browser_cpu_s = renicer.cpu_s()
        server_log_tracebacks = server.log_text().count("Traceback")
        on_server = runs_on_server(server.log_text(), timings.get("start_at", 0.0))
    trainings = [s.training for s in sessions if s.training is not None]
    errored = [s for s in sessions if s.errors]
    return {
        "scenario": scenario,
        "browser_nice": browser_nice,
        "cpus": len(cpus),
        "server_cpus": server_cpus,  # 0: the server and the browsers share every CPU
        "sessions": n_sessions,
        "served": sum(s.served for s in sessions),
        "errors": len(errored) + (1 if server_log_tracebacks else 0),
        "server_log_tracebacks": server_log_tracebacks,
        "training": {
            "started": len(trainings),
            "completed": trainings.count("completed"),
            "refused": trainings.count("refused"),
            "lapsed": trainings.count("lapsed"),
            "failed": trainings.count("failed"),
            "steps_of_completed_runs": [s.trained_steps for s in sessions if s.training == "completed"],
            "training_s_of_completed_runs": [s.trained_s for s in sessions if s.training == "completed"],
            "saw_queue_place": sum(s.saw_queue_place for s in sessions),
            "saw_shared_line": sum(s.saw_shared_line for s in sessions),
            "start_to_moving_s": _spread(s.start_to_moving_s for s in sessions),
            "start_to_finished_s": _spread(s.start_to_finished_s for s in sessions),
            # what the server sent, as its websocket frames reached the browser (drawn or not)
            "sent_queue_place": sum("queue place" in s.sent_at for s in sessions),
            "start_to_training_sent_s": _spread(_sent_after_start(s, "training") for s in sessions),
            "start_to_finished_sent_s": _spread(_sent_after_start(s, "finished") for s in sessions),
            # the longest a page sent the server nothing between Start and its outcome (it polls every few seconds)
            "longest_quiet_s": _spread(_longest_quiet(s) for s in sessions),
            "longest_quiet_s_of_lapsed": sorted(_round(_longest_quiet(s)) for s in sessions if s.training == "lapsed"),
        },
        # each run as the server's log has it (queued, started, ended), from the moment every page clicked Start
        "runs_on_server": {
            "runs": len(on_server),
            **{f"start_to_{event}_s": _spread(run.get(event) for run in on_server) for event in RUN_EVENTS},
        },
        "peak_rss_mb": round(sampler.peak_bytes / 2**20, 1),
        "idle_rss_mb": round(sampler.first_bytes / 2**20, 1),
        "rss_samples": sampler.samples,
        "first_paint_s": _spread(s.first_paint_s for s in sessions),
        "health_answer_s": _spread(sampler.health_s),
        "timings_s": {**timings, "total_s": round(time.perf_counter() - started, 1)},
        "server_cpu_s": round(server_cpu_s, 1),
        "browser_cpu_s": round(browser_cpu_s, 1),
        "machine": {"cpus": os.cpu_count(), "load_avg_1m": round(os.getloadavg()[0], 1)},
        "failures": [asdict(s) for s in errored],
        "class": None if link is None else {"board_open": board, **asdict(link)},
    }


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 2)


def _spread(values: Iterable[float | None]) -> dict[str, float | None]:
    """p50 / p95 / max of the values that are not None."""
    known = sorted(v for v in values if v is not None)
    return {
        "p50": _round(percentile(known, 50)),
        "p95": _round(percentile(known, 95)),
        "max": _round(max(known, default=None)),
    }


def _longest_quiet(session: Session) -> float | None:
    if session.clicked_at is None or session.ended_at is None:
        return None
    times = [session.clicked_at, *session.asked_at, session.ended_at]
    return max(b - a for a, b in zip(times, times[1:]))


def _sent_after_start(session: Session, marker: str) -> float | None:
    sent = session.sent_at.get(marker)
    return None if sent is None or session.clicked_at is None else sent - session.clicked_at


def _span(values: list[float]) -> str:
    return f"{min(values):g}-{max(values):g} s" if values else "none"


def _triple(spread: dict[str, float | None], none: str = "none") -> str:
    return none if spread["max"] is None else f"{spread['p50']} s / {spread['p95']} s / {spread['max']} s"


def table(summary: dict) -> str:
    t, p, h = summary["training"], summary["first_paint_s"], summary["health_answer_s"]
    rows = [
        (
            "scenario",
            f"{summary['scenario']} (browsers at nice {summary['browser_nice']}, "
            + (
                f"the server on {summary['server_cpus']} of {summary['cpus']} CPUs and the browsers on the others)"
                if summary["server_cpus"]
                else f"on the server's {summary['cpus']} CPUs)"
            ),
        ),
        ("sessions served without error", f"{summary['served']} / {summary['sessions']}"),
        ("sessions with errors", str(summary["errors"])),
        (
            "training runs finished / refused / lapsed / failed",
            f"{t['completed']} / {t['refused']} / {t['lapsed']} / {t['failed']}",
        ),
        ("Start to training, as sent p50 / p95 / max", _triple(t["start_to_training_sent_s"])),
        ("Start to training, as read on the page", _triple(t["start_to_moving_s"], "no page was read training")),
        ("Start to finished, as sent p50 / p95 / max", _triple(t["start_to_finished_sent_s"])),
        ("Start to finished, as read on the page", _triple(t["start_to_finished_s"])),
        ("training time of the finished runs", _span(t["training_s_of_completed_runs"])),
        *(
            (
                f"Start to run {event} on the server p50 / p95 / max",
                _triple(summary["runs_on_server"][f"start_to_{event}_s"]),
            )
            for event in RUN_EVENTS
        ),
        ("sent / saw their queue place", f"{t['sent_queue_place']} / {t['saw_queue_place']}"),
        ("saw the shared-run line", str(t["saw_shared_line"])),
        ("longest a page asked nothing p50 / p95 / max", _triple(t["longest_quiet_s"])),
        ("... of the lapsed runs' pages", ", ".join(f"{q} s" for q in t["longest_quiet_s_of_lapsed"]) or "none"),
        ("peak server RSS", f"{summary['peak_rss_mb']:.0f} MB (idle {summary['idle_rss_mb']:.0f} MB)"),
        ("time to first paint p50 / p95", f"{p['p50']} s / {p['p95']} s (max {p['max']} s)"),
        ("server health answer p50 / p95", f"{h['p50']} s / {h['p95']} s (max {h['max']} s)"),
        ("server CPU, workers included", f"{summary['server_cpu_s']} s of {summary['timings_s']['total_s']} s"),
        ("browsers' CPU", f"{summary['browser_cpu_s']} s"),
    ]
    if (klass := summary["class"]) is not None:
        last = klass["board_texts"][-1] if klass["board_texts"] else "never drawn"
        board = f"open: last read {last!r}, {len(klass['board_texts'])} changes" if klass["board_open"] else "closed"
        rows += [("teacher's board", board), ("board errors", str(len(klass["board_errors"])))]
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"{name:<{width}}  {value}" for name, value in rows)


def report(summary: dict, table_text: str, path: Path) -> bool:
    """Write the summary to `path` as JSON, print it and its table; whether every session was served without
    error and no run lapsed or failed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))
    print(table_text)
    t = summary["training"]
    return summary["errors"] == 0 and summary["served"] == summary["sessions"] and t["failed"] == t["lapsed"] == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=30, help="browser sessions loading the app at once")
    parser.add_argument("--trainers", type=int, default=30, help="of them, how many press Start within a second")
    parser.add_argument(
        "--scenario", choices=SCENARIOS, default="defaults", help="same settings, a seed each, or a class"
    )
    parser.add_argument("--no-board", dest="board", action="store_false", help="class: leave the teacher's board shut")
    parser.add_argument(
        "--no-warm-up",
        dest="warm_up",
        action="store_false",
        help="skip the one session that loads the app before the others (a cold server)",
    )
    parser.add_argument(
        "--browser-nice", type=int, default=19, help="CPU priority (nice) of the browsers; 0: the server's own"
    )
    parser.add_argument(
        "--server-cpus",
        type=int,
        default=0,
        help="run the server on this many CPUs and the browsers on the others (0: all share every CPU)",
    )
    parser.add_argument("--json", type=Path, default=ARTIFACTS / "load_test.json", help="where to write the summary")
    args = parser.parse_args(argv)
    if not 1 <= args.trainers <= args.sessions:
        parser.error("--trainers must be between 1 and --sessions")
    if args.server_cpus and not 1 <= args.server_cpus < len(os.sched_getaffinity(0)):
        parser.error(f"--server-cpus must leave the browsers at least one of the {len(os.sched_getaffinity(0))} CPUs")
    summary = run(
        args.sessions, args.trainers, args.warm_up, args.scenario, args.browser_nice, args.server_cpus, args.board
    )
    ok = report(summary, table(summary), args.json)
    ok = ok and (summary["class"] is None or not summary["class"]["board_errors"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
