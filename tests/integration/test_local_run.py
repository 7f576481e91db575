"""The README's second command brings the local environment up (checked with --check, which then stops)."""

from __future__ import annotations

import subprocess

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.integration


def test_run_local_starts_both_servers_and_says_how_to_reach_them() -> None:
    result = subprocess.run(
        [str(REPO / "hack" / "run-local.sh"), "--check"],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Kubernetes v1." in result.stdout
    assert "MySQL-compatible server" in result.stdout
    assert "export KUBECONFIG=" in result.stdout
    assert "--defaults-file=" in result.stdout
