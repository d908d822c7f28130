"""App benchmark: training speed inside the app against the same run outside it, the server time of a page switch
and of a decoding step with a trained model in hand, and Home's first paint against a bare one-line page's.
Run: python benchmarks/app_bench.py (everything) or python benchmarks/app_bench.py first-paint (the first paint alone).

Every training run uses the app's thread setting (LAB_TORCH_THREADS, default 1). Two measurements of the in-app
speed, each against the same run outside the app:
- AppTest: a run of the app's registry polled by reruns of the whole Train page every LIVE_POLL_S. A served page's
  poll reruns only its live view, so this costs the run more than a student's page does: a bound from below.
- Served (when Debian's Chromium is installed): `streamlit run` in a child process (its runs train in a worker
  process) and the Train page in Chromium at 1280x800, held at CPU priority nice 19 (it stands in for the
  student's laptop; see `load_test.Renicer`), started with the page's defaults
  (seed 11, inputs up to 12 long: a run of about 1,000 steps). The page's "Finished after N steps in S s" against
  the same settings trained outside the app; both train the same steps, so their seconds compare.

The Train page's default run (with Chromium; `python benchmarks/app_bench.py default-run [SEEDS...]`): the page's
defaults but the seed (0, 1, 2) started in Chromium (held at nice 19, as above), on a served app whose workers are
processes, each run's
"Finished after N steps in S s" over one `nn.Transformer` training step (`python -m transformer bench`'s reference,
timed in this process between the runs: its median), and the CPU seconds each process spent while the run trained
(the worker, the server, Chromium), which say what took the cores from the run whatever the machine's load.

First paint (with Chromium): rounds of two freshly started servers, one serving the app and one a bare page of one
`st.title`, each opened at once in Chromium (cold: the server's first script run), then again in a new browser
context once the first has finished (warm). A page's first paint is when its first heading enters the page, timed
in the page from the start of navigation. The ratios of the medians, Home over the bare page, are what compare: the
two are timed in the same minutes on the same machine.
"""

import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import torch
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.chromium import CHROMIUM, CHROMIUM_ARGS, LAPTOP  # noqa: E402
from harness.page import IDLE, button, fill, main, open_train, wait_idle  # noqa: E402
from harness.paths import ARTIFACTS  # noqa: E402
from harness.server import LabServer  # noqa: E402
from transformer import load_checkpoint  # noqa: E402
from transformer.run_configs import run_configs  # noqa: E402
from transformer.training import Trainer  # noqa: E402
from ui.streamlit_internals import navigation_mode_patch  # noqa: E402

setattr(*navigation_mode_patch())  # pages run in the app's frame, as when served
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
    trainer = Trainer(*run_configs({**DATA, **MODEL, **TRAIN}))
    start = time.perf_counter()
    result = trainer.run()
    return result.steps / (time.perf_counter() - start)


def inside_app() -> float:
    """Steps per second of the same run, trained by the app's registry, polled by Train page reruns."""
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=60)
    at.run()
    at.switch_page("pages/train.py").run()
    while any(thread.name == "warm-up" for thread in threading.enumerate()):  # the server's start-up, not the run
        time.sleep(0.1)
    from ui.common import LIVE_POLL_S, run_registry

    job = run_registry().submit("bench", *run_configs({**DATA, **MODEL, **TRAIN}))
    at.session_state["run"] = job
    start = time.perf_counter()
    while not job.done:
        at.run()  # what the page's live view does, twice a second
        time.sleep(LIVE_POLL_S)
    return job.result.steps / (time.perf_counter() - start)


def served() -> dict | None:
    """The Train page's defaults (seed 11, inputs up to 12 long) outside the app and in a served app watched by
    Chromium: steps and training seconds of each. None without Chromium."""
    from load_test import Renicer
    from playwright.sync_api import expect, sync_playwright
    from throughput_bench import DATA as PAGE_DATA
    from throughput_bench import MODEL as PAGE_MODEL
    from throughput_bench import TRAIN as PAGE_TRAIN

    if not CHROMIUM.exists():
        return None
    seed, max_len = 11, 12
    alone = Trainer(*run_configs({**PAGE_DATA, **PAGE_MODEL, **PAGE_TRAIN, "seed": seed, "max_len": max_len})).run()
    with (
        LabServer(ARTIFACTS / "server-app-bench.log") as server,
        Renicer(server.pid, 19),  # the browser at the lowest priority; the server at its own
        sync_playwright() as playwright,
    ):
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        page = open_train(browser.new_context(viewport=LAPTOP), server)
        fill(page, "train_seed", seed)
        fill(page, "train_max_len", max_len)
        wait_idle(page)
        button(page, "start_training").click()
        finished = main(page).get_by_text("Finished after")
        expect(finished).to_be_visible(timeout=300_000)
        steps, seconds = re.search(r"Finished after (\d+) steps in ([\d.]+) s", finished.inner_text()).groups()
        browser.close()
    return {
        "served_steps": int(steps),
        "served_s": float(seconds),
        "alone_steps": alone.steps,
        "alone_s": alone.seconds,
        "served_over_alone": (int(steps) / float(seconds)) / (alone.steps / alone.seconds),
    }


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


