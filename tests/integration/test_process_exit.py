"""The operator process exits non-zero when a part whose rule is to stop the manager fails."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from dbuser_operator.envtest import KubeCluster
from tests.conftest import REPO

pytestmark = pytest.mark.integration


def test_a_probe_port_in_use_makes_the_process_exit_non_zero_saying_why(kube: KubeCluster) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "dbuser_operator",
                f"--kubeconfig={kube.kubeconfig}",
                f"--health-probe-bind-address=127.0.0.1:{port}",
                "--metrics-bind-address=127.0.0.1:0",
                "--mysql-port=1",  # never reached: nothing starts before the probes listen
            ],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    assert result.returncode == 1, result.stderr
    lines = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    failed = [line for line in lines if line.get("event") == "runnable failed"]
    assert [line["runnable"] for line in failed] == ["http server"]
    assert "address already in use" in json.dumps(failed[0]["exception"])  # the traceback is logged
    assert any(line.get("event") == "stopping the manager" for line in lines)
    assert not any(line.get("event") == "caches synced" for line in lines)


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--mysql-ssl-mode=VERIFY_CA", "--mysql-tls-ca={missing}"], "--mysql-tls-ca"),
        (["--mysql-tls-cert={missing}", "--mysql-tls-key={here}"], "--mysql-tls-cert"),
        (["--mysql-tls-cert={here}", "--mysql-tls-key={missing}"], "--mysql-tls-key"),
        (["--mysql-password-file={missing}"], "--mysql-password-file"),
    ],
)
def test_a_missing_file_is_one_line_naming_the_flag_and_the_path_and_exit_code_2(
    kube: KubeCluster, tmp_path: Path, flags: list[str], named: str
) -> None:
    """A file flag that names no file is a configuration error at start (as every invalid flag: exit code
    2, one line), not a traceback once the operator first connects."""
    missing = tmp_path / "nowhere" / "file.pem"
    values = {"missing": missing, "here": Path(__file__)}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "dbuser_operator",
            f"--kubeconfig={kube.kubeconfig}",
            "--health-probe-bind-address=127.0.0.1:0",
            "--metrics-bind-address=127.0.0.1:0",
            "--mysql-port=1",
            *(flag.format(**values) for flag in flags),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr == f"dbuser-operator: {named}: no such file: {missing}\n"
