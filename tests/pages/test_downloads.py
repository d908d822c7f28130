"""Every CSV file a page offers is UTF-8 with a byte-order mark, so that Excel on a Chinese Windows reads the
students' names; its columns are the table's, and a table given as a function is read at the click."""

import csv
import io

import pandas as pd

from tests.helpers import keyword_name, widget_calls
from ui.downloads import DOWNLOAD_RERUNS, csv_download

TABLE = pd.DataFrame({"name": ["张伟", "Ada"], "state": ["finished", "训练中"], "steps": [30, 12]})


class Container:
    """What a page's column records of a download button: its data, as the button hands it over."""

    def download_button(self, label, data, file_name, mime, **options) -> None:
        self.data, self.mime = data, mime


def downloaded(table) -> bytes:
    container = Container()
    csv_download(container, "Download", table, "table.csv", "download")
    assert container.mime == "text/csv"
    return container.data() if callable(container.data) else container.data


def test_a_csv_file_starts_with_a_byte_order_mark_and_reads_back_its_chinese_names():
    for table in (TABLE, lambda: TABLE):
        data = downloaded(table)
        assert data.startswith(b"\xef\xbb\xbf") and not data.startswith(b"\xef\xbb\xbf" * 2)
        pd.testing.assert_frame_equal(pd.read_csv(io.BytesIO(data), encoding="utf-8-sig"), TABLE)
        rows = list(csv.DictReader(io.StringIO(data.decode("utf-8-sig"))))
        assert list(rows[0]) == ["name", "state", "steps"] and rows[0]["name"] == "张伟"


def test_no_download_runs_its_page_again():
    calls = widget_calls("download_button")
    assert len(calls) >= 6  # CSV files, checkpoints, an experiment, reports
    assert [place for place, call in calls if keyword_name(call, "on_click") != "DOWNLOAD_RERUNS"] == []
    assert DOWNLOAD_RERUNS == "ignore"
