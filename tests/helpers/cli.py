"""The command line run in the test's own process."""

import pytest

from transformer.cli import main


def run_cli(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str, str]:
    """main(args) in this process: exit status, stdout, stderr."""
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err
