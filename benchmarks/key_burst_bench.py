"""What a burst of wrong teacher keys costs the server's memory: N browsers, each from its own network address (so
each key is checked), send a wrong key for one class at the same moment, on N threads as a server's sessions would.
Prints the process's resident memory before and after.

    python benchmarks/key_burst_bench.py [--browsers 40]
"""

import argparse
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from transformer.classroom import Caller, ClassroomError, ClassStore  # noqa: E402


def resident_mb() -> float:
    """This process's resident memory (Linux `VmRSS`), in MB."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) / 1024 for line in status if line.startswith("VmRSS"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--browsers", type=int, default=40)
    n = parser.parse_args().browsers
    store = ClassStore(f"sqlite:///{tempfile.mkdtemp()}/classes.db")
    code, _ = store.create_class("A")
    together = threading.Barrier(n)

    def wrong_key(i: int) -> None:
        together.wait()
        try:
            store.open_board(code, "wrong", Caller(f"203.0.113.{i % 250}", f"browser {i}"))
        except ClassroomError:
            pass

    before = resident_mb()
    with ThreadPoolExecutor(n) as pool:
        list(pool.map(wrong_key, range(n)))
    after = resident_mb()
    print(
        f"{n} wrong keys at once: resident memory {before:.0f} MB before, {after:.0f} MB after (+{after - before:.0f})"
    )


if __name__ == "__main__":
    main()
