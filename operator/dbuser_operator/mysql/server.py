"""What server we talk to: MySQL or MariaDB, and which version."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Flavour = Literal["mysql", "mariadb"]

# MariaDB before 11 may prefix its version with "5.5.5-" for old clients (in the handshake, not in VERSION()).
_VERSION = re.compile(r"(?:5\.5\.5-)?(\d+)\.(\d+)\.(\d+)")


@dataclass(frozen=True)
class ServerInfo:
    """The server's flavour and ``(major, minor, patch)`` version, parsed from ``SELECT VERSION()``."""

    flavour: Flavour
    version: tuple[int, int, int]

    @classmethod
    def parse(cls, version: str) -> ServerInfo:
        """Parse ``8.4.3``, ``8.0.36-28`` (Percona), ``10.11.19-MariaDB-0+deb12u1``, …"""
        flavour: Flavour = "mariadb" if "mariadb" in version.lower() else "mysql"
        match = _VERSION.match(version.strip())
        if match is None:
            raise ValueError(f"cannot parse the server version {version[:80]!r}")
        major, minor, patch = (int(part) for part in match.groups())
        return cls(flavour, (major, minor, patch))
