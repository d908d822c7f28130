"""What one redraw of a teacher's board costs the server, for a full class.

Fills a class in a fresh SQLite database with S students in two groups, each run recorded at 400 metric rows (the
most a run keeps), then times what the board's fragment does on every redraw: read the class back (`snapshot`),
build the student table, the group curves and the outcome table, the flags and the tally, and the two figures.
Also times one recorder round writing every student's run (what the class's training costs the database every
2 s). Prints the median and max of R redraws, in ms of one core.

    python benchmarks/board_bench.py [--students 30] [--redraws 20]
"""

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from transformer.classroom import Assignment, ClassStore, Group, RunState  # noqa: E402
from transformer.classroom.board import (  # noqa: E402
    difference_sentence,
    flags,
    group_curves,
    outcome_table,
    prediction_tally,
    student_rows,
)
from transformer.figures.board import group_curves_figure, outcomes_figure  # noqa: E402
from transformer.limits import MAX_RUN_ROWS  # noqa: E402

GROUPS = Assignment({"task": "reverse"}, frozenset(), "positional", (Group("PE", "sinusoidal"), Group("no PE", "none")))


def rows(seed: int, n: int = MAX_RUN_ROWS) -> tuple[dict, ...]:
    """n metric rows of a made-up run whose loss falls."""
    return tuple(
        {
            "step": 5 * (i + 1),
            "train_loss": 2.5 / (1 + i * (1 + seed % 3) / 50),
            "val_loss": 2.6 / (1 + i / 50),
            "token_acc": min(1.0, i / n + 0.1),
            "exact_match": min(1.0, i / n),
            "lr": 0.005,
            "tokens_per_s": 40_000.0,
            "elapsed_s": i * 0.05,
        }
        for i in range(n)
    )


def redraw(store: ClassStore, code: str) -> None:
    """What the board's fragment computes on one redraw."""
    snapshot = store.snapshot(code, names=True)
    student_rows(snapshot)
    difference_sentence(snapshot)
    group_curves_figure(group_curves(snapshot), "Training loss by group").to_json()
    outcomes_figure(outcome_table(snapshot), list(group_curves(snapshot))).to_json()
    flags(snapshot)
    prediction_tally(snapshot)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--redraws", type=int, default=20)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        store = ClassStore(f"sqlite:///{folder}/classes.sqlite3")
        code, key = store.create_class("bench")
        store.set_assignment(code, key, GROUPS)
        students = [store.join(code, f"browser-{i}", f"student {i}") for i in range(args.students)]
        result = {"steps": 2000, "seconds": 3.0, "exact_match": 1.0, "token_acc": 1.0, "reason": "solved"}
        states = [RunState("finished", 2000, None, rows(s.seed), result) for s in students]
        began = time.perf_counter()
        for student, state in zip(students, states):
            store.record_run(student, state)
        record_ms = 1000 * (time.perf_counter() - began)
        times = []
        for _ in range(args.redraws):
            began = time.perf_counter()
            redraw(store, code)
            times.append(1000 * (time.perf_counter() - began))
        store.close()
    summary = {
        "students": args.students,
        "rows_per_run": MAX_RUN_ROWS,
        "redraw_ms_median": round(statistics.median(times), 1),
        "redraw_ms_max": round(max(times), 1),
        "record_round_ms": round(record_ms, 1),
    }
    print(json.dumps(summary))
    print(
        f"board redraw, {args.students} students x {MAX_RUN_ROWS} rows: median {summary['redraw_ms_median']} ms, "
        f"max {summary['redraw_ms_max']} ms; one recorder round writing every run: {summary['record_round_ms']} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
