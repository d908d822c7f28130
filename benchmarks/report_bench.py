"""What a lab report weighs and costs: the Train page's default run and the largest run its form allows, each trained
in this process and its report built as the Train page's download does; then a class of S students, each with one of
those reports kept, built into the Teacher page's one file of every report.

Prints, for each report: its data as the class database keeps it (KB), its HTML file (MB) and what that holds beyond
plotly.js, and the median time to build it; for the class file: its size and build time, with S default-sized and S
largest reports. plotly.js is in every file once.

    python benchmarks/report_bench.py [--students 30] [--repeats 3]
"""

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from plotly.offline import get_plotlyjs  # noqa: E402

from transformer import settings as spec  # noqa: E402
from transformer.classroom import ClassStore  # noqa: E402
from transformer.classroom.recorder import run_state  # noqa: E402
from transformer.classroom.reports import class_reports_html, record_run_report  # noqa: E402
from transformer.i18n import translator  # noqa: E402
from transformer.report import run_report_html  # noqa: E402
from transformer.report_data import gather, to_json  # noqa: E402
from transformer.serving import Run, finished_run  # noqa: E402

MB = 2**20
LARGEST = {  # the Train form's largest model and inputs, trained for its fewest steps
    name: spec.TRAIN_FORM_LIMITS[name][1] for name in ("min_len", "max_len", "d_model", "n_heads", "n_layers", "d_ff")
} | {"batch_size": 8, "steps": spec.TRAIN_FORM_LIMITS["steps"][0]}


def timed(build, repeats: int) -> tuple[object, float]:
    """build()'s result and its median seconds over `repeats` calls."""
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = build()
        times.append(time.perf_counter() - start)
    return result, statistics.median(times)


def one_report(run: Run, repeats: int) -> dict:
    """The report of `run` as the Train page's download builds it (gather, then the HTML in zh-CN)."""
    page, seconds = timed(lambda: run_report_html(gather(run), translator("zh-CN")), repeats)
    size = len(page.encode())
    return {
        "data_kb": round(len(to_json(gather(run))) / 2**10, 1),
        "html_mb": round(size / MB, 2),
        "beyond_plotly_kb": round((size - len(get_plotlyjs().encode())) / 2**10, 1),
        "build_s": round(seconds, 3),
    }


def class_file(run: Run, students: int, repeats: int) -> dict:
    """A class of `students`, each with `run`'s report kept, as the Teacher page's one file."""
    with tempfile.TemporaryDirectory() as folder:
        store = ClassStore(f"sqlite:///{Path(folder) / 'classes.sqlite3'}")
        code, _ = store.create_class("Bench")
        for i in range(students):
            student = store.join(code, f"browser-{i}", f"Student {i}")
            record_run_report(store, student, run)  # what the class recorder writes as the run ends
            store.record_run(student, run_state(run, None))
        page, seconds = timed(lambda: class_reports_html(store, code, translator("zh-CN")), repeats)
        store.close()
    return {"students": students, "html_mb": round(len(page.encode()) / MB, 2), "build_s": round(seconds, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    figures = {"plotly_js_mb": round(len(get_plotlyjs().encode()) / MB, 2)}
    for name, settings in (("default", spec.form_defaults()), ("largest", {**spec.form_defaults(), **LARGEST})):
        with finished_run(**settings) as run:
            figures[name] = one_report(run, args.repeats)
            figures[f"class_of_{name}"] = class_file(run, args.students, 1)
        print(f"{name}: {json.dumps(figures[name])}; class file: {json.dumps(figures[f'class_of_{name}'])}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
