"""How long finding a class by guessing its code takes, from one network address.

Fills a fresh SQLite database with C classes, then, as one address: times the server CPU of each guessed code within
the address's free misses (`limits.FREE_MISSES`), and the wall time of a burst of B guesses sent at once past them,
each on a thread of its own, as many browser windows would. Prints the CPU per guess, the rate at which answers come
past the free misses, and from it the days one address needs, on average, to find one of MAX_CLASSES classes among
the CODE_COUNT codes. Also times one teacher-key check and a burst of K wrong keys from K windows (the key checks
run one at a time).

    python benchmarks/guess_bench.py [--classes 20] [--burst 10] [--keys 10]
"""

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from transformer.classroom import Caller, ClassroomError, ClassStore  # noqa: E402
from transformer.classroom.codes import CODE_COUNT  # noqa: E402
from transformer.limits import FREE_MISSES, MAX_CLASSES  # noqa: E402


def at_once(jobs: list) -> float:
    """Run every job on a thread of its own, all at once; returns the wall seconds until the last ends."""
    threads = [threading.Thread(target=job) for job in jobs]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - start


def miss(store: ClassStore, code: str, caller: Caller) -> None:
    try:
        store.class_info(code, caller)
    except ClassroomError:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--classes", type=int, default=20)
    parser.add_argument("--burst", type=int, default=10)
    parser.add_argument("--keys", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        store = ClassStore(f"sqlite:///{Path(folder) / 'classes.sqlite3'}")
        codes = [store.create_class(f"Class {i}")[0] for i in range(args.classes)]
        guesser = Caller("203.0.113.9", "guesser")
        free, window_s = FREE_MISSES
        cpu = time.process_time()
        for i in range(free):
            miss(store, f"guess-{i}", guesser)
        cpu_per_guess = (time.process_time() - cpu) / free
        burst = at_once(
            [lambda i=i: miss(store, f"burst-{i}", Caller(guesser.address, f"w{i}")) for i in range(args.burst)]
        )
        per_answer = burst / max(1, args.burst - 1)  # the first past the free ones answers at once
        days = CODE_COUNT / MAX_CLASSES * per_answer / 86_400
        real = at_once([lambda: store.class_info(codes[0], guesser)])
        key_start = time.perf_counter()
        miss_key(store, codes[0], Caller("198.51.100.7", "k"))
        key_check = time.perf_counter() - key_start
        keys = at_once(
            [lambda i=i: miss_key(store, codes[1], Caller(f"198.51.100.{i}", f"k{i}")) for i in range(args.keys)]
        )
        store.close()
    figures = {
        "cpu_ms_per_guess": round(1000 * cpu_per_guess, 2),
        "free_misses": f"{free} per {window_s} s",
        "burst": args.burst,
        "burst_wall_s": round(burst, 2),
        "seconds_per_answer_past_the_free_misses": round(per_answer, 2),
        "days_to_find_one_of_the_classes_from_one_address": round(days, 1),
        "a_right_code_from_that_address_s": round(real, 3),
        "one_key_check_s": round(key_check, 3),
        "wrong_keys_at_once": args.keys,
        "wrong_keys_wall_s": round(keys, 2),
    }
    print(json.dumps(figures, indent=2))


def miss_key(store: ClassStore, code: str, caller: Caller) -> None:
    try:
        store.open_board(code, "wrong", caller)
    except ClassroomError:
        pass


if __name__ == "__main__":
    main()
