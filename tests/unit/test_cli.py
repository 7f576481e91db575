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


@pytest.mark.parametrize(
    ("flag", "words"),
    [
        ("--target=-edge-", "--target: String should match pattern"),
        (f"--target={'t' * 56}", "--target: String should have at most 55 characters"),
        ("--target-label=not a label", "--target-label: String should match pattern"),
        ("--mysql-port=0", "--mysql-port: Input should be greater than or equal to 1"),
    ],
)
def test_invalid_settings_are_named_without_a_traceback(
    flag: str, words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([flag]) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"dbuser-operator: {words}")
    assert "Traceback" not in error
