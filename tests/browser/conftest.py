"""Real-browser fixtures: the app served by `streamlit run` on a free local port, Debian's Chromium driven by
Playwright, and a reverse checkpoint to load. `benchmarks/load_test.py` imports the server code from here.

Never `playwright install`: the browser is /usr/bin/chromium (CI installs it with apt-get).
"""

import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Self

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from playwright.sync_api import expect

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts"
SCREENSHOTS = ARTIFACTS / "screenshots"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]
VIEWPORT = {"width": 1400, "height": 1000}  # wide enough that the sidebar stays open
LAPTOP = {"width": 1280, "height": 800}
VIEWPORTS = {"projector": (1280, 800), "large": (1920, 1080), "phone": (390, 844)}
SETTLE_MS = 400  # after a resize: Streamlit's columns and Plotly's charts lay themselves out again
# Every page of the app and its URL path.
PAGES = {
    "home": "",
    "train": "train",
    "anatomy": "anatomy",
    "masking": "masking",
    "decoding": "decoding",
    "lengths": "lengths",
    "knockout": "knockout",
    "compare": "compare",
    "teacher": "teacher",
    "checkpoints": "checkpoints",
}
# Playwright's retrying assertions (`expect`) wait this long, not its default 5 s: Streamlit shows a skeleton in
# place of an element while it mounts the element's component, and on a 2-core machine that also runs the server,
# a training worker and three browser contexts, that has outlasted 5 s.
EXPECT_TIMEOUT_MS = 20_000
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"
EXCEPTION = "[data-testid='stException']"
ERROR_TEXTS = ("Traceback", "This app has encountered an error")
NO_CHROMIUM = f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium)"
IN_CI = os.environ.get("CI", "").lower() in ("true", "1")  # set by CI services; there a missing browser fails
requires_chromium = pytest.mark.skipif(not CHROMIUM.exists() and not IN_CI, reason=NO_CHROMIUM)


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The served app as deployed: runs train in worker processes (the in-process tests train on threads).
SERVER_ENV = {"PYTHONUNBUFFERED": "1", "LAB_TRAINING_PROCESSES": "1"}


class LabServer:
    """`streamlit run streamlit_app.py` on 127.0.0.1 in a child process, its output in a log file. It inherits
    the environment (e.g. LAB_TRAINING_SLOTS) but for SERVER_ENV; error details are shown in full so a failing
    test says why."""

    def __init__(self, log_path: Path, start_timeout_s: float = 90.0):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        self.start_timeout_s = start_timeout_s
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, exc_type, *exc) -> None:
        self.stop()
        if exc_type is not None:  # a failing test's report then shows what the server did (runs, their ends)
            print(f"server log ({self.log_path.name}), last lines:\n{self.log_tail()}")

    def start(self) -> None:
        """Start the server and wait until /_stcore/health answers ok; RuntimeError with the log if it doesn't."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            "streamlit_app.py",
            "--server.headless",
            "true",
            "--server.port",
            str(self.port),
            "--server.address",
            "127.0.0.1",
            "--browser.gatherUsageStats",
            "false",
            "--server.fileWatcherType",
            "none",
            "--client.showErrorDetails",
            "full",
        ]
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                command, cwd=ROOT, env={**os.environ, **SERVER_ENV}, stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            self.check_alive()
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2) as answer:
                    if answer.read().strip() == b"ok":
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.25)
        self.stop()
        raise RuntimeError(
            f"streamlit did not answer ok on {self.url}/_stcore/health within "
            f"{self.start_timeout_s:.0f} s; log:\n{self.log_tail()}"
        )

    @property
    def pid(self) -> int:
        assert self.process is not None, "server not started"
        return self.process.pid

    def check_alive(self) -> None:
        """RuntimeError with the end of the log if the server process has exited."""
        if self.process is not None and self.process.poll() is not None:
            raise RuntimeError(
                f"the streamlit server exited with status {self.process.returncode}; log "
                f"{self.log_path}:\n{self.log_tail()}"
            )

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_tail(self, n: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-n:])

    def stop(self, timeout_s: float = 10.0) -> None:
        """Terminate the server; kill it if it is still there after `timeout_s`."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout_s)


