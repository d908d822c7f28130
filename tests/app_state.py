"""Reading what pages keep in an AppTest session's state (pages/state.py): results per model and one-off messages."""

from streamlit.testing.v1 import AppTest

from pages.state import FLASHES, RESULTS, ModelResult


def kept(at: AppTest, name: str) -> ModelResult | None:
    """The result a page keeps under `name` (`per_model`, `keep_result`): (model, key, value), or None."""
    return at.session_state[RESULTS].get(name) if RESULTS in at.session_state else None


def flash_waiting(at: AppTest, place: str) -> bool:
    """Whether a one-off message waits for `place` to show it."""
    return FLASHES in at.session_state and place in at.session_state[FLASHES]
