"""App benchmark: training speed inside the app against the same run outside it, and the server time of a page
switch and of a decoding step with a trained model in hand. Run: python tests/app_bench.py

Both training runs use the app's thread setting (LAB_TORCH_THREADS, default 1) and the same settings; the app run
is polled the way the Train page polls it (a rerun every LIVE_POLL_S, here of the whole page, which costs more
than the page's own fragment), so the figure includes that cost.
"""

import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

import torch
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from apptest_frame import in_navigation_mode  # noqa: E402
from streamlit.runtime.pages_manager import PagesManager  # noqa: E402

from transformer import load_checkpoint  # noqa: E402
from transformer.live import build_configs  # noqa: E402
from transformer.training import Trainer  # noqa: E402

PagesManager.__init__ = in_navigation_mode(PagesManager.__init__)  # pages run in the app's frame, as when served
THREADS = int(os.environ.get("LAB_TORCH_THREADS", "1"))
DATA = dict(task="reverse", min_len=10, max_len=10, n_symbols=10, seed=0)
MODEL = dict(
    d_model=32,
    n_heads=4,
    n_layers=1,
    d_ff=128,
    dropout=0.0,
    positional="sinusoidal",
    norm_first=False,
    causal_mask=True,
    scale_scores=True,
)
TRAIN = dict(
    steps=600,
    time_budget_s=120.0,
    batch_size=128,
    lr=5e-3,
    warmup=100,
    schedule="noam",
    label_smoothing=0.0,
    seed=0,
    device="cpu",
    early_stop=False,
)


def outside_app() -> float:
    """Steps per second of the run through the package directly."""
    trainer = Trainer(*build_configs(DATA, MODEL, TRAIN))
    start = time.perf_counter()
    result = trainer.run()
    return result.steps / (time.perf_counter() - start)


def inside_app() -> float:
    """Steps per second of the same run as a TrainingJob polled by Train page reruns."""
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
    at.run()
    at.switch_page("pages/train.py").run()
    while any(thread.name == "warm-up" for thread in threading.enumerate()):  # the server's start-up, not the run
        time.sleep(0.1)
    from pages.common import JOB_IDLE_TIMEOUT_S, LIVE_POLL_S
    from transformer.training import TrainingJob

    job = TrainingJob(*build_configs(DATA, MODEL, TRAIN), idle_timeout_s=JOB_IDLE_TIMEOUT_S).start()
    at.session_state["job"] = job
    start = time.perf_counter()
    while job.running:
        at.run()  # what the page's live view does, twice a second
        time.sleep(LIVE_POLL_S)
    return job.result.steps / (time.perf_counter() - start)


def server_times() -> dict:
    """Median server time of page switches and of decoding steps, with the shipped reverse model in hand."""
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
    at.run()
    at.session_state["in_hand"] = load_checkpoint(ROOT / "checkpoints" / "reverse.pt")
    at.session_state["in_hand_name"] = "shipped: reverse"
    pages = ["pages/anatomy.py", "pages/masking.py", "pages/decoding.py", "pages/checkpoints.py", "pages/train.py"]
    switches, steps = [], []
    for _ in range(3):
        for page in pages:
            t = time.perf_counter()
            at.switch_page(page).run()
            switches.append(time.perf_counter() - t)
    at.switch_page("pages/decoding.py").run()
    for _ in range(8):
        t = time.perf_counter()
        at.button(key="decode_next").click().run()
        steps.append(time.perf_counter() - t)
        if at.exception:
            raise RuntimeError(at.exception[0].message)
    return {
        "page_switch_ms_median": 1000 * statistics.median(switches),
        "page_switch_ms_max": 1000 * max(switches),
        "decode_step_ms_median": 1000 * statistics.median(steps),
        "decode_step_ms_max": 1000 * max(steps),
    }


if __name__ == "__main__":
    torch.set_num_threads(THREADS)
    outside = outside_app()
    inside = inside_app()
    figures = {
        "threads": THREADS,
        "cli_steps_per_s": outside,
        "app_steps_per_s": inside,
        "app_over_cli": inside / outside,
        **server_times(),
    }
    print(
        f"training steps/s: outside the app {outside:.1f}, inside the app {inside:.1f} "
        f"({inside / outside:.0%}; target >= 85%)"
    )
    print(
        f"page switch: median {figures['page_switch_ms_median']:.0f} ms, max {figures['page_switch_ms_max']:.0f} ms; "
        f"decoding step: median {figures['decode_step_ms_median']:.0f} ms, max {figures['decode_step_ms_max']:.0f} ms "
        "(AppTest server time; target < 200 ms)"
    )
    print(json.dumps(figures))
