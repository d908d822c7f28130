"""Helpers shared by the tests, by theme: `apptest` (driving pages under AppTest), `models` (models and checkpoint
files), `serving` (runs on a registry), `figures` (decoding steps to draw), `cli` (the command line in this
process); here, what every kind of test uses."""

import ast
import base64
import time
from collections.abc import Callable
from pathlib import Path

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


def widget_calls(method: str) -> list[tuple[str, ast.Call]]:
    """Every call `something.method(...)` in the app's pages and ui/, with its place (`file:line`): what a test checks
    of every widget of a kind."""
    root = Path(__file__).resolve().parents[2]
    return [
        (f"{path.name}:{node.lineno}", node)
        for path in [root / "streamlit_app.py", *(root / "pages").glob("*.py"), *(root / "ui").glob("*.py")]
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == method
    ]


def keyword_name(call: ast.Call, keyword: str) -> str | None:
    """The name `call` passes as `keyword` (`select_all=SELECT_ALL`: "SELECT_ALL"), else None."""
    return next((getattr(k.value, "id", None) for k in call.keywords if k.arg == keyword), None)
