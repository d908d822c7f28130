"""Times in the browser's time zone (`ui.common.local_time`): the class database's naive UTC times and now, each
named by its offset from UTC."""

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

import ui.common
from ui.common import local_time

STORED = datetime(2026, 11, 28, 10, 0)  # naive: UTC, as the class database keeps it


@pytest.mark.parametrize(
    ("zone", "shown"),
    [
        ("Asia/Shanghai", "2026-11-28 18:00 UTC+8"),
        ("Asia/Kolkata", "2026-11-28 15:30 UTC+5:30"),
        ("America/New_York", "2026-11-28 05:00 UTC−5"),
        ("UTC", "2026-11-28 10:00 UTC"),
    ],
)
def test_a_stored_time_shows_in_the_browsers_zone_named_by_its_offset(monkeypatch, zone, shown):
    monkeypatch.setattr(ui.common, "_browser_zone", lambda: ZoneInfo(zone))
    assert f"{local_time(STORED):%Y-%m-%d %H:%M %Z}" == shown
    assert local_time(STORED.replace(tzinfo=UTC)) == local_time(STORED)  # the same moment, aware or naive


def test_without_a_browser_times_are_utc():
    assert local_time(STORED).utcoffset().total_seconds() == 0 and f"{local_time(STORED):%Z}" == "UTC"
    assert abs(local_time() - datetime.now(UTC)).total_seconds() < 60
