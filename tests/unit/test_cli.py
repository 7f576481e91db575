"""The command line answers --help and --version, as a console script and as ``python -m``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dbuser_operator import __version__
from dbuser_operator.cli import main


def test_help_describes_the_operator(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    assert "DatabaseUser" in capsys.readouterr().out


@pytest.mark.parametrize(
    "command",
    [[sys.executable, "-m", "dbuser_operator"], [str(Path(sys.executable).with_name("dbuser-operator"))]],
    ids=["python -m", "console script"],
)
def test_entry_points_print_help_and_version(command: list[str]) -> None:
    helped = subprocess.run([*command, "--help"], capture_output=True, text=True, check=True)
    assert helped.stdout.startswith("usage: dbuser-operator")
    versioned = subprocess.run([*command, "--version"], capture_output=True, text=True, check=True)
    assert versioned.stdout.strip() == f"dbuser-operator {__version__}"
