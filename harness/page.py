"""The app's pages in Playwright: their addresses, when a script run has finished, the widgets a driver reads and
sets (by the keys the pages give them), and how their words contrast with what is behind them."""

from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from harness.server import LabServer

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
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"
BUSY = "[data-testid='stApp']:not([data-test-script-state='notRunning'])"  # a run requested, running or stopping
RUN_START_MS = 300  # how long a click's run may take to start
EXCEPTION = "[data-testid='stException']"
OUTCOME = "[data-testid='stAlertContentSuccess'], [data-testid='stAlertContentInfo']"  # how a run that trained ended
ERROR_TEXTS = ("Traceback", "This app has encountered an error")
# WCAG 2.2's contrast ratio of an element's text with the first opaque background behind it, its colour's alpha and
# every opacity above it blended in (as Streamlit fades a disabled widget's words).
CONTRAST = """el => {
  const rgba = c => {
    const p = c.match(/\\(([^)]*)\\)/)[1].split(",").map(Number);
    return p.length > 3 ? p : [...p, 1];
  };
  let back = null, alpha = 1;
  for (let e = el; e; e = e.parentElement) {
    alpha *= parseFloat(getComputedStyle(e).opacity);
    const c = rgba(getComputedStyle(e).backgroundColor);
    if (back === null && c[3] === 1) back = c;
  }
  back = back || [255, 255, 255, 1];
  const style = getComputedStyle(el), text = rgba(style.webkitTextFillColor || style.color);
  const a = text[3] * alpha, seen = [0, 1, 2].map(i => text[i] * a + back[i] * (1 - a));
  const lum = c => c.map(v => v / 255).map(v => v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4)
    .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
  const [high, low] = [lum(seen), lum(back.slice(0, 3))].sort((x, y) => y - x);
  return (high + 0.05) / (low + 0.05);
}"""


def wait_idle(page, timeout_ms: float = 60_000) -> None:
    """Wait until the app's script run has finished. A run the last click starts is waited for first, up to
    RUN_START_MS, so that the page before it is not taken for its end; where none starts, that is the wait."""
    try:
        page.wait_for_selector(BUSY, timeout=RUN_START_MS)
    except PlaywrightTimeoutError:
        pass  # no run started (or it ran between two checks)
    page.wait_for_selector(IDLE, timeout=timeout_ms)


def main(page):
    """The page's main area (the sidebar repeats some texts, e.g. the training progress)."""
    return page.locator("[data-testid='stMain']")


def button(page, key: str):
    """The visible button of the widget with this key (Streamlit also renders a hidden copy of some buttons)."""
    return page.locator(f".st-key-{key} button").filter(visible=True)


def fill(page, key: str, value: str | int) -> None:
    """Type `value` into the text or number field of the widget with this key, and leave the field (Tab, not Enter:
    Enter would submit its form)."""
    field = page.locator(f".st-key-{key} input")
    field.fill(str(value))
    field.press("Tab")


def text_contrast(locator) -> float:
    """The contrast ratio of the words of the element `locator` finds with what is behind them (`CONTRAST`)."""
    return locator.evaluate(CONTRAST)


def open_train(context, server: LabServer):
    """A new tab of the browser context on the Train page, its first script run finished."""
    tab = context.new_page()
    tab.goto(f"{server.url}/train", wait_until="domcontentloaded")
    tab.wait_for_selector(f"{IDLE} h1", timeout=90_000)
    wait_idle(tab)
    return tab