def page_errors(page) -> list[str]:
    """Exception elements and traceback text on a Playwright page (empty when the page is clean)."""
    problems = [f"exception element: {text[:500]}" for text in page.locator(EXCEPTION).all_inner_texts()]
    body = page.locator("body").inner_text()
    problems += [f"{marker!r} on the page" for marker in ERROR_TEXTS if marker in body]
    return problems


def wait_idle(page, timeout_ms: float = 60_000) -> None:
    """Wait until the app's script run has finished (a short pause first, so a run a click starts is seen)."""
    page.wait_for_timeout(300)
    page.wait_for_selector(IDLE, timeout=timeout_ms)


def open_page(page, server: LabServer, name: str) -> None:
    """Open a page by its URL (a fresh session) and wait for its title."""
    page.goto(f"{server.url}/{PAGES[name]}", wait_until="domcontentloaded")
    page.wait_for_selector(f"{IDLE} h1", timeout=90_000)
    wait_idle(page)


def navigate(page, name: str) -> None:
    """Go to a page through the sidebar navigation (same session, so the model in hand stays)."""
    page.locator(f"[data-testid='stSidebarNav'] a[href$='/{PAGES[name]}']").first.click()
    page.wait_for_url(re.compile(rf"/{PAGES[name]}(\?.*)?$"), timeout=30_000)
    wait_idle(page)


def main(page):
    """The page's main area (the sidebar repeats some texts, e.g. the training progress)."""
    return page.locator("[data-testid='stMain']")


def shown_text(page, text: str):
    """The first element of the page's main area showing `text` (a substring) that is visible: a redraw under load
    may leave a hidden stale copy of an element beside the one shown."""
    return main(page).get_by_text(text).filter(visible=True).first


def button(page, key: str):
    """The visible button of the widget with this key (Streamlit also renders a hidden copy of some buttons)."""
    return page.locator(f".st-key-{key} button").filter(visible=True)


def fill(page, key: str, value: str) -> None:
    """Type `value` into the text or number field of the widget with this key, and leave the field."""
    field = page.locator(f".st-key-{key} input")
    field.fill(value)
    field.press("Tab")


def choose(page, key: str, option: str, timeout_s: float = 60) -> None:
    """Pick the option whose name contains `option` in the select box with this key. A click that lands while a
    rerun redraws the box opens no list, so the box is clicked again (after Escape) until its list shows."""
    select = page.locator(f".st-key-{key}").filter(visible=True).first
    wanted = page.get_by_role("option", name=option).first
    deadline = time.monotonic() + timeout_s
    while True:
        select.evaluate("e => e.scrollIntoView({block: 'center'})")  # at the viewport's edge its list would not open
        select.click()
        try:
            wanted.wait_for(state="visible", timeout=3_000)
            break
        except PlaywrightTimeoutError:
            if time.monotonic() > deadline:
                raise
            page.keyboard.press("Escape")
    wanted.click()


def downloaded(page, key: str) -> tuple[str, bytes]:
    """Click the download button with this key; the file name the browser is given, and the file's bytes."""
    with page.expect_download() as started:
        button(page, key).click()
    return started.value.suggested_filename, Path(started.value.path()).read_bytes()


