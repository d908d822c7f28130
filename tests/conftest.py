"""Shared test set-up."""

import os

import pytest
from hypothesis import settings

from pages.streamlit_internals import navigation_mode_patch


@pytest.fixture(autouse=True)
def navigation_mode(monkeypatch):
    """AppTest runs pages inside the app's frame (see `navigation_mode_patch`), and trains on threads of the test
    process (tests/test_workers.py and the browser tests cover worker processes)."""
    monkeypatch.setattr(*navigation_mode_patch())
    monkeypatch.setenv("LAB_TRAINING_PROCESSES", "0")


# Hypothesis: a bounded number of examples per property in CI ("ci", the default), more on demand:
# HYPOTHESIS_PROFILE=long python -m pytest -p no:cacheprovider tests/test_untrusted_properties.py \
#     tests/test_hostile_input.py tests/test_text_is_text.py
settings.register_profile("ci", max_examples=60, deadline=3000)
settings.register_profile("long", max_examples=2000, deadline=3000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
