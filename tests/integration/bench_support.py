"""Running the benchmark harness from a test: ``python -m <module>`` from the repository root."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence

from dbuser_operator.envtest import KubeCluster, MySQLServer
from tests.conftest import REPO


def bench_env(kube: KubeCluster, mysql: MySQLServer | None = None) -> dict[str, str]:
    """The environment that points the harness at the session's API server (and MySQL server; without
    one, the harness starts its own servers)."""
    env = {**os.environ, "KUBECONFIG": str(kube.kubeconfig)}
    env.pop("MYSQL_URL", None)
    if mysql is not None:
        env["MYSQL_URL"] = mysql.url
    return env


def run_bench(
    module: str, arguments: Sequence[str], env: dict[str, str], *, timeout: float = 540
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m module arguments``; a non-zero exit fails the test with the output's tail."""
    result = subprocess.run(
        [sys.executable, "-m", module, *arguments],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert result.returncode == 0, (result.stdout + result.stderr)[-5000:]
    return result
