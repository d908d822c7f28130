"""The lab served by `streamlit run` on a free local port, in a child process."""

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Self

from harness.paths import ROOT

# The served app as deployed: runs train in worker processes (the in-process tests train on threads).
SERVER_ENV = {"PYTHONUNBUFFERED": "1", "LAB_TRAINING_PROCESSES": "1"}


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LabServer:
    """`streamlit run streamlit_app.py` from `app_dir` (the lab's repository) on 127.0.0.1 in a child process, its
    output in a log file. It inherits the environment (e.g. LAB_TRAINING_SLOTS) but for SERVER_ENV; error details
    are shown in full so a failing test says why."""

    def __init__(self, log_path: Path, start_timeout_s: float = 90.0, app_dir: Path = ROOT):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        self.start_timeout_s = start_timeout_s
        self.app_dir = app_dir
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, exc_type, *exc) -> None:
        self.stop()
        if exc_type is not None:  # a failing test's report then shows what the server did (runs, their ends)
            print(f"server log ({self.log_path.name}), last lines:\n{self.log_tail()}")

    def start(self) -> None:
        """Start the server and wait until /_stcore/health answers ok; RuntimeError with the log if it doesn't."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable,
            "-m",
            "streamlit",
            "run",
            "streamlit_app.py",
            "--server.headless",
            "true",
            "--server.port",
            str(self.port),
            "--server.address",
            "127.0.0.1",
            "--browser.gatherUsageStats",
            "false",
            "--server.fileWatcherType",
            "none",
            "--client.showErrorDetails",
            "full",
        ]
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                command, cwd=self.app_dir, env={**os.environ, **SERVER_ENV}, stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            self.check_alive()
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2) as answer:
                    if answer.read().strip() == b"ok":
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.25)
        self.stop()
        raise RuntimeError(
            f"streamlit did not answer ok on {self.url}/_stcore/health within "
            f"{self.start_timeout_s:.0f} s; log:\n{self.log_tail()}"
        )

    @property
    def pid(self) -> int:
        assert self.process is not None, "server not started"
        return self.process.pid

    def check_alive(self) -> None:
        """RuntimeError with the end of the log if the server process has exited."""
        if self.process is not None and self.process.poll() is not None:
            raise RuntimeError(
                f"the streamlit server exited with status {self.process.returncode}; log "
                f"{self.log_path}:\n{self.log_tail()}"
            )

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_tail(self, n: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-n:])

    def stop(self, timeout_s: float = 10.0) -> None:
        """Terminate the server; kill it if it is still there after `timeout_s`."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout_s)