def screenshot(page, name: str, max_height: int = 8000) -> Path:
    """The whole page as artifacts/screenshots/<name>.png. Streamlit scrolls inside its main block, not the
    document, so the viewport is stretched to the content's height for the shot."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    viewport = page.viewport_size
    height = page.evaluate("() => document.querySelector(\"[data-testid='stMain']\")?.scrollHeight ?? 0")
    page.set_viewport_size({"width": viewport["width"], "height": min(max(height, viewport["height"]), max_height)})
    page.wait_for_timeout(300)  # let charts re-lay out
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size(viewport)
    return path


# Pairs of chart labels (titles, axis titles, tick labels, colour bar labels, annotations) whose boxes overlap by
# more than a third of the smaller one; tick labels of one axis are left to Plotly, which thins or turns them.
LABEL_OVERLAPS = """() => {
    const found = [];
    for (const plot of document.querySelectorAll('.js-plotly-plot')) {
        const labels = [];
        const add = (selector, group) => plot.querySelectorAll(selector).forEach((el, i) => {
            const r = el.getBoundingClientRect();
            if (r.width > 0 && r.height > 0 && el.textContent.trim())
                labels.push({r, group: group === 'each' ? `${selector}${i}` : group, text: el.textContent});
        });
        add('.gtitle', 'each');
        add('.g-xtitle text, .g-x2title text, .g-x3title text', 'each');
        add('.g-ytitle text, .g-y2title text, .g-y3title text', 'each');
        add('.annotation-text', 'each');
        add('.colorbar .cbtitle text', 'colorbar title');
        plot.querySelectorAll('.colorbar').forEach((bar, b) =>
            bar.querySelectorAll('.cbaxis text, .ytick text').forEach(el => {
                const r = el.getBoundingClientRect();
                if (r.width > 0) labels.push({r, group: 'each', text: el.textContent});
            }));
        plot.querySelectorAll('.xaxislayer-above, .yaxislayer-above').forEach((axis, a) =>
            axis.querySelectorAll('text').forEach(el => {
                const r = el.getBoundingClientRect();
                if (r.width > 0) labels.push({r, group: `axis${a}`, text: el.textContent});
            }));
        for (let i = 0; i < labels.length; i++) for (let j = i + 1; j < labels.length; j++) {
            const a = labels[i], b = labels[j];
            if (a.group === b.group && a.group.startsWith('axis')) continue;
            const w = Math.min(a.r.right, b.r.right) - Math.max(a.r.left, b.r.left);
            const h = Math.min(a.r.bottom, b.r.bottom) - Math.max(a.r.top, b.r.top);
            const smaller = Math.min(a.r.width * a.r.height, b.r.width * b.r.height);
            if (w > 0 && h > 0 && w * h > smaller / 3) found.push(`${a.text} / ${b.text}`);
        }
    }
    return found;
}"""

# Toolbars show on hover (a tap on a phone): shown always here, so that where they would sit is measured.
SHOW_TOOLBARS = """[data-testid='stElementToolbar'] { opacity: 1 !important; visibility: visible !important; }
.modebar-container .modebar { opacity: 1 !important; }"""

DRAWN = """() => !document.querySelector('[data-testid="stSkeleton"]') &&
    [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].every(chart => chart.querySelector('.main-svg'))"""

# Opens every folded part of the page (an expander's content is what a student sees after one click).
OPEN_EXPANDERS = """() => document.querySelectorAll('[data-testid="stMain"] details:not([open]) > summary')
    .forEach(summary => summary.click())"""


def put_reverse_in_hand(page, server, checkpoint) -> None:
    """Home's Load button for the shipped reverse model, or the fixture's file uploaded on the Checkpoints page."""
    open_page(page, server, "home")
    if checkpoint == ROOT / "checkpoints" / "reverse.pt":
        button(page, "load_reverse").click()
        expect(main(page).get_by_text("Loaded reverse")).to_be_visible(timeout=30_000)
    else:
        navigate(page, "checkpoints")
        page.locator(".st-key-upload_checkpoint input[type='file']").set_input_files(str(checkpoint))
        expect(main(page).get_by_text("Loaded: the model in hand is now")).to_be_visible(timeout=30_000)
    wait_idle(page)
    expect(page.locator("[data-testid='stSidebar']")).to_contain_text("Model in hand:")
    expect(page.locator("[data-testid='stSidebar']")).to_contain_text("task reverse")


def chart_points(page, key: str) -> int:
    """Points in the first trace of the Plotly chart with this key (0 while there is no chart)."""
    return page.evaluate(
        """key => {
            const plot = document.querySelector(`.st-key-${key} .js-plotly-plot`);
            // _fullData: the traces as drawn, with arrays sent in binary form (numpy, pandas) decoded
            return plot && plot._fullData && plot._fullData.length ? plot._fullData[0].x.length : 0;
        }""",
        key,
    )


def wait_for_more_points(page, key: str, than: int, timeout_s: float = 90.0) -> int:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if (n := chart_points(page, key)) > than:
            return n
        page.wait_for_timeout(250)
    raise AssertionError(f"chart {key} stayed at {than} points for {timeout_s:.0f} s")


def set_number(page, key: str, value: int) -> None:
    """Type into a number input and leave it (Tab, not Enter: Enter would submit its form)."""
    field = page.locator(f".st-key-{key} input")
    field.fill(str(value))
    field.press("Tab")


def open_more_settings(page) -> None:
    """Open the Train form's expander of model, optimizer, budget and device settings."""
    page.get_by_text("Model, optimizer, budgets and device").click()
    expect(page.locator(".st-key-train_batch input")).to_be_visible()


