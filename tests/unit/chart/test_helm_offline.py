"""The pinned helm renders and lints the chart with no flags, as a user's first `helm template` does: it is
built with helm's own version settings (hack/testbin.sh), so it assumes the Kubernetes version of its
client-go rather than v1.20.0, which the chart's kubeVersion refuses. Every other chart test passes
`--kube-version`; this one must not."""

from __future__ import annotations

import subprocess
from pathlib import Path

from dbuser_operator.envtest import Binaries
from tests.unit.chart.chart import CHART, helm_env, parse


def test_helm_template_needs_no_flags(binaries: Binaries, tmp_path: Path) -> None:
    helm = binaries.path("helm")
    env = helm_env(tmp_path)
    rendered = subprocess.run(
        [str(helm), "template", str(CHART)], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert rendered.returncode == 0, rendered.stderr
    assert "Deployment" in {obj["kind"] for obj in parse(rendered.stdout)}
    linted = subprocess.run(
        [str(helm), "lint", "--strict", str(CHART)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert linted.returncode == 0, linted.stdout + linted.stderr
    version = subprocess.run(
        [str(helm), "version", "--template", "{{.GitTreeState}}"], capture_output=True, text=True, check=True
    )
    assert version.stdout == "clean", "helm was not built with its Makefile's version settings"
