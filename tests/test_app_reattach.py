"""A reload gives the browser its training run back: the browser is known by the secret in Streamlit's XSRF
cookie, which stays the same while its mask changes on every page load."""

import pytest

from pages.common import browser_id

# Two page loads of one browser (captured from a served app): same secret, different masks.
LOAD_1 = "2|09b631db|e304a33f415643afd20950daf738d9b0|1795452523"
LOAD_2 = "2|c65b1213|2ce980f78ebb60671de4731238d5fa78|1795452523"
OTHER_BROWSER = "2|c65b1213|2ce980f78ebb60671de4731238d5fa79|1795452523"


def test_one_browser_one_id_across_reloads():
    assert browser_id(LOAD_1) == browser_id(LOAD_2) is not None
    assert browser_id(OTHER_BROWSER) != browser_id(LOAD_1)
    assert "e304a33f" not in browser_id(LOAD_1) and len(browser_id(LOAD_1)) == 64  # a hash, not the secret


@pytest.mark.parametrize(
    "cookie",
    ["", "garbage", "2|zz|e304|1", "3|09b631db|e304a33f|1", "2|09b6|e304a33f|1", "2|09b631db||1", "2|09b631db", None],
)
def test_anything_else_is_no_id(cookie):
    assert browser_id(cookie) is None
