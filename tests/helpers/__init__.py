"""Helpers shared by the tests, by theme: `apptest` (driving pages under AppTest), `models` (models and checkpoint
files), `serving` (runs on a registry), `figures` (decoding steps to draw), `cli` (the command line in this
process); here, what every kind of test uses."""

import base64
import time
from collections.abc import Callable

import numpy as np


def wait_until(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    """Return once `condition()` is true; AssertionError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def array(value) -> np.ndarray:
    """A figure's data array, decoded from Plotly's typed-array JSON when encoded."""
    if isinstance(value, dict):
        flat = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        return flat.reshape([int(n) for n in value["shape"].split(",")]) if "shape" in value else flat
    return np.asarray(value)
