"""Download buttons for the tables the pages show."""

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
    """A button in `container` (`st`, a column, ...) that downloads `table` as a CSV file (no index column);
    `options` go to `download_button` (help, icon, on_click, ...). A callable `table` is called when the button is
    clicked, so the file holds the table as it is then rather than when the page was drawn."""
    data = (lambda: table().to_csv(index=False)) if callable(table) else table.to_csv(index=False)
    container.download_button(label, data, file_name, "text/csv", key=key, **options)
