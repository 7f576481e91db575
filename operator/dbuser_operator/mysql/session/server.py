"""What server we talk to: MySQL or MariaDB, which version, which privileges it knows, whether
``IDENTIFIED BY`` stores a hash the operator can compute (MariaDB's ``mysql_native_password``), which
physical server it is (:func:`read_identity`), whatever address reached it, and its
``default_password_lifetime`` as it was when read (what a new account's password policy follows)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from dbuser_operator.mysql.session.connection import Database
from dbuser_operator.mysql.session.statement import Statement

Flavour = Literal["mysql", "mariadb"]

# MariaDB before 11 may prefix its version with "5.5.5-" for old clients (in the handshake, not in VERSION()).
_VERSION = re.compile(r"(?:5\.5\.5-)?(\d+)\.(\d+)\.(\d+)")
_NAMES = {"mysql": "MySQL", "mariadb": "MariaDB"}


@dataclass(frozen=True)
class ServerInfo:
    """The server's flavour and ``(major, minor, patch)`` version, parsed from ``SELECT VERSION()``; and,
    when :func:`read_server` made it, the privilege names of ``SHOW PRIVILEGES`` (upper case; empty when
    not read) and ``native_by_default``: ``CREATE USER … IDENTIFIED BY`` stores the unsalted
    ``mysql_native_password`` hash (MariaDB with ``old_passwords`` off; False when not read), and
    ``identity``, :func:`read_identity`'s answer ("" when not read), and ``default_lifetime``,
    ``@@global.default_password_lifetime`` in days when read (None when not read: a variable that can change
    at run time, so only a new account's first pass takes it from here; every later look reads it live).
    Two ServerInfo are equal when flavour and version are."""

    flavour: Flavour
    version: tuple[int, int, int]
    privileges: frozenset[str] = field(default=frozenset(), compare=False)
    native_by_default: bool = field(default=False, compare=False)
    identity: str = field(default="", compare=False)
    default_lifetime: int | None = field(default=None, compare=False)

    @classmethod
    def parse(cls, version: str) -> ServerInfo:
        """Parse ``8.4.3``, ``8.0.36-28`` (Percona), ``10.11.19-MariaDB-0+deb12u1``, …"""
        flavour: Flavour = "mariadb" if "mariadb" in version.lower() else "mysql"
        match = _VERSION.match(version.strip())
        if match is None:
            raise ValueError(f"cannot parse the server version {version[:80]!r}")
        major, minor, patch = (int(part) for part in match.groups())
        return cls(flavour, (major, minor, patch))

    def __str__(self) -> str:
        """``MySQL 9.7.4``, ``MariaDB 11.8.9``."""
        return f"{_NAMES[self.flavour]} {'.'.join(str(part) for part in self.version)}"


async def read_identity(db: Database, flavour: Flavour) -> str:
    """Which physical server answers, as the server itself says, whatever host name or address reached it:
    ``mysql:<@@server_uuid>`` (made once per data directory), or ``mariadb:<@@hostname>:<@@port>`` (MariaDB
    has no server UUID, and its ``@@server_id`` is 1 unless configured). Two servers that say the same are
    taken for one: two MariaDB containers with the same host name and port look alike (safe: names are
    reserved on both), one server always says the same thing."""
    if flavour == "mysql":
        [(uuid,)] = await db.fetch(Statement("SELECT @@server_uuid"))
        return f"mysql:{uuid}"
    [(hostname, port)] = await db.fetch(Statement("SELECT @@hostname, @@port"))
    return f"mariadb:{hostname}:{port}"


async def read_server(db: Database) -> ServerInfo:
    """The live server's flavour, version, privilege names (``VERSION()``, ``SHOW PRIVILEGES``), identity
    (:func:`read_identity`), ``default_password_lifetime`` and, on MariaDB, its default password hash
    (``@@old_passwords``: MySQL has no such variable since 5.7): three statements on either flavour."""
    [(version,)] = await db.fetch(Statement("SELECT VERSION()"))
    rows = await db.fetch(Statement("SHOW PRIVILEGES"))
    info = ServerInfo.parse(str(version))
    names = frozenset(" ".join(str(row[0]).upper().split()) for row in rows)
    if info.flavour == "mariadb":  # its identity in the same statement
        [(old_passwords, hostname, port, lifetime)] = await db.fetch(
            Statement("SELECT @@old_passwords, @@hostname, @@port, @@global.default_password_lifetime")
        )
        native, identity = str(old_passwords) in ("0", "OFF"), f"mariadb:{hostname}:{port}"
    else:
        [(uuid, lifetime)] = await db.fetch(
            Statement("SELECT @@server_uuid, @@global.default_password_lifetime")
        )
        native, identity = False, f"mysql:{uuid}"
    return ServerInfo(info.flavour, info.version, names, native, identity, int(lifetime or 0))
