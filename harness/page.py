"""The app's pages in Playwright: their addresses, when a script run has finished, and the widgets a driver reads
and sets (by the keys the pages give them)."""

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
ERROR_TEXTS = ("Traceback", "This app has encountered an error")


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


def open_train(context, server: LabServer):
    """A new tab of the browser context on the Train page, its first script run finished."""
    tab = context.new_page()
    tab.goto(f"{server.url}/train", wait_until="domcontentloaded")
    tab.wait_for_selector(f"{IDLE} h1", timeout=90_000)
    wait_idle(tab)
    return tab
