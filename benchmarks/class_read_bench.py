"""What one read of a class costs the server when the class trains its own task at its largest.

Makes the largest task file a teacher may give (1 MB of pairs whose sources are as long as a task's may be), gives
it to a class in a fresh SQLite database, then reads the class back R times as a student's Train page does
(`class_info`) and as the board does (`snapshot`), against the same class without a task. Prints the median CPU
seconds (`time.process_time`) of one read of each kind.

    python benchmarks/class_read_bench.py [--reads 20]
"""

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from transformer.classroom import ClassStore  # noqa: E402
from transformer.limits import MAX_SEQ_LEN, MAX_TASK_FILE_BYTES  # noqa: E402
from transformer.task_file import read_task_file  # noqa: E402

SYMBOLS = [chr(c) for c in [*range(48, 58), *range(65, 91), *range(97, 123)]]  # 62 one-character symbols


def largest_task_file() -> bytes:
    """A task file of at most MAX_TASK_FILE_BYTES: distinct sources of MAX_SEQ_LEN symbols, each reversed."""
    lines, size, i = [b"source,target\n"], 15, 0
    while True:
        source = [SYMBOLS[(i * 7 + j * (1 + i % 13)) % len(SYMBOLS)] for j in range(MAX_SEQ_LEN)]
        source[:3] = SYMBOLS[i % 62], SYMBOLS[i // 62 % 62], SYMBOLS[i // 62**2]  # distinct sources
        line = f"{' '.join(source)},{' '.join(reversed(source))}\n".encode()
        if size + len(line) > MAX_TASK_FILE_BYTES:
            return b"".join(lines)
        lines.append(line)
        size += len(line)
        i += 1


def cpu_s(read: Callable[[], object], reads: int) -> float:
    """The median CPU seconds of one call of `read`."""
    times = []
    for _ in range(reads):
        began = time.process_time()
        read()
        times.append(time.process_time() - began)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reads", type=int, default=20)
    args = parser.parse_args(argv)
    data = largest_task_file()
    task = read_task_file(data, "largest.csv")
    with tempfile.TemporaryDirectory() as folder:
        store = ClassStore(f"sqlite:///{folder}/classes.sqlite3")
        plain, _ = store.create_class("no task")
        code, key = store.create_class("own task")
        store.set_task(code, key, task)
        for i in range(30):
            store.join(code, f"browser-{i}", f"student {i}")
            store.join(plain, f"browser-{i}", f"student {i}")
        summary = {
            "file_bytes": len(data),
            "pairs": len(task.train) + len(task.held_out),
            "class_info_s": cpu_s(lambda: store.class_info(code), args.reads),
            "class_info_no_task_s": cpu_s(lambda: store.class_info(plain), args.reads),
            "snapshot_s": cpu_s(lambda: store.snapshot(code, names=True), args.reads),
            "snapshot_no_task_s": cpu_s(lambda: store.snapshot(plain, names=True), args.reads),
        }
        store.close()
    print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in summary.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
