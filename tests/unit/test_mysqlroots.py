"""hack/mysqlroots.sh's mirror: read from apt's own sources (or DBUSER_OPERATOR_DEBIAN_MIRROR), never a
host name written into the script, and a clear failure when there is none."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO

SCRIPT = REPO / "hack" / "mysqlroots.sh"

DEB822 = """\
Types: deb
# http://archive.example/debian/20250520T000000Z
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main

Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main
"""


def mirror(apt: Path, override: str | None = None) -> subprocess.CompletedProcess[str]:
    """The script's mirror function, sourced, with ``apt`` as apt's directory."""
    env = {key: value for key, value in os.environ.items() if key != "DBUSER_OPERATOR_DEBIAN_MIRROR"}
    if override is not None:
        env["DBUSER_OPERATOR_DEBIAN_MIRROR"] = override
    return subprocess.run(
        ["bash", "-c", 'source "$1" && mirror "$2"', "test_mysqlroots", str(SCRIPT), str(apt)],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
        check=False,
    )


def sources(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / "apt" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (tmp_path / "apt" / "sources.list.d").mkdir(parents=True, exist_ok=True)
    return tmp_path / "apt"


@pytest.mark.parametrize(
    "files",
    [
        {"sources.list.d/debian.sources": DEB822},
        {"sources.list.d/debian.sources": DEB822.replace("URIs: http://mirror", "URIs:  http://mirror", 1)},
        {
            "sources.list": "# the image's sources\n"
            "deb http://archive.example/debian/20250520T000000Z bookworm main\n"
            "deb http://mirror.example/debian-security bookworm-security main\n"
            "deb http://security.example/ bookworm-security main\n"
            "deb [arch=amd64] http://mirror.example/debian bookworm main\n"
        },
        {"sources.list.d/debian.list": "deb http://mirror.example/debian bookworm main\n"},
        {  # a disabled stanza (Enabled: no) and a source-only one are not read
            "sources.list.d/debian.sources": "Types: deb\nURIs: http://disabled.example/debian\nEnabled: no\n"
            "Suites: sid\n\nTypes: deb-src\nURIs: http://source.example/debian\nSuites: sid\n\n" + DEB822
        },
        {  # a disabled file is not read; the deb822 sources come first
            "sources.list.d/other.sources.disabled": "URIs: http://elsewhere.example/debian\n",
            "sources.list.d/debian.sources": DEB822,
            "sources.list": "deb http://elsewhere.example/debian bookworm main\n",
        },
    ],
)
def test_the_mirror_is_apt_s_own(tmp_path: Path, files: dict[str, str]) -> None:
    found = mirror(sources(tmp_path, files))
    assert (found.returncode, found.stdout, found.stderr) == (0, "http://mirror.example/debian\n", "")


def test_the_variable_overrides_apt_s_sources(tmp_path: Path) -> None:
    apt = sources(tmp_path, {"sources.list.d/debian.sources": DEB822})
    found = mirror(apt, override="http://override.example/debian")
    assert (found.returncode, found.stdout) == (0, "http://override.example/debian\n")
    assert mirror(tmp_path / "none", override="http://override.example/debian").stdout.strip() == (
        "http://override.example/debian"
    )


@pytest.mark.parametrize(
    "files",
    [
        {},  # an empty sources.list.d
        {"sources.list": "deb http://archive.example/debian/20250520T000000Z bookworm main\n"},
        {"sources.list.d/debian.sources": "URIs: http://mirror.example/debian-security\n"},
    ],
)
def test_no_mirror_is_a_clear_failure(tmp_path: Path, files: dict[str, str]) -> None:
    apt = sources(tmp_path, files)
    for where in (apt, tmp_path / "no-such-directory"):
        found = mirror(where)
        assert found.returncode == 1
        assert found.stdout == ""
        assert "ERROR: no Debian mirror in apt's sources" in found.stderr
        assert f"{where}/sources.list.d/*.sources" in found.stderr
        assert "set DBUSER_OPERATOR_DEBIAN_MIRROR" in found.stderr


def test_no_mirror_is_written_into_the_script() -> None:
    assert re.findall(r"\w+://\S*", SCRIPT.read_text()) == []
