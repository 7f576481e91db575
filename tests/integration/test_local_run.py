"""The README's second command runs the operator end to end (--check stops once the samples are Ready).

What a newcomer sees first: no warning, every sample Ready (the MySQLServer too: it reaches the local
server), a ``kubectl describe dbu`` of only what was set or decided. With --check, no command that would be
dead once it exits; without, commands that work when pasted into another shell while it runs (a fresh
``bash`` with a bare environment runs them: kubectl reads the sample, the client logs in), in the client of
the server's flavour."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import IO

import pytest

from dbuser_operator.envtest import selected_flavour
from dbuser_operator.local import RUNNING, client_command
from tests.conftest import REPO

pytestmark = [pytest.mark.integration, pytest.mark.gobin]  # hack/run-local.sh runs the Go binaries

FIRST_SCREEN = 60  # lines
_NOISE = re.compile(r"\[\s*(warning|error|critical)\s*\]|Traceback|^\s*Warning\s", re.IGNORECASE)
_LIST = re.compile(r"^(\s*)(Hosts|Roles|Default Roles|Privileges):\s*$")
_ZERO_LIMIT = re.compile(r"^\s*Max [A-Za-z ]+:\s+0\s*$")


@pytest.fixture(scope="module")
def output() -> str:
    result = subprocess.run(
        [str(REPO / "hack" / "run-local.sh"), "--check"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + result.stderr


def empty_or_zero(describe: str) -> list[str]:
    """The lines of ``kubectl describe`` output that show an empty list (no deeper line follows its
    heading) or a zero limit."""
    lines = describe.splitlines()
    found = [line for line in lines if _ZERO_LIMIT.search(line)]
    for heading, following in zip(lines, [*lines[1:], ""], strict=True):
        match = _LIST.match(heading)
        if match and len(following) - len(following.lstrip()) <= len(match.group(1)):
            found.append(heading)
    return found


def section(output: str, command: str) -> list[str]:
    """The lines kubectl printed for ``$ command`` (up to the next blank line)."""
    lines = output.split(f"$ {command}\n", 1)[1].splitlines()
    return lines[: lines.index("")] if "" in lines else lines


def test_run_local_shows_the_samples_ready_and_says_how_to_reach_the_servers(output: str) -> None:
    assert "databaseuser.mysql.dbuser-operator.dev/app created" in output
    table = section(output, "kubectl get dbu")
    assert table[0].split() == ["NAME", "USER", "HOST", "READY", "REASON", "AGE"]
    assert table[1].split()[:5] == ["app", "app", "%", "True", "AccountReady"]
    servers = section(output, "kubectl get mysqlservers")
    assert servers[0].split()[:5] == ["NAME", "HOST", "PORT", "READY", "REASON"]
    assert servers[1].split()[3:5] == ["True", "Connected"]  # the sample server reaches the local one
    assert "AccountCreated" in output  # kubectl describe shows the events
    assert "export KUBECONFIG=" not in output  # --check removes the environment as it exits: no dead hint
    assert "--defaults-file=" not in output


def test_the_first_screen_has_no_warning_nor_error(output: str) -> None:
    first_screen = output.splitlines()[:FIRST_SCREEN]
    assert [line for line in first_screen if _NOISE.search(line)] == []


def test_describe_shows_no_empty_list_nor_zero_limit(output: str) -> None:
    describe = output.split("$ kubectl describe dbu app\n", 1)[1].split("\nEvents:", 1)[0]
    spec = describe.split("\nSpec:\n", 1)[1].split("\nStatus:\n", 1)[0]
    assert "Host:" in spec  # the section was found: what was decided (spec.host's default) shows
    assert empty_or_zero(describe) == []
    assert "Require TLS" not in spec  # not set: not shown


def read_lines(stream: IO[str], into: queue.Queue[str | None]) -> None:
    """Every line of ``stream`` into ``into`` as it comes, then None (the end)."""
    for line in stream:
        into.put(line.rstrip("\n"))
    into.put(None)


@pytest.fixture(scope="module")
def hints() -> Iterator[list[str]]:
    """``hack/run-local.sh`` without --check, running: the lines it printed up to "running"; stopped
    (Ctrl-C) when the module's tests are done."""
    process = subprocess.Popen(
        [str(REPO / "hack" / "run-local.sh")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    assert process.stdout is not None
    # A thread reads the lines: select() on the pipe does not see what the text wrapper has buffered, so a
    # loop of select and readline took a second per buffered line once the script fell quiet (hundreds of
    # log lines: past the test's timeout on a busy machine).
    received: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=read_lines, args=(process.stdout, received), daemon=True).start()
    lines: list[str] = []
    deadline = time.monotonic() + 240  # a bound on a hang, inside the test timeout: the lines are shown
    try:
        while RUNNING not in lines:
            assert time.monotonic() < deadline, "\n".join(lines)
            try:
                line = received.get(timeout=1)
            except queue.Empty:
                continue
            assert line is not None, "\n".join(lines)  # the script ended before it ran
            lines.append(line)
        yield lines
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def test_every_printed_command_works_in_another_shell(hints: list[str]) -> None:
    start = hints.index("in another shell, while this runs:")
    commands = hints[start + 1 : hints.index(RUNNING)]
    assert [line.split("=", 1)[0] for line in commands[:2]] == ["export KUBECONFIG", "export PATH"]
    script = "\n".join([*commands[:2], "kubectl get dbu app -n default -o name", commands[2]])
    bare = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root")}
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        input="SELECT CURRENT_USER();\n",
        capture_output=True,
        text=True,
        env=bare,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "databaseuser.mysql.dbuser-operator.dev/app" in result.stdout
    assert "@" in result.stdout.splitlines()[-1]  # CURRENT_USER(): the admin, logged in


@pytest.mark.skipif(bool(os.environ.get("MYSQL_URL")), reason="the flavour of MYSQL_URL is not chosen")
def test_the_client_hint_matches_the_flavour(hints: list[str]) -> None:
    product = selected_flavour().split("-", 1)[0]
    hint = next(line for line in hints if "--defaults-file=" in line)
    assert hint.split()[0] == client_command(product)
    assert ("MariaDB" if product == "mariadb" else "MySQL") in hint.split("#", 1)[1]
