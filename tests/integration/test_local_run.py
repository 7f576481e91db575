"""The README's second command runs the operator end to end (--check stops once the sample is Ready)."""

from __future__ import annotations

import subprocess

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.integration


def test_run_local_shows_the_sample_ready_and_says_how_to_reach_the_servers() -> None:
    result = subprocess.run(
        [str(REPO / "hack" / "run-local.sh"), "--check"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "databaseuser.mysql.dbuser-operator.dev/app created" in result.stdout
    table = result.stdout.split("$ kubectl get dbu", 1)[1].splitlines()
    assert table[1].split() == ["NAME", "USER", "HOST", "READY", "REASON", "AGE"]
    assert table[2].split()[:5] == ["app", "app", "%", "True", "AccountReady"]
    assert "AccountCreated" in result.stdout  # kubectl describe shows the events
    assert "export KUBECONFIG=" in result.stdout
    assert "--defaults-file=" in result.stdout
