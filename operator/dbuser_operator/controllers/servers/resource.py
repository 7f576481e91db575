"""A resource's spec.serverRef, resolved: which server resource it names, as found in the cache; and a
kind's pass once the frame bound it to that server resource and its handle."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

from dbuser_operator.api.v1alpha1.mysqlserver import MySQLServerSpec
from dbuser_operator.controllers.kit.ownership import OwningPass
from dbuser_operator.controllers.kit.reconcile import S
from dbuser_operator.controllers.servers.handle import ServerHandle


@dataclass(frozen=True)
class ServerResource:
    """The server resource a resource's spec.serverRef names, as the reconciler found it in the cache."""

    kind: str  # MySQLServer or ClusterMySQLServer
    namespace: str  # "" for a ClusterMySQLServer
    name: str
    spec: MySQLServerSpec
    generation: int | None = None

    @property
    def key(self) -> str:
        """The server's key, as :func:`~.resources.server_key` gives it for the resources on it."""
        return f"{self.kind}/{self.namespace}/{self.name}" if self.namespace else f"{self.kind}/{self.name}"

    def __str__(self) -> str:
        """``MySQLServer team-a/main``, ``ClusterMySQLServer shared``: for conditions and Events."""
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"


@dataclass(kw_only=True)
class ServerPass(OwningPass[S]):
    """A pass of a kind that owns a name, with the server the frame's ``bind`` gave it, typed."""

    server_resource: ServerResource | None = None  # spec.serverRef resolved (None: the settings' server)
    # The server this pass works on: its pool, bookkeeping schema and info (filled before any SQL).
    server: ServerHandle = field(default=cast("ServerHandle", None), repr=False)
