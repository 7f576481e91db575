"""Which MySQL-compatible server the local test environment runs, and where its programs come from.

A *flavour* is a server and a version line: ``mariadb-10.11`` is the machine's own package (Debian
stable's ``mariadb-server``); ``mysql-9.7`` and ``mariadb-11.8`` need a newer glibc than the machine's, so
they run from debootstrap roots that ``hack/mysqlroots.sh`` builds once into the cache
(``$DBUSER_OPERATOR_CACHE/roots/<flavour>-<suite>``). ``DBUSER_OPERATOR_MYSQL_FLAVOUR`` selects one.

A program of a root runs in a private mount namespace, chrooted into the root, with the server's host
working directory bind-mounted at :data:`INNER_WORKDIR`: the data directory, socket, certificates and logs
stay in the test session's own directory on the host (removed with it), the root is never written, and
sessions that share a root do not see each other's files. That needs root (``unshare``, ``chroot``).
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

FLAVOUR_VARIABLE: Final = "DBUSER_OPERATOR_MYSQL_FLAVOUR"
FLAVOURS: Final = ("mysql-9.7", "mariadb-11.8", "mariadb-10.11")
DEFAULT_FLAVOUR: Final = "mysql-9.7"
"""The product's namesake: what a plain ``pytest`` runs against."""

INNER_WORKDIR: Final = Path("/srv/envtest")
"""Where a root's programs see the server's host working directory."""

_HOST_FLAVOURS: Final = frozenset({"mariadb-10.11"})
_SBIN: Final = ("/usr/sbin", "/usr/local/sbin", "/usr/local/mysql/bin")
# Bind the working directory into the root in a private mount namespace, then chroot: $1 dir, $2 mount
# point, $3 root, the rest the command. The mount vanishes with the namespace, when the program exits.
_ENTER_ROOT: Final = 'mount --bind "$1" "$2" && root=$3 && shift 3 && exec chroot "$root" "$@"'


class FlavourUnavailableError(FileNotFoundError):
    """The selected flavour's server cannot be run here; the message names the missing step."""


def selected_flavour() -> str:
    """``DBUSER_OPERATOR_MYSQL_FLAVOUR``, or :data:`DEFAULT_FLAVOUR`; checked against :data:`FLAVOURS`."""
    name = os.environ.get(FLAVOUR_VARIABLE, "").strip() or DEFAULT_FLAVOUR
    if name not in FLAVOURS:
        raise ValueError(f"{FLAVOUR_VARIABLE}={name!r}: not a flavour (one of {', '.join(FLAVOURS)})")
    return name


def cache_directory() -> Path:
    """The cache hack/testbin.sh and hack/mysqlroots.sh build into (``DBUSER_OPERATOR_CACHE`` overrides)."""
    configured = os.environ.get("DBUSER_OPERATOR_CACHE")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dbuser-operator"


@dataclass(frozen=True)
class Flavour:
    """A located flavour: its name, the server program, and the root it runs in (None: the machine)."""

    name: str
    server: str  # "mysqld" or "mariadbd": the program name inside the root, or a path on the machine
    root: Path | None

    @property
    def product(self) -> str:
        """``mysql`` or ``mariadb``."""
        return self.name.split("-", 1)[0]

    @property
    def version_line(self) -> str:
        """``9.7``, ``11.8``, ``10.11``: the versions this flavour stands for."""
        return self.name.split("-", 1)[1]

    def inner(self, path: Path, workdir: Path) -> Path:
        """``path`` (inside ``workdir``) as the flavour's programs see it."""
        if self.root is None:
            return path
        return INNER_WORKDIR / path.relative_to(workdir)

    def command(self, argv: Sequence[str], workdir: Path) -> list[str]:
        """``argv`` as run for this flavour: as it is on the machine, or in the root with ``workdir``
        bind-mounted at :data:`INNER_WORKDIR` (the process keeps the pid of the final program)."""
        if self.root is None:
            return list(argv)
        mount_point = self.root / INNER_WORKDIR.relative_to("/")
        mount_point.mkdir(parents=True, exist_ok=True)
        return [
            "unshare",
            "--mount",
            "--propagation=private",
            "--",
            "sh",
            "-c",
            _ENTER_ROOT,
            "sh",
            str(workdir),
            str(mount_point),
            str(self.root),
            *argv,
        ]

    def package_version(self) -> str:
        """The server package's version (``mysql-server-core 9.7.4-2``), without starting it."""
        if self.root is not None:
            recorded = (self.root / "VERSION").read_text().split()
            return " ".join(recorded[1:])
        result = subprocess.run(  # noqa: S603 - the located server binary
            [self.server, "--version"], capture_output=True, text=True, check=False, timeout=30
        )
        words = result.stdout.split()  # /usr/sbin/mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for ...
        found = (after for word, after in itertools.pairwise(words) if word == "Ver")
        return f"{Path(self.server).name} {next(found, '?')}"


def locate(name: str) -> Flavour:
    """The flavour ``name``'s programs on this machine; :class:`FlavourUnavailableError` naming the step
    that would provide them."""
    if name not in FLAVOURS:
        raise ValueError(f"not a flavour: {name!r} (one of {', '.join(FLAVOURS)})")
    if name in _HOST_FLAVOURS:
        search = os.pathsep.join([os.environ.get("PATH", ""), *_SBIN])
        for program in ("mariadbd", "mysqld"):
            found = shutil.which(program, path=search)
            if found:
                return Flavour(name, found, None)
        raise FlavourUnavailableError(
            f"{name}: no mariadbd found: apt-get install mariadb-server (hack/setup.sh does), or choose"
            f" another {FLAVOUR_VARIABLE}, or set MYSQL_URL"
        )
    roots = sorted((cache_directory() / "roots").glob(f"{name}-*/VERSION"))
    if not roots:
        raise FlavourUnavailableError(
            f"{name}: its server root is not built in {cache_directory() / 'roots'}: run"
            f" `hack/mysqlroots.sh {name}` as root (hack/setup.sh does), or choose another"
            f" {FLAVOUR_VARIABLE} ({', '.join(FLAVOURS)}), or set MYSQL_URL"
        )
    if os.geteuid() != 0:
        raise FlavourUnavailableError(f"{name}: running a server from its root needs root (unshare, chroot)")
    server = "mysqld" if name.startswith("mysql-") else "mariadbd"
    return Flavour(name, server, roots[-1].parent)