def cpu_by_kind(server_pid: int) -> dict[str, float]:
    """CPU seconds spent so far by the server's training workers, by the server itself, and by this process's other
    descendants (Chromium and Playwright's driver)."""
    from load_test import _cpu_s, _descendants

    workers = set(_descendants(server_pid))
    others = set(_descendants(os.getpid())) - workers - {server_pid}
    return {
        "worker": sum(map(_cpu_s, workers)),
        "server": _cpu_s(server_pid),
        "chromium": sum(map(_cpu_s, others)),
    }


def default_run(seeds: list[int]) -> dict | None:
    """The Train page's default run for each of `seeds`, started in Chromium on a served app: its steps, the
    seconds the page reports, those in `nn.Transformer` training steps timed here between the runs, and the CPU
    seconds of the worker, the server and Chromium from the click on Start to "Finished". None without Chromium."""
    from load_test import Renicer
    from playwright.sync_api import expect, sync_playwright

    from transformer.bench import STEP_TIME_CONFIG, ReferenceTransformer, _step_batches, _step_fn, _timed_ms

    if not CHROMIUM.exists():
        return None
    cpu = torch.device("cpu")
    step, batches = _step_fn(ReferenceTransformer(STEP_TIME_CONFIG)), _step_batches(cpu, padded=False)
    runs, reference_ms = [], _timed_ms(step, batches, 5, 10)
    with (
        LabServer(ARTIFACTS / "server-default-run.log") as server,
        Renicer(server.pid, 19),  # the browser stands in for the student's laptop, as in `served`
        sync_playwright() as playwright,
    ):
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        first = browser.new_page()  # the server's first script run, outside every timing
        first.goto(f"{server.url}/train", wait_until="domcontentloaded")
        first.wait_for_selector(f"{IDLE} h1", timeout=600_000)
        first.close()
        for seed in seeds:
            page = open_train(browser.new_context(viewport=LAPTOP), server)
            fill(page, "train_seed", seed)
            wait_idle(page)
            before = cpu_by_kind(server.pid)
            button(page, "start_training").click()
            finished = main(page).get_by_text("Finished after")
            expect(finished).to_be_visible(timeout=300_000)
            after = cpu_by_kind(server.pid)
            steps, seconds = re.search(r"Finished after (\d+) steps in ([\d.]+) s", finished.inner_text()).groups()
            page.context.close()
            reference_ms += _timed_ms(step, batches, 2, 10)
            cpu_spent = {f"{kind}_cpu_s": round(after[kind] - before[kind], 2) for kind in after}
            runs.append({"seed": seed, "steps": int(steps), "seconds": float(seconds), **cpu_spent})
        browser.close()
    reference = statistics.median(reference_ms)
    for run in runs:
        run["reference_steps"] = round(1000 * run["seconds"] / reference, 1)
    median = statistics.median(run["reference_steps"] for run in runs)
    return {"runs": runs, "reference_step_ms": reference, "median_reference_steps": median}


BARE_PAGE = 'import streamlit as st\n\nst.title("Transformer Lab")\n'
FIRST_PAINT_ROUNDS = 3
FIRST_HEADING = """new MutationObserver((_, observer) => {
    if (document.querySelector("[data-testid='stMain'] h1")) {
        window.firstPaint = performance.now() / 1000;
        observer.disconnect();
    }
}).observe(document, {subtree: true, childList: true});"""


