"""Real-browser fixtures: the app served by `streamlit run` on a free local port, Debian's Chromium driven by
Playwright, and a reverse checkpoint to load; and the page helpers only the browser tests use. What the load tests
and benchmarks share with them (the server, Chromium, the waits) is in harness/.
"""

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from playwright.sync_api import expect

from harness.chromium import CHROMIUM, CHROMIUM_ARGS, NO_CHROMIUM, VIEWPORT
from harness.page import ERROR_TEXTS, EXCEPTION, IDLE, PAGES, button, main, wait_idle
from harness.paths import ARTIFACTS, ROOT, SCREENSHOTS
from harness.server import LabServer

VIEWPORTS = {"projector": (1280, 800), "large": (1920, 1080), "phone": (390, 844)}
# Playwright's retrying assertions (`expect`) wait this long, not its default 5 s: Streamlit shows a skeleton in
# place of an element while it mounts the element's component, and on a 2-core machine that also runs the server,
# a training worker and three browser contexts, that has outlasted 5 s.
EXPECT_TIMEOUT_MS = 20_000
# Every name a control has on the page: what a screen reader reads, an empty box shows or a toolbar shows on hover.
NAMES = "el => [...el.querySelectorAll('[aria-label], [placeholder], [data-title]')].flatMap(e => ['aria-label', 'placeholder', 'data-title'].map(a => e.getAttribute(a))).filter(Boolean)"  # noqa: E501
IN_CI = os.environ.get("CI", "").lower() in ("true", "1")  # set by CI services; there a missing browser fails
requires_chromium = pytest.mark.skipif(not CHROMIUM.exists() and not IN_CI, reason=NO_CHROMIUM)


WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]  # axe's tags for WCAG 2.0-2.2, levels A and AA


def wcag_violations(page, rules: Sequence[str] = ()) -> list[str]:
    """axe-core's WCAG 2.2 A/AA violations on the page as it is now, of any impact, one line per rule and element;
    with `rules`, the violations of those of axe's rules instead (its best practices among them)."""
    run_only = {"type": "rule", "values": list(rules)} if rules else {"type": "tag", "values": WCAG_AA}
    results = Axe().run(page, options={"runOnly": run_only, "resultTypes": ["violations"]})
    return [
        f"{rule['id']} ({rule['impact']}): {rule['help']} at {' '.join(map(str, node['target']))}: "
        f"{node.get('failureSummary', '').splitlines()[-1].strip()}"
        for rule in results.response["violations"]
        for node in rule["nodes"]
    ]


def page_errors(page) -> list[str]:
    """Exception elements and traceback text on a Playwright page (empty when the page is clean)."""
    problems = [f"exception element: {text[:500]}" for text in page.locator(EXCEPTION).all_inner_texts()]
    body = page.locator("body").inner_text()
    problems += [f"{marker!r} on the page" for marker in ERROR_TEXTS if marker in body]
    return problems


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


def shown_text(page, text: str):
    """The first element of the page's main area showing `text` (a substring) that is visible: a redraw under load
    may leave a hidden stale copy of an element beside the one shown."""
    return main(page).get_by_text(text).filter(visible=True).first


def choose(page, key: str, option: str, timeout_s: float = 60) -> None:
    """Pick the option whose name contains `option` in the select box with this key. A click that lands while a
    rerun redraws the box opens no list, and a rerun may close an open one (a board's fragment redraws every few
    seconds), so the box is opened again (after Escape) until its option takes the click. Returns once the rerun the
    choice starts has finished: a field typed into while it redraws the form (a task's default run) may lose it."""
    select = page.locator(f".st-key-{key}").filter(visible=True).first
    wanted = page.get_by_role("option", name=option).first
    deadline = time.monotonic() + timeout_s
    while True:
        select.evaluate("e => e.scrollIntoView({block: 'center'})")  # at the viewport's edge its list would not open
        select.click()
        try:
            wanted.wait_for(state="visible", timeout=3_000)
            wanted.click(timeout=3_000)
            wait_idle(page)
            return
        except PlaywrightTimeoutError:
            if time.monotonic() > deadline:
                raise
            page.keyboard.press("Escape")


def open_tab(page, name: str):
    """Open the page's tab named `name`, and wait for the run its click starts (the Teacher page's tabs keep the open
    one in the session); returns the tab."""
    tab = main(page).get_by_role("tab", name=name)
    tab.click()
    expect(tab).to_have_attribute("aria-selected", "true")
    wait_idle(page)
    return tab


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
    page.mouse.move(0, 0)  # off the page's widgets: no tooltip of the last button clicked covers the shot
    height = page.evaluate("() => document.querySelector(\"[data-testid='stMain']\")?.scrollHeight ?? 0")
    page.set_viewport_size({"width": viewport["width"], "height": min(max(height, viewport["height"]), max_height)})
    settle(page)
    page.screenshot(path=str(path), full_page=True)
    page.set_viewport_size(viewport)
    return path


