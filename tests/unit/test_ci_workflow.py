"""The users' CI workflow is valid GitHub Actions (checked by the real actionlint)."""

from __future__ import annotations

import subprocess

import yaml

from dbuser_operator.envtest import Binaries
from tests.conftest import REPO

WORKFLOW = REPO / ".github" / "workflows" / "ci.yml"


def test_actionlint_accepts_the_workflows(binaries: Binaries) -> None:
    result = subprocess.run(
        [str(binaries.path("actionlint")), "-no-color", "-shellcheck=", "-pyflakes=", str(WORKFLOW)],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_workflow_runs_the_readme_test_command_against_kind_and_each_database() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    job = workflow["jobs"]["test"]
    images = {entry["image"] for entry in job["strategy"]["matrix"]["include"]}
    assert {"mysql:8.0", "mysql:8.4", "mysql:9", "mariadb:10.11", "mariadb:11.8"} <= images
    steps = "\n".join(str(step.get("run", "")) + str(step.get("uses", "")) for step in job["steps"])
    assert "kind" in steps
    assert "hack/test.sh" in steps
    env = job["env"]
    assert "MYSQL_URL" in env
    assert "KUBECONFIG" in steps or "KUBECONFIG" in env
