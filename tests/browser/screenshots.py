"""The README's screenshots, taken from the real app in Debian's Chromium: the Train page mid-run, and in Simplified
Chinese (drawn in Debian's fonts-noto-cjk) once its run has ended, the Decoding page stepping the shipped reverse
model through an input, and the Compare page showing a shipped experiment.

Run: python tests/browser/screenshots.py   (writes docs/images/train.png, train-zh-CN.png, decoding.png, compare.png)
"""

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: harness
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the browser tests' fixture code
from conftest import navigate, open_page, page_errors, put_reverse_in_hand, wait_for_more_points
from playwright.sync_api import expect, sync_playwright

from harness.chromium import CHROMIUM, CHROMIUM_ARGS, NO_CHROMIUM
from harness.page import button, wait_idle
from harness.paths import ARTIFACTS, ROOT
from harness.server import LabServer

IMAGES = ROOT / "docs" / "images"
VIEWPORT = {"width": 1280, "height": 800}
MAX_BYTES = 300_000  # each picture stays small enough to commit
DECODE_INPUT = "2 7 1 8 2 8"


def scroll_to(page, key: str, block: str = "start", timeout_s: float = 10.0) -> None:
    """Scroll the main area until the widget with this key is at the top (block "start") or bottom ("end") of the
    viewport (again while a rerun redraws the page and moves it)."""
    element = page.locator(f".st-key-{key}").first
    height = page.viewport_size["height"]
    deadline = time.monotonic() + timeout_s
    while True:
        element.evaluate("(el, block) => el.scrollIntoView({block})", block)
        page.wait_for_timeout(500)  # let Plotly finish drawing after the scroll
        box = element.bounding_box()
        if box and box["y"] >= -1 and box["y"] + box["height"] <= height + 1:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"could not scroll {key} into view: its box is {box}")


def save(page, name: str) -> Path:
    """The viewport as docs/images/<name>.png; over MAX_BYTES, re-encoded to 256 colours with Pillow if installed."""
    if problems := page_errors(page):
        raise RuntimeError(f"{name}: the page shows errors: {problems}")
    path = IMAGES / f"{name}.png"
    page.mouse.move(VIEWPORT["width"] - 1, VIEWPORT["height"] - 1)  # no hover effects (Plotly's toolbar) in the shot
    page.wait_for_timeout(300)
    page.screenshot(path=str(path))
    if path.stat().st_size > MAX_BYTES:
        try:
            from PIL import Image
        except ImportError:
            pass
        else:
            with Image.open(path) as image:
                image.convert("RGB").quantize(colors=256).save(path, optimize=True)
    size = path.stat().st_size
    print(f"{path.relative_to(ROOT)}: {size / 1000:.0f} KB")
    if size > MAX_BYTES:
        raise RuntimeError(f"{path} is {size} bytes, over {MAX_BYTES}")
    return path


def train(page, server: LabServer) -> Path:
    """The Train page a few seconds into a run with the default settings, as the student sees it: unscrolled."""
    open_page(page, server, "train")
    button(page, "start_training").click()
    expect(page.locator("[data-testid='stMain']").get_by_text("Training: step")).to_be_visible(timeout=60_000)
    wait_for_more_points(page, "train_loss_chart", 2)
    return save(page, "train")


def train_chinese(page, server: LabServer) -> Path:
    """The Train page in Simplified Chinese (`?lang=zh-CN`) when a run with the default settings has ended: how it
    ended and where to go next above its curves, unscrolled."""
    page.goto(f"{server.url}/train?lang=zh-CN", wait_until="domcontentloaded")
    page.wait_for_selector("[data-testid='stApp'][data-test-script-state='notRunning'] h1", timeout=90_000)
    wait_idle(page)
    button(page, "start_training").click()
    expect(page.locator("[data-testid='stAlertContentSuccess']")).to_be_visible(timeout=120_000)
    wait_idle(page)
    page.locator(".st-key-train_loss_chart .js-plotly-plot").wait_for()
    return save(page, "train-zh-CN")


def decoding(page, server: LabServer) -> Path:
    """The Decoding page with the shipped reverse model in hand, a few tokens into an input."""
    put_reverse_in_hand(page, server, ROOT / "checkpoints" / "reverse.pt")  # the shipped model, from Home
    navigate(page, "decoding")
    field = page.locator(".st-key-decode_input input")
    field.fill(DECODE_INPUT)
    field.press("Enter")
    wait_idle(page)
    for step in (2, 3, 4):
        button(page, "decode_next").click()
        expect(page.get_by_text(f"Step {step} of")).to_be_visible(timeout=30_000)
        wait_idle(page)
    page.locator(".st-key-decode_probs .js-plotly-plot").wait_for()
    scroll_to(page, "decode_strategy")  # strategy, step buttons, probabilities, attention
    return save(page, "decoding")


def compare(page, server: LabServer) -> Path:
    """The Compare page with its first shipped experiment (reverse without positional encoding)."""
    open_page(page, server, "compare")
    wait_for_more_points(page, "compare_curves", 0)
    page.locator(".st-key-compare_heads_0 .js-plotly-plot").wait_for()
    scroll_to(page, "compare_curves")
    return save(page, "compare")


SHOTS = {"train": train, "train-zh-CN": train_chinese, "decoding": decoding, "compare": compare}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "shots", nargs="*", metavar="NAME", help=f"pictures to take, of {', '.join(SHOTS)} (default: all)"
    )
    shots = parser.parse_args().shots or list(SHOTS)
    if unknown := set(shots) - set(SHOTS):
        parser.error(f"no picture named {', '.join(sorted(unknown))}; choose from {', '.join(SHOTS)}")
    if not CHROMIUM.exists():
        sys.exit(NO_CHROMIUM)
    IMAGES.mkdir(parents=True, exist_ok=True)
    with LabServer(ARTIFACTS / "server-screenshots.log") as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        for name in shots:
            context = browser.new_context(viewport=VIEWPORT)  # a fresh session for each picture
            context.set_default_timeout(60_000)
            SHOTS[name](context.new_page(), server)
            context.close()
        browser.close()


if __name__ == "__main__":
    main()
