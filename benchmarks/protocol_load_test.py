"""Load test without browsers: N students who speak Streamlit's websocket protocol (harness/protocol_client.py).

Each session opens Home, then Train, as a student's browser does, and every one presses Start in the same tenth of
a second: in the `defaults` scenario all with the Train page's defaults (one run, joined by everyone), in the
`seeds` scenario each with a seed of its own (N distinct runs, most of them queued). With `--task NAME` each first
picks that task in the Train page's task picker, which fills the form with the task's default run: `seeds` then
gives N distinct runs of that default run. A session then polls its run on the page's own fragment timers, as the
browser does, until the run's outcome. In a class the students' laptops draw their pages, not the server: 30
Chromium pages on the server's cores (benchmarks/load_test.py) take most of them, where these 30 clients take a
second or two of CPU in all (printed: the clients' CPU). What a client receives is what a browser receives before
drawing it.

Reports sessions served without error; runs finished, refused, lapsed or failed; from Start to each session's
first message with its queue place, its run training and its run finished, p50 / p95 / max; from Start to each
run's queueing, start and end in the server's log; the longest a session asked the server nothing; peak server
RSS (with its training workers) and CPU, and the clients' own CPU.

    python benchmarks/protocol_load_test.py [--sessions 30] [--scenario defaults|seeds] [--task NAME] [--json FILE]

Prints a JSON summary and a short table; exits 1 if any session errored, or a run lapsed or failed.
"""

import argparse
import asyncio
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository: harness, the task picker's tasks
from load_test import (  # noqa: E402
    BUSY_TEXT,
    DONE_TEXT,
    LAPSED_TEXT,
    MOVING_TEXT,
    QUEUE_TEXT,
    RUN_EVENTS,
    SHARED_TEXT,
    STOPPED_TEXT,
    ServerSampler,
    _spread,
    _triple,
    report,
    runs_on_server,
)
from websockets.exceptions import WebSocketException  # noqa: E402

from harness.paths import ARTIFACTS  # noqa: E402
from harness.protocol_client import StreamlitSession  # noqa: E402
from harness.server import LabServer  # noqa: E402
from transformer.settings import setting  # noqa: E402

SCENARIOS = ("defaults", "seeds")
OPEN_TIMEOUT_S = 180.0  # one session's Home and Train, 30 opening at once
TRAIN_TIMEOUT_S = 600.0  # one run, Start to finished, queue included
START_DELAY_S = 1.0  # from the last session on Train to the clicks
READ_EVERY_S = 0.05  # between two reads of what a session has received (no message is sent)
TASK = setting("task")  # the Train page's task picker: its widget key, the tasks it offers, the page's default
MARKERS = {"queue place": QUEUE_TEXT, "training": MOVING_TEXT, "finished": DONE_TEXT}
OUTCOMES = {DONE_TEXT: "completed", BUSY_TEXT: "refused", LAPSED_TEXT: "lapsed", STOPPED_TEXT: "lapsed"}


@dataclass
class Student:
    index: int
    served: bool = False
    training: str | None = None  # completed, refused, lapsed, failed; None before Start
    trained_steps: int | None = None
    received_s: dict[str, float] = field(default_factory=dict)  # marker -> seconds from Start to its first message
    saw_shared_line: bool = False
    longest_quiet_s: float | None = None
    errors: list[str] = field(default_factory=list)


async def open_train(session: StreamlitSession, student: Student, scenario: str, task: str | None) -> None:
    await session.open("", timeout_s=OPEN_TIMEOUT_S)
    await session.open("train", timeout_s=OPEN_TIMEOUT_S)
    if task is not None:
        await session.choose(TASK.form.key, task, timeout_s=OPEN_TIMEOUT_S)  # its name is how the picker shows it
    if scenario == "seeds":
        session.set("train_seed", 100 + student.index)  # the browser load test's seeds
    student.served = not session.exceptions


