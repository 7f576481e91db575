"""The README's second command runs the operator end to end (--check stops once the samples are Ready).

What a newcomer sees first: no warning, every sample Ready (the MySQLServer too: it reaches the local
server), a ``kubectl describe dbu`` of only what was set or decided, and a client hint for the server's
flavour."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from dbuser_operator.envtest import selected_flavour
from dbuser_operator.local import client_command
from tests.conftest import REPO

pytestmark = pytest.mark.integration

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
    assert "export KUBECONFIG=" in output
    assert "--defaults-file=" in output


def test_the_first_screen_has_no_warning_nor_error(output: str) -> None:
    first_screen = output.splitlines()[:FIRST_SCREEN]
    assert [line for line in first_screen if _NOISE.search(line)] == []


def test_describe_shows_no_empty_list_nor_zero_limit(output: str) -> None:
    describe = output.split("$ kubectl describe dbu app\n", 1)[1].split("\nEvents:", 1)[0]
    spec = describe.split("\nSpec:\n", 1)[1].split("\nStatus:\n", 1)[0]
    assert "Host:" in spec  # the section was found: what was decided (spec.host's default) shows
    assert empty_or_zero(describe) == []
    assert "Require TLS" not in spec  # not set: not shown


@pytest.mark.skipif(bool(os.environ.get("MYSQL_URL")), reason="the flavour of MYSQL_URL is not chosen")
def test_the_client_hint_matches_the_flavour(output: str) -> None:
    product = selected_flavour().split("-", 1)[0]
    hint = next(line for line in output.splitlines() if "--defaults-file=" in line)
    assert hint.split()[0] == client_command(product)
    assert ("MariaDB" if product == "mariadb" else "MySQL") in hint.split("#", 1)[1]