# Each shown table's overflow: how far its columns reach past what it shows (a data grid scrolls sideways), and how
# far its box reaches past the screen.
TABLES = """() => [...document.querySelectorAll("[data-testid='stDataFrame'], [data-testid='stTable']")]
    .filter(t => t.checkVisibility({checkOpacity: true, checkVisibilityCSS: true}))
    .map(t => {
        const scroller = t.querySelector('.dvn-scroller') ?? t.querySelector('table')?.parentElement ?? t;
        return {
            hidden: scroller.scrollWidth - scroller.clientWidth,
            past_screen: t.getBoundingClientRect().right - document.documentElement.clientWidth,
            text: t.innerText.slice(0, 60),
        };
    })"""


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

# The page laid out for its window: no part still loading (a skeleton), the sidebar open on a wide window and slid out
# of view on a narrow one (Streamlit folds it at 768 px and less, and opens it again when the window grows), every
# chart drawn, each shown one as wide as its box, and all of it as it was at the last check, a frame before (a sidebar
# that slides, a chart that redraws, moves it).
LAID_OUT = """() => {
    const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')];
    if (document.querySelector('[data-testid="stSkeleton"]') || !charts.every(c => c.querySelector('.main-svg')))
        return false;
    const width = el => Math.round(el.getBoundingClientRect().width);
    const sidebar = document.querySelector('[data-testid="stSidebar"]');
    const side = sidebar ? sidebar.getBoundingClientRect() : null;  // where it is drawn, while it slides too
    if (side && innerWidth > 768 && side.width <= 200) return false;
    if (side && innerWidth <= 768 && side.right > 0) return false;
    const shown = charts.filter(c => c.checkVisibility()).map(c => [width(c), width(c.querySelector('.main-svg'))]);
    const now = JSON.stringify([innerWidth, side ? [side.left, side.width] : 0, shown]);
    const still = window.lastLayout === now;
    window.lastLayout = now;
    return still && shown.every(([box, drawn]) => Math.abs(box - drawn) <= 1);
}"""

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


def open_more_settings(page) -> None:
    """Open the Train form's expander of model, optimizer, budget and device settings."""
    page.get_by_text("Model, optimizer, budgets and device").click()
    expect(page.locator(".st-key-train_batch input")).to_be_visible()


def open_at(page, server, name: str, language: str) -> None:
    """A page by its address, in `language`, with the shipped reverse model in hand (a fresh session)."""
    page.goto(f"{server.url}/{PAGES[name]}?model=reverse&lang={language}", wait_until="domcontentloaded")
    page.wait_for_selector("[data-testid='stApp'][data-test-script-state='notRunning'] h1", timeout=90_000)
    wait_idle(page)
    page.add_style_tag(content=SHOW_TOOLBARS)
    unfold(page)


def go_to(page, name: str) -> None:
    """Another page through the sidebar, in the session `open_at` began (its model in hand and language stay), with
    every expander open: one script run, where an address reloads the whole app in the browser."""
    navigate(page, name)
    unfold(page)


def unfold(page) -> None:
    """Every expander of the page open, and the charts and tables in them drawn (a part Streamlit is still loading
    shows a skeleton: its words are not there yet)."""
    page.evaluate(OPEN_EXPANDERS)
    settle(page)


def settle(page) -> None:
    """Until the page is laid out for its window (`LAID_OUT`), checked at each frame: after a resize, a scroll or a
    script run, Streamlit's columns and Plotly's charts lay themselves out again."""
    page.evaluate("() => { delete window.lastLayout; }")
    page.wait_for_function(LAID_OUT, polling="raf", timeout=60_000)


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory) -> Iterator[LabServer]:
    """The session's server, its class database in a folder of its own, never the checkout's ./data."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("LAB_DATA_DIR", str(tmp_path_factory.mktemp("browser-classes")))
        server = LabServer(ARTIFACTS / "server-browser-tests.log")
        server.start()  # the server keeps the environment it started with
    yield server
    server.stop()


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
    """Keep each phase's report on the test item, so the `page` fixture knows whether its test failed; a failed test
    that used the session's server shows the server's last lines (its runs and how they ended) in its report."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"report_{report.when}", report)
    server = getattr(item, "funcargs", {}).get("lab_server")
    if report.failed and isinstance(server, LabServer):
        report.sections.append(("server log, last lines", server.log_tail()))


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