async def train(session: StreamlitSession, student: Student, at: float) -> None:
    """Press Start at perf_counter time `at`; note when each marker first arrived (to READ_EVERY_S), until the
    run's outcome."""
    await asyncio.sleep(max(0.0, at - time.perf_counter()))
    clicked = time.perf_counter()
    await session.click("start_training")
    while student.training is None:
        page = "\n".join(session.texts.values())
        now = time.perf_counter() - clicked
        for name, marker in MARKERS.items():
            if marker in page:
                student.received_s.setdefault(name, round(now, 3))
        student.saw_shared_line |= SHARED_TEXT in page
        student.training = next((outcome for text, outcome in OUTCOMES.items() if text in page), None)
        if session.exceptions:
            student.training = "failed"
        elif student.training is None and now > TRAIN_TIMEOUT_S:
            student.training = "failed"
            student.errors.append(f"no outcome {TRAIN_TIMEOUT_S:.0f} s after Start")
        await asyncio.sleep(READ_EVERY_S)
    if found := re.search(r"Finished after (\d+) steps", "\n".join(session.texts.values())):
        student.trained_steps = int(found.group(1))
    asked = [clicked, *(t for t in session.sent_at if t > clicked), time.perf_counter()]
    student.longest_quiet_s = round(max(b - a for a, b in zip(asked, asked[1:])), 2)
    student.errors += session.exceptions


async def student_session(
    url: str, student: Student, scenario: str, task: str | None, ready: asyncio.Barrier, start_at: asyncio.Future
) -> None:
    arrived = False  # every session on Train, or failed to get there, before anyone clicks
    try:
        async with StreamlitSession(url) as session:
            try:
                await open_train(session, student, scenario, task)
            finally:
                arrived = True
                await ready.wait()
            if student.served:
                await train(session, student, await start_at)
    except (OSError, TimeoutError, KeyError, WebSocketException) as err:  # refused, dropped, timed out, no Start
        student.training = student.training or ("failed" if student.served else None)
        student.errors.append(f"{type(err).__name__}: {err}")
    finally:
        if not arrived:
            await ready.wait()


async def drive(url: str, n: int, scenario: str, task: str | None) -> tuple[list[Student], float]:
    async with StreamlitSession(url) as teacher:  # the first run imports torch and the package: before class
        await teacher.open("", timeout_s=OPEN_TIMEOUT_S)
    students, ready, start_at = [Student(i) for i in range(n)], asyncio.Barrier(n + 1), asyncio.Future()
    sessions = [asyncio.create_task(student_session(url, s, scenario, task, ready, start_at)) for s in students]
    await ready.wait()
    start_at.set_result(time.perf_counter() + START_DELAY_S)  # the same moment on both clocks
    start_wall = time.time() + START_DELAY_S
    await asyncio.gather(*sessions)
    return students, start_wall


