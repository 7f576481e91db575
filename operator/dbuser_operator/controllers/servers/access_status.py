"""Publishes a server's access report into its server resource's status (``status.access``).

The status is where exactly those who may read the server resource read the report: a MySQLServer's
readers in its namespace, a ClusterMySQLServer's cluster-wide (no other object, no other RBAC rule). The
write is a merge patch of the ``/status`` subresource that sets ``access`` alone, sent only when the report
differs from the cached one: a period that changes nothing costs no API request. It is not guarded by a
resourceVersion: the server's own controller writes the rest of the status at the same time (its writes are
guarded, and it keeps ``access`` as it finds it), and a guarded report would lose that race and the
drift it shows. Only the leader writes ``access``. An API error is logged and left to the next period:
publishing never fails the drift check, and it runs after the drift check has queued its repairs.
"""

from __future__ import annotations

import structlog

from dbuser_operator.api.v1alpha1.access_report import AccessSummary
from dbuser_operator.controllers.kit.resources import FIELD_MANAGER
from dbuser_operator.controllers.servers.resolver import ServerResolver
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.errors import ApiError
from dbuser_operator.runtime.resources import ObjectKey

log = structlog.get_logger(__name__)


class AccessStatus:
    """Writes reports into the status of the server resources the resolver's informers cache."""

    def __init__(self, kube: KubeClient, resolver: ServerResolver) -> None:
        self.kube = kube
        self.resolver = resolver

    def serves(self, server: str) -> bool:
        """Whether ``server`` (a server key) is a server resource in the cache (the default server is not)."""
        return self.resolver.server_object(server) is not None

    async def publish(self, server: str, report: AccessSummary) -> bool:
        """Write ``report`` into the server resource's status if it changed; whether a request was sent."""
        cached = self.resolver.server_object(server)
        if cached is None or cached["metadata"].get("deletionTimestamp"):
            return False
        access = report.model_dump(by_alias=True, exclude_none=True, mode="json")
        if (cached.get("status") or {}).get("access") == access:
            return False
        informer = self.resolver.informers[server.partition("/")[0]]
        key = ObjectKey.of(cached)
        try:
            await self.kube.patch(
                informer.resource,
                key.name,
                {"status": {"access": access}},  # every field of access is set; its lists replaced
                PatchType.MERGE,
                namespace=key.namespace or None,
                subresource="status",
                field_manager=FIELD_MANAGER,
            )
        except ApiError as error:
            log.info("access report not written; next period tries again", server=server, error=str(error))
            return False
        return True
