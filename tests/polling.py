"""Waiting on a background thread in tests: poll a condition until a deadline, never a bare sleep."""

import time
from collections.abc import Callable


def wait_until(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    """Return once `condition()` is true; AssertionError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)
