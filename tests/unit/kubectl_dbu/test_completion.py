"""Completion: what kubectl_complete-dbu offers after the words typed, in Cobra's format, and the bash
script driven by the real bash."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dbuser_operator.kubectl_dbu.cli import parser
from dbuser_operator.kubectl_dbu.completion import candidates, script

COMMANDS = ["status", "rotate", "consumers", "connect", "why", "certificates", "completion", "access"]


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        ([""], COMMANDS),
        (["st"], ["status"]),
        (["status", "--o"], ["--output"]),
        (["status", "-o", ""], ["json", "yaml", "wide"]),
        (["status", "--output", "y"], ["yaml"]),
        (["completion", ""], ["bash", "zsh"]),
        (["why", "-n", "team", ""], []),
        (["status", "--w"], ["--watch"]),
        (["certificates", "x", "-o", ""], ["json", "yaml"]),
    ],
)
def test_candidates(words: list[str], expected: list[str]) -> None:
    assert candidates(parser(), words) == expected


@pytest.mark.parametrize(
    "words",
    [
        ["why", "o"],
        ["why", "-n", "team", "o"],
        ["rotate", "--wait", "--context", "c", "o"],
        ["certificates", "o"],
    ],
    ids=" ".join,
)
def test_a_command_that_takes_a_user_offers_the_names(words: list[str]) -> None:
    assert candidates(parser(), words, ["orders", "other", "report"]) == ["orders", "other"]


def test_no_names_after_the_name() -> None:
    assert candidates(parser(), ["why", "orders", "o"], ["orders", "other"]) == []


def test_the_complete_program_answers_as_cobra(tmp_path: Path) -> None:
    code = "from dbuser_operator.kubectl_dbu.complete import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", code, "status", "-o", ""],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert done.stdout.splitlines() == ["json", "yaml", "wide", ":4"]


def complete_program(folder: Path) -> None:
    """``kubectl_complete-dbu`` in ``folder``, as the console script runs it."""
    program = folder / "kubectl_complete-dbu"
    program.write_text(
        f"#!/bin/sh\nexec {sys.executable} -c "
        "'import sys; from dbuser_operator.kubectl_dbu.complete import main; "
        'sys.exit(main())\' "$@"\n'
    )
    program.chmod(0o755)


def test_the_bash_script_completes_through_the_complete_program(tmp_path: Path) -> None:
    complete_program(tmp_path)
    source = tmp_path / "completion.bash"
    source.write_text(script("bash"))
    probe = (
        f"source {source}; COMP_WORDS=(kubectl-dbu status --out); COMP_CWORD=2; _kubectl_dbu; "
        'printf "%s\\n" "${COMPREPLY[@]}"'
    )
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin"}
    done = subprocess.run(
        ["bash", "-c", probe], capture_output=True, text=True, env=env, check=True, timeout=60
    )
    assert done.stdout.split() == ["--output"]


def test_the_zsh_script_completes_through_the_complete_program(tmp_path: Path) -> None:
    complete_program(tmp_path)
    source = tmp_path / "_kubectl-dbu"
    source.write_text(script("zsh"))
    subprocess.run(["zsh", "-n", str(source)], check=True, timeout=60)
    # compdef and compadd are the completion system's; here they print what they are given.
    probe = (
        "compdef() { : }; compadd() { shift; print -l -- ${(P)1} }; "
        f"source {source}; words=(kubectl-dbu status --out); CURRENT=3; _kubectl_dbu"
    )
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin"}
    done = subprocess.run(
        ["zsh", "-f", "-c", probe], capture_output=True, text=True, env=env, check=True, timeout=60
    )
    assert done.stdout.split() == ["--output"]