def open_train(context, server: LabServer):
    tab = context.new_page()
    tab.goto(f"{server.url}/train", wait_until="domcontentloaded")
    tab.wait_for_selector(f"{IDLE} h1", timeout=90_000)
    wait_idle(tab)
    return tab


def open_at(page, server, name: str, language: str) -> None:
    """A page by its address, in `language`, with the shipped reverse model in hand (a fresh session)."""
    page.goto(f"{server.url}/{PAGES[name]}?model=reverse&lang={language}", wait_until="domcontentloaded")
    page.wait_for_selector("[data-testid='stApp'][data-test-script-state='notRunning'] h1", timeout=90_000)
    wait_idle(page)
    page.add_style_tag(content=SHOW_TOOLBARS)
    unfold(page)


def unfold(page) -> None:
    """Every expander of the page open, and the charts and tables in them drawn (a part Streamlit is still loading
    shows a skeleton: its words are not there yet)."""
    page.evaluate(OPEN_EXPANDERS)
    page.wait_for_function(DRAWN, timeout=60_000)
    page.wait_for_timeout(SETTLE_MS)


@pytest.fixture(scope="session")
def lab_server() -> Iterator[LabServer]:
    with LabServer(ARTIFACTS / "server-browser-tests.log") as server:
        yield server


@pytest.fixture(scope="session")
def browser():
    if not CHROMIUM.exists():  # in CI a skip would pass a run in which no browser test ran
        (pytest.fail if IN_CI else pytest.skip)(NO_CHROMIUM)
    from playwright.sync_api import sync_playwright

    expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Keep each phase's report on the test item, so the `page` fixture knows whether its test failed."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"report_{report.when}", report)


@pytest.fixture
def page(request, browser, lab_server: LabServer):
    """A fresh browser context and page (a screenshot failed-<test>.png if the test fails); on teardown the server
    must still be up with no new traceback logged."""
    log_start = len(lab_server.log_text())
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(30_000)
    tab = context.new_page()
    yield tab
    if getattr(request.node, "report_call", None) is not None and request.node.report_call.failed:
        screenshot(tab, f"failed-{request.node.name}")
    context.close()
    lab_server.check_alive()
    new_log = lab_server.log_text()[log_start:]
    assert "Traceback" not in new_log, f"the server logged a traceback:\n{new_log[-3000:]}"


@pytest.fixture
def new_context(browser):
    """`browser.new_context` for one test: every context it opens is closed when the test ends, passed or failed, so
    no page of a test goes on polling the server (or a server gone) under the tests after it."""
    opened = []

    def new(**options):
        opened.append(browser.new_context(**options))
        return opened[-1]

    yield new
    for context in opened:
        context.close()  # a second close, after the test's own, does nothing


@pytest.fixture
def projector_page(new_context):
    """A page of its own at a classroom projector's size, its actions waiting up to 30 s (a walk of every page)."""
    context = new_context(viewport=dict(zip(("width", "height"), VIEWPORTS["projector"])))
    context.set_default_timeout(30_000)
    return context.new_page()


@pytest.fixture(scope="session")
def reverse_checkpoint(tmp_path_factory) -> Path:
    """The shipped checkpoints/reverse.pt, or a tiny reverse model trained now with the package's CLI."""
    shipped = ROOT / "checkpoints" / "reverse.pt"
    if shipped.exists():
        return shipped
    out = tmp_path_factory.mktemp("checkpoints") / "reverse.pt"
    command = [
        sys.executable,
        "-m",
        "transformer",
        "train",
        "--task",
        "reverse",
        "--min-len",
        "4",
        "--max-len",
        "4",
        "--time-budget",
        "240",
        "--out",
        str(out),
    ]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0 and out.exists(), f"training the fixture checkpoint failed:\n{done.stderr[-3000:]}"
    return out
