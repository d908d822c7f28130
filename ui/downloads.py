"""Download buttons for the tables the pages show, as CSV files that spreadsheets open with every script intact, and
what every download button does once clicked (`DOWNLOAD_RERUNS`)."""

from collections.abc import Callable
from typing import Any

import pandas as pd

DOWNLOAD_RERUNS = "ignore"  # every download button's on_click: the page stays as it is, never run again for nothing


def csv_download(
    container: Any,
    label: str,
    table: pd.DataFrame | Callable[[], pd.DataFrame],
    file_name: str,
    key: str,
    **options: Any,
) -> None:
    """A button in `container` (`st`, a column, ...) that downloads `table` as a CSV file (`csv_bytes`);
    `options` go to `download_button` (help, icon, ...). A callable `table` is called when the button is clicked,
    so the file holds the table as it is then rather than when the page was drawn. The page is not run again
    (`DOWNLOAD_RERUNS`)."""
    data = (lambda: csv_bytes(table())) if callable(table) else csv_bytes(table)
    container.download_button(label, data, file_name, "text/csv", key=key, on_click=DOWNLOAD_RERUNS, **options)


def csv_bytes(table: pd.DataFrame) -> bytes:
    """`table` as a CSV file (no index column) in UTF-8 with a byte-order mark, which tells Excel the encoding: without
    it, Excel on a Chinese Windows reads names in its own code page."""
    return table.to_csv(index=False).encode("utf-8-sig")
