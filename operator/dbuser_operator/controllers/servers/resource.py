"""A resource's spec.serverRef, resolved: which server resource it names, as found in the cache."""

from __future__ import annotations

from dataclasses import dataclass

from dbuser_operator.api.v1alpha1.mysqlserver import MySQLServerSpec


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
