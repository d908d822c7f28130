"""Debian's Chromium, as Playwright launches it, and the window sizes the lab is driven at.

Never `playwright install`: the browser is /usr/bin/chromium (CI installs it with apt-get).
"""

from pathlib import Path

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
NO_CHROMIUM = f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium)"
VIEWPORT = {"width": 1400, "height": 1000}  # wide enough that the sidebar stays open
LAPTOP = {"width": 1280, "height": 800}
