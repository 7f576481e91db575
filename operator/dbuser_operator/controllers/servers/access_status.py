"""Publishes a server's access report into its server resource's status (``status.access``).

The status is where exactly those who may read the server resource read the report: a MySQLServer's
readers in its namespace, a ClusterMySQLServer's cluster-wide (no other object, no other RBAC rule). The
write is a merge patch of the ``/status`` subresource guarded by the cached resourceVersion, sent only when
the report differs from the one stored: a period that changes nothing costs no API request. A conflict
(the server's own controller wrote meanwhile) or any API error is logged and left to the next period:
publishing never fails the drift check, and it runs after the drift check has queued its repairs.
"""

from __future__ import annotations

import copy

import structlog

from dbuser_operator.api.v1alpha1.access_report import AccessSummary
from dbuser_operator.controllers.kit.resources import FIELD_MANAGER
from dbuser_operator.controllers.servers.resolver import ServerResolver
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.errors import ApiError
from dbuser_operator.runtime.objects import ConflictError, update_status

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
        kind = server.partition("/")[0]
        informer = self.resolver.informers[kind]
        status = copy.deepcopy(cached.get("status") or {})
        status["access"] = report.model_dump(by_alias=True, exclude_none=True, mode="json")
        try:
            written = await update_status(
                self.kube, informer.resource, cached, status, field_manager=FIELD_MANAGER
            )
        except (ConflictError, ApiError) as error:
            log.info("access report not written; next period tries again", server=server, error=str(error))
            return False
        return written is not None
