"""requirements.lock, the image's dependencies (hack/lock.sh): it satisfies pyproject.toml's runtime
dependencies, pins every package to one version, and carries hashes for each (pip --require-hashes)."""

from __future__ import annotations

import re
import tomllib

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.conftest import REPO

LOCK = REPO / "requirements.lock"
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)(?:\s*;\s*([^\\]+?))?\s*\\?$")


def locked() -> dict[str, tuple[str, list[str]]]:
    """name → (version, hashes) of every pin of the lock."""
    pins: dict[str, tuple[str, list[str]]] = {}
    current = ""
    for line in LOCK.read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _PIN.match(line)
        if match:
            current = canonicalize_name(match.group(1))
            assert current not in pins, f"{current} pinned twice"
            pins[current] = (match.group(2), [])
        else:
            hashed = re.fullmatch(r"\s+--hash=sha256:([0-9a-f]{64})\s*\\?", line)
            assert hashed, f"unexpected line in the lock: {line!r}"
            assert current, f"a hash before any pin: {line!r}"
            pins[current][1].append(hashed.group(1))
    return pins


def test_the_lock_satisfies_every_runtime_dependency() -> None:
    dependencies = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    pins = locked()
    for text in dependencies:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{name} is a dependency but not in the lock: run hack/lock.sh"
        version = pins[name][0]
        assert requirement.specifier.contains(version, prereleases=True), (
            f"the lock pins {name}=={version}, pyproject.toml asks {requirement.specifier}: run hack/lock.sh"
        )


def test_every_pin_has_hashes_and_the_lock_says_how_it_is_made() -> None:
    pins = locked()
    assert len(pins) > 10  # the dependencies' own dependencies too
    assert [name for name, (_, hashes) in pins.items() if not hashes] == []
    assert "#    hack/lock.sh" in LOCK.read_text().splitlines()[1]
    assert "--require-hashes" in (REPO / "Dockerfile").read_text()