def first_paint_s(browser, url: str) -> float:
    """Seconds from the start of navigation to `url`, in a new browser context, to its first heading; waits until
    the page's script run has finished, so that what it set up is there for the next visit."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.add_init_script(FIRST_HEADING)
    page = context.new_page()
    page.goto(url, wait_until="commit")
    page.wait_for_function("() => window.firstPaint !== undefined", timeout=120_000)
    seconds = page.evaluate("() => window.firstPaint")
    wait_idle(page, timeout_ms=120_000)
    context.close()
    return seconds


def cold_and_warm(browser, server_of) -> tuple[float, float]:
    """First paint on a freshly started server (`server_of()`, a LabServer not yet started), then on the same server
    once warm."""
    with server_of() as server:
        return first_paint_s(browser, server.url), first_paint_s(browser, server.url)


def first_paint() -> dict | None:
    """Median cold and warm first paints of Home and of a bare page, and their ratios; None without Chromium."""
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.exists():
        return None
    bare = Path(tempfile.mkdtemp(prefix="bare-page-"))
    (bare / "streamlit_app.py").write_text(BARE_PAGE)
    shutil.copytree(ROOT / ".streamlit", bare / ".streamlit")  # the app's theme and settings, for both

    def bare_server() -> LabServer:
        return LabServer(ARTIFACTS / "server-bare-page.log", app_dir=bare)

    def app_server() -> LabServer:
        return LabServer(ARTIFACTS / "server-first-paint.log")

    times = {"home": ([], []), "bare": ([], [])}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        for _ in range(FIRST_PAINT_ROUNDS):  # interleaved: a change in the machine's load touches both alike
            for name, server_of in (("bare", bare_server), ("home", app_server)):
                cold, warm = cold_and_warm(browser, server_of)
                times[name][0].append(cold)
                times[name][1].append(warm)
        browser.close()
    shutil.rmtree(bare)
    medians = {
        f"{name}_{kind}_s": statistics.median(times[name][i])
        for name in times
        for i, kind in enumerate(["cold", "warm"])
    }
    return {
        **medians,
        "first_paints_s": times,
        "cold_ratio": medians["home_cold_s"] / medians["bare_cold_s"],
        "warm_ratio": medians["home_warm_s"] / medians["bare_warm_s"],
    }


def print_first_paint(figures: dict) -> None:
    print(
        f"first paint, median of {FIRST_PAINT_ROUNDS} fresh servers: Home {figures['home_cold_s']:.2f} s cold, "
        f"{figures['home_warm_s']:.2f} s warm; a bare page {figures['bare_cold_s']:.2f} s cold, "
        f"{figures['bare_warm_s']:.2f} s warm; Home over the bare page {figures['cold_ratio']:.2f} cold "
        f"(target <= 1.5) and {figures['warm_ratio']:.2f} warm"
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["default-run"]:
        torch.set_num_threads(THREADS)
        figures = default_run([int(seed) for seed in sys.argv[2:]] or [0, 1, 2])
        if figures is None:
            sys.exit(f"the default run needs Chromium at {Path('/usr/bin/chromium')}")
        for run in figures["runs"]:
            print(
                f"seed {run['seed']}: {run['steps']} steps in {run['seconds']:.1f} s, {run['reference_steps']} "
                f"nn.Transformer steps; CPU while it trained: worker {run['worker_cpu_s']} s, server "
                f"{run['server_cpu_s']} s, Chromium {run['chromium_cpu_s']} s"
            )
        print(
            f"median {figures['median_reference_steps']} nn.Transformer steps of {figures['reference_step_ms']:.1f} "
            "ms (target <= 7)"
        )
        print(json.dumps(figures))
        sys.exit()
    if sys.argv[1:] == ["first-paint"]:
        paints = first_paint()
        if paints is None:
            sys.exit(f"first paint needs Chromium at {Path('/usr/bin/chromium')}")
        print_first_paint(paints)
        print(json.dumps(paints))
        sys.exit()
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
    if paints := first_paint():
        figures |= paints
    if in_browser := served():  # last: it lowers this process's CPU priority
        figures |= in_browser
    print(
        f"training steps/s: outside the app {outside:.1f}, polled by whole-page AppTest reruns {inside:.1f} "
        f"({inside / outside:.0%}; target >= 85%)"
    )
    print(
        f"page switch: median {figures['page_switch_ms_median']:.0f} ms, max {figures['page_switch_ms_max']:.0f} ms; "
        f"decoding step: median {figures['decode_step_ms_median']:.0f} ms, max {figures['decode_step_ms_max']:.0f} ms "
        "(AppTest server time; target < 200 ms)"
    )
    if paints:
        print_first_paint(paints)
    if in_browser:
        print(
            f"served app, watched by Chromium: {in_browser['served_steps']} steps in {in_browser['served_s']:.1f} s; "
            f"outside the app {in_browser['alone_steps']} steps in {in_browser['alone_s']:.1f} s "
            f"({in_browser['served_over_alone']:.0%} of the speed outside; target >= 85%)"
        )
        if in_browser["served_steps"] != in_browser["alone_steps"]:
            print("the two runs trained different steps: the page's defaults and this script's differ")
    print(json.dumps(figures))
