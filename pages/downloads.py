"""Download buttons for the tables the pages show."""

from typing import Any

import pandas as pd


def csv_download(container: Any, label: str, table: pd.DataFrame, file_name: str, key: str, **options: Any) -> None:
    """A button in `container` (`st`, a column, ...) that downloads `table` as a CSV file (no index column);
    `options` go to `download_button` (help, icon, ...)."""
    container.download_button(label, table.to_csv(index=False), file_name, "text/csv", key=key, **options)