def run(
    n_sessions: int = 30,
    scenario: str = "seeds",
    log_name: str = "server-protocol-load-test.log",
    task: str | None = None,
) -> dict:
    """Run the load test against a fresh server (its log in ARTIFACTS / `log_name`) and return the summary. With
    `task`, each session picks it in the task picker first; else it trains the page's default task."""
    started = time.perf_counter()
    with (
        LabServer(ARTIFACTS / log_name) as server,
        ServerSampler(server.pid, server.url) as sampler,
    ):
        clients_began = time.process_time()  # this process runs the clients; the server is a child process
        own_began = sampler.own_cpu_s()  # the server's start-up, before any page
        students, start_wall = asyncio.run(drive(server.url, n_sessions, scenario, task))
        clients_cpu_s = time.process_time() - clients_began
        server.check_alive()
        server_cpu_s, own_cpu_s = sampler.cpu_s(), sampler.own_cpu_s() - own_began
        tracebacks = server.log_text().count("Traceback")
        on_server = runs_on_server(server.log_text(), start_wall)
    outcomes = [s.training for s in students]
    return {
        "scenario": scenario,
        "task": task or TASK.default,
        "sessions": n_sessions,
        "served": sum(s.served and not s.errors for s in students),
        "errors": sum(bool(s.errors) for s in students) + (1 if tracebacks else 0),
        "server_log_tracebacks": tracebacks,
        "training": {
            **{o: outcomes.count(o) for o in ("completed", "refused", "lapsed", "failed")},
            "steps_of_completed_runs": [s.trained_steps for s in students if s.training == "completed"],
            "received_queue_place": sum("queue place" in s.received_s for s in students),
            "saw_shared_line": sum(s.saw_shared_line for s in students),
            **{f"start_to_{m.replace(' ', '_')}_s": _spread(s.received_s.get(m) for s in students) for m in MARKERS},
            "start_to_first_chart_point_s": min(
                (s.received_s["training"] for s in students if "training" in s.received_s), default=None
            ),
            "longest_quiet_s": _spread(s.longest_quiet_s for s in students),
        },
        "runs_on_server": {
            "runs": len(on_server),
            **{f"start_to_{event}_s": _spread(run.get(event) for run in on_server) for event in RUN_EVENTS},
        },
        "peak_rss_mb": round(sampler.peak_bytes / 2**20, 1),
        "server_cpu_s": round(server_cpu_s, 1),
        "server_own_cpu_s": round(own_cpu_s, 1),
        "clients_cpu_s": round(clients_cpu_s, 1),
        "total_s": round(time.perf_counter() - started, 1),
        "failures": [asdict(s) for s in students if s.errors],
    }


def table(summary: dict) -> str:
    t, r = summary["training"], summary["runs_on_server"]
    rows = [
        ("scenario", f"{summary['scenario']}, task {summary['task']}, {summary['sessions']} protocol clients"),
        ("sessions served without error", f"{summary['served']} / {summary['sessions']}"),
        (
            "runs finished / refused / lapsed / failed",
            f"{t['completed']} / {t['refused']} / {t['lapsed']} / {t['failed']}",
        ),
        ("Start to queue place received p50 / p95 / max", _triple(t["start_to_queue_place_s"])),
        ("Start to training received", _triple(t["start_to_training_s"])),
        ("Start to the first chart point of any session", f"{t['start_to_first_chart_point_s']} s"),
        ("Start to finished received", _triple(t["start_to_finished_s"])),
        *((f"Start to run {event} on the server", _triple(r[f"start_to_{event}_s"])) for event in RUN_EVENTS),
        ("received their queue place; saw the shared-run line", f"{t['received_queue_place']}; {t['saw_shared_line']}"),
        ("longest a session asked nothing", _triple(t["longest_quiet_s"])),
        ("peak server RSS, workers included", f"{summary['peak_rss_mb']:.0f} MB"),
        ("server CPU, workers included", f"{summary['server_cpu_s']} s of {summary['total_s']} s"),
        ("of which the server process's own, from the first page", f"{summary['server_own_cpu_s']} s"),
        ("the clients' CPU, on the same cores", f"{summary['clients_cpu_s']} s"),
    ]
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"{name:<{width}}  {value}" for name, value in rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=30, help="students pressing Start at once")
    parser.add_argument("--scenario", choices=SCENARIOS, default="seeds", help="the defaults, or a seed each")
    parser.add_argument(
        "--task", choices=TASK.options, metavar="NAME", help=f"pick this task first: {', '.join(TASK.options)}"
    )
    parser.add_argument("--json", type=Path, default=ARTIFACTS / "protocol_load_test.json", help="the summary")
    args = parser.parse_args(argv)
    if not 1 <= args.sessions <= 200:
        parser.error("--sessions must be between 1 and 200")
    summary = run(args.sessions, args.scenario, task=args.task)
    return 0 if report(summary, table(summary), args.json) else 1


if __name__ == "__main__":
    sys.exit(main())
