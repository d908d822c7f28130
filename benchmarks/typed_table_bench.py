"""Server CPU of a paste into the Train page's "Type pairs" table.

Opens the Train page in AppTest and sends N pasted rows as a browser sends them (the editor's edits, serialized, as
its widget state), twice: the paste, then a rerun that sends the same rows again, as a browser does while its table
holds them. Prints the CPU seconds (`time.process_time`) of each run.
`--unbounded` takes out the page's row limit (`ui.streamlit_internals.cut_table_edits`), as before it had one.

    python benchmarks/typed_table_bench.py [--rows 3000] [--unbounded]
"""

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from streamlit.proto.WidgetStates_pb2 import WidgetState  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

import ui.own_task  # noqa: E402


def send_rows(at: AppTest, rows: list[dict]) -> float:
    """One run of the page with `rows` added to its table, sent as a browser sends them; returns its CPU seconds."""
    states = at._tree.get_widget_states()
    edits = {"edited_rows": {}, "added_rows": rows, "deleted_rows": []}
    states.widgets.append(WidgetState(id=at.data_editor[0].proto.id, string_value=json.dumps(edits)))
    start = time.process_time()
    at._run(states)
    assert not at.exception, at.exception
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=3000)
    parser.add_argument("--unbounded", action="store_true")
    args = parser.parse_args()
    if args.unbounded:
        ui.own_task.cut_table_edits = lambda key, rows, most: False
    at = AppTest.from_file(str(ROOT / "streamlit_app.py"), default_timeout=600).run()
    at.switch_page("pages/train.py").run()
    rows = [{"source": f"{i // 100} {i // 10 % 10} {i % 10}", "target": f"{i % 10}"} for i in range(args.rows)]
    paste = send_rows(at, rows)
    again = send_rows(at, rows)
    print(f"{args.rows} rows pasted{' (unbounded)' if args.unbounded else ''}: paste {paste:.2f} s CPU, "
          f"rerun with the same rows {again:.2f} s CPU")  # fmt: skip


if __name__ == "__main__":
    main()
