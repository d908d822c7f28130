"""Download buttons for the tables the pages show, as CSV files that spreadsheets open with every script intact."""

from collections.abc import Callable
from typing import Any

import pandas as pd


def csv_download(
    container: Any,
    label: str,
    table: pd.DataFrame | Callable[[], pd.DataFrame],
    file_name: str,
    key: str,
    **options: Any,
) -> None:
    """A button in `container` (`st`, a column, ...) that downloads `table` as a CSV file (`csv_bytes`);
    `options` go to `download_button` (help, icon, on_click, ...). A callable `table` is called when the button is
    clicked, so the file holds the table as it is then rather than when the page was drawn."""
    data = (lambda: csv_bytes(table())) if callable(table) else csv_bytes(table)
    container.download_button(label, data, file_name, "text/csv", key=key, **options)


def csv_bytes(table: pd.DataFrame) -> bytes:
    """`table` as a CSV file (no index column) in UTF-8 with a byte-order mark, which tells Excel the encoding: without
    it, Excel on a Chinese Windows reads names in its own code page."""
    return table.to_csv(index=False).encode("utf-8-sig")
