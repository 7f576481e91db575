"""Several local servers of different flavours at once: the test environment of one operator, many servers.

A :class:`Fleet` is one :class:`~.mysql.LocalMySQLServer` per flavour (MySQL 9.7, MariaDB 11.8 and MariaDB
10.11 by default), each in its own working directory (data, socket, logs) on its own free port, all with
serving certificates of one CA, so that a single CA bundle verifies every one of them. The servers start
side by side; any one of them can be stopped and started again on the same port and data (a server that goes
away and comes back), while the others keep running.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from dbuser_operator.envtest.flavours import FLAVOURS, locate
from dbuser_operator.envtest.mysql import LocalMySQLServer
from dbuser_operator.envtest.pki import CertificateAuthority

FLEET_FLAVOURS: Final = FLAVOURS
"""One server of each flavour the project supports: MySQL 9.7, MariaDB 11.8, MariaDB 10.11."""


class Fleet:
    """Local servers of ``flavours`` (one each) under ``workdir/<flavour>``, serving certificates of one CA.

    Locating every flavour happens here, before anything starts: a flavour that cannot run on this machine
    raises :class:`~.flavours.FlavourUnavailableError` naming the step that provides it.
    """

    def __init__(
        self, workdir: Path, flavours: Sequence[str] = FLEET_FLAVOURS, *, general_log: bool = True
    ) -> None:
        if len(set(flavours)) != len(flavours):
            raise ValueError(f"one server per flavour: {list(flavours)}")
        self.ca = CertificateAuthority("dbuser-operator-envtest-fleet-ca")
        self.servers: dict[str, LocalMySQLServer] = {
            name: LocalMySQLServer(workdir / name, locate(name), self.ca, general_log=general_log)
            for name in flavours
        }

    def __getitem__(self, flavour: str) -> LocalMySQLServer:
        return self.servers[flavour]

    def __iter__(self) -> Iterator[LocalMySQLServer]:
        return iter(self.servers.values())

    @property
    def ca_pem(self) -> bytes:
        """The CA certificate (PEM) that signed every server's certificate."""
        return self.ca.cert_pem

    def start(self) -> None:
        """Start every server that is not running, side by side (initialising a data directory takes a
        few seconds each); the first failure is raised once all have finished."""
        with ThreadPoolExecutor(max_workers=len(self.servers)) as pool:
            for future in [pool.submit(server.start) for server in self.servers.values()]:
                future.result()

    def stop(self) -> None:
        """Stop every server (data directories stay)."""
        with ThreadPoolExecutor(max_workers=len(self.servers)) as pool:
            for future in [pool.submit(server.stop) for server in self.servers.values()]:
                future.result()

    @contextmanager
    def stopped(self, flavour: str) -> Iterator[LocalMySQLServer]:
        """The server of ``flavour`` stopped for the block, started again (same port, same data) after it,
        even when the block fails: later users of the fleet find it running."""
        server = self.servers[flavour]
        server.stop()
        try:
            yield server
        finally:
            server.start()


@contextmanager
def provide_fleet(
    workdir: Path, flavours: Sequence[str] = FLEET_FLAVOURS, *, general_log: bool = True
) -> Iterator[Fleet]:
    """A started :class:`Fleet`, stopped on exit."""
    fleet = Fleet(workdir, flavours, general_log=general_log)
    try:
        fleet.start()
        yield fleet
    finally:
        fleet.stop()
