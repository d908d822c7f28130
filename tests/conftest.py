"""Shared test set-up."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import torch
from hypothesis import settings

from ui.streamlit_internals import navigation_mode_patch

BROWSER_TESTS, PAGE_TESTS = Path(__file__).parent / "browser", Path(__file__).parent / "pages"
CI_BROWSER_RERUNS = 1  # in CI, a browser test that fails runs once more; the summary counts it as "rerun"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test by what it needs, so that `-m` can leave it out (docs/contributing.md's fast tier): `browser`
    in tests/browser/ (every test there serves the app), `pages` in tests/pages/, `postgres` where it uses
    `postgres_url`, `ray` in tests/serving/test_ray*.py. In CI a browser test gets CI_BROWSER_RERUNS more tries
    (pytest-rerunfailures), as Playwright's own test runner retries on CI: a test that needed one is listed as
    RERUN, with its first failure, and is a bug to find (docs/contributing.md)."""
    for item in items:
        if item.path.is_relative_to(BROWSER_TESTS):
            item.add_marker(pytest.mark.browser)
            if os.environ.get("CI"):
                item.add_marker(pytest.mark.flaky(reruns=CI_BROWSER_RERUNS))
        if item.path.is_relative_to(PAGE_TESTS):
            item.add_marker(pytest.mark.pages)
        if "postgres_url" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.postgres)
        if item.path.name.startswith("test_ray"):
            item.add_marker(pytest.mark.ray)


@pytest.fixture(scope="session")
def class_data_dir(tmp_path_factory):
    """Where the app's class database goes in tests that name none: never the checkout's ./data."""
    return tmp_path_factory.mktemp("classes")


@pytest.fixture(autouse=True)
def navigation_mode(monkeypatch, class_data_dir):
    """AppTest runs pages inside the app's frame (`navigation_mode_patch`), trains on threads of the test process
    (tests/serving/test_worker.py and the browser tests cover worker processes), and keeps classes in a folder of the
    tests' own."""
    monkeypatch.setattr(*navigation_mode_patch())
    monkeypatch.setenv("LAB_TRAINING_PROCESSES", "0")
    monkeypatch.setenv("LAB_DATA_DIR", str(class_data_dir))


@pytest.fixture
def cli_one_thread(monkeypatch):
    """In-process commands run on one thread; the test process gets its thread count back afterwards."""
    threads = torch.get_num_threads()
    monkeypatch.setenv("TRANSFORMER_THREADS", "1")
    yield
    torch.set_num_threads(threads)


# Hypothesis: a bounded number of examples per property in CI ("ci", the default), more on demand:
# HYPOTHESIS_PROFILE=long python -m pytest -p no:cacheprovider tests/test_untrusted_properties.py \
#     tests/test_hostile_input.py tests/test_text_is_text.py
settings.register_profile("ci", max_examples=60, deadline=3000)
settings.register_profile("long", max_examples=2000, deadline=3000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


PG_USER_SQL = (
    "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'lab') THEN "
    "CREATE ROLE lab LOGIN PASSWORD 'lab'; END IF; END $$;"
)


@pytest.fixture(scope="session")
def postgres_url():
    """A PostgreSQL database of the tests' own: LAB_TEST_DATABASE_URL, else Debian's cluster started here (README's
    test command installs the package; `pg_ctlcluster` needs root), stopped again after the tests if they started
    it. Skipped where neither is at hand, and failed in CI, where a skip would pass a run that never touched it."""
    if url := os.environ.get("LAB_TEST_DATABASE_URL"):
        yield url
        return
    clusters = shutil.which("pg_lsclusters") and subprocess.run(["pg_lsclusters", "-h"], capture_output=True, text=True)
    fields = clusters.stdout.split() if clusters else []
    if len(fields) < 4 or os.geteuid() != 0:
        in_ci = os.environ.get("CI", "").lower() in ("true", "1")
        (pytest.fail if in_ci else pytest.skip)("PostgreSQL: apt-get install postgresql, or set LAB_TEST_DATABASE_URL")
    version, name, port, status = fields[:4]
    if status != "online":
        subprocess.run(["pg_ctlcluster", version, name, "start"], check=True)

    def psql(sql: str) -> str:
        command = ["runuser", "-u", "postgres", "--", "psql", "-p", port, "-v", "ON_ERROR_STOP=1", "-qtAc", sql]
        return subprocess.run(command, check=True, capture_output=True, text=True, cwd="/").stdout.strip()

    psql(PG_USER_SQL)
    if psql("SELECT 1 FROM pg_database WHERE datname = 'lab_tests'") != "1":
        psql("CREATE DATABASE lab_tests OWNER lab")
    yield f"postgresql+psycopg://lab:lab@127.0.0.1:{port}/lab_tests"
    if status != "online":
        subprocess.run(["pg_ctlcluster", version, name, "stop"], check=True)
