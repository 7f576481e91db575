"""spec.serverRef resolved: which server a DatabaseUser or DatabaseRole lives on, and its ServerHandle.

The server resources come from informers (filtered by the target label, as the users): no API read per
reconcile. A resource is refused, with a condition naming the server, when the server does not exist
(``ServerNotFound``), is being deleted (``ServerDeleting``), or failed its last health check or cannot be
connected to as its spec and Secrets say (``ServerNotReady``); each is requeued when the server changes.
Deletion goes ahead on a server that is not ready or is being deleted (its finalizer waits for it).
"""

from __future__ import annotations

from typing import Any

import pydantic

from dbuser_operator.api.v1alpha1.mysqlserver import CLUSTER_KIND, KIND, MySQLServerSpec
from dbuser_operator.controllers.kit.errors import ConditionError
from dbuser_operator.controllers.kit.resources import DEFAULT_SERVER, describe_server, server_key
from dbuser_operator.controllers.servers.connection import ServerConfigError
from dbuser_operator.controllers.servers.handle import ServerHandle
from dbuser_operator.controllers.servers.registry import ServerRegistry
from dbuser_operator.controllers.servers.resource import ServerResource
from dbuser_operator.runtime.conditions import find_condition
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.resources import ObjectKey

NO_DEFAULT_SERVER = (
    "this operator has no default server (--no-default-server): name a MySQLServer or "
    "ClusterMySQLServer in spec.serverRef"
)


class ServerResolver:
    """Finds the server of a resource in the server informers, and its ServerHandle in the registry."""

    def __init__(
        self,
        registry: ServerRegistry,
        servers: Informer | None = None,
        cluster_servers: Informer | None = None,
    ) -> None:
        self.registry = registry
        self.informers = {
            kind: informer
            for kind, informer in ((KIND, servers), (CLUSTER_KIND, cluster_servers))
            if informer is not None
        }
        self._parsed: dict[str, tuple[str, ServerResource]] = {}  # key → (resourceVersion, resource)

    def server_object(self, key: str) -> dict[str, Any] | None:
        """The cached server resource of ``key`` (``MySQLServer/<ns>/<name>``, ``ClusterMySQLServer/<n>``)."""
        kind, _, rest = key.partition("/")
        informer = self.informers.get(kind)
        if informer is None:
            return None
        namespace, _, name = rest.rpartition("/")
        return informer.get(ObjectKey(namespace, name))

    def resource(self, key: str, obj: dict[str, Any]) -> ServerResource:
        """The server resource as a :class:`ServerResource` (its spec parsed once per resourceVersion)."""
        version = str(obj["metadata"].get("resourceVersion", ""))
        parsed = self._parsed.get(key)
        if parsed is not None and parsed[0] == version:
            return parsed[1]
        kind = key.partition("/")[0]
        meta = obj["metadata"]
        try:
            spec = MySQLServerSpec.model_validate(obj.get("spec") or {})
        except pydantic.ValidationError as error:
            why = f"{describe_server(key)}: invalid spec: {error.errors()[0]['msg']}"
            raise ConditionError("ServerNotReady", why) from None
        resource = ServerResource(kind, meta.get("namespace", ""), meta["name"], spec, meta.get("generation"))
        self._parsed[key] = (version, resource)
        return resource

    def forget(self, key: str) -> None:
        """Drop the parsed spec of a server resource that went away."""
        self._parsed.pop(key, None)

    async def resolve(
        self, obj: dict[str, Any], *, deleting: bool = False
    ) -> tuple[ServerResource | None, ServerHandle]:
        """The server of ``obj`` and its ServerHandle. Raises :class:`ConditionError` naming the server."""
        return await self.resolve_key(server_key(obj), deleting=deleting)

    def keys(self) -> list[str]:
        """The key of every server a resource may name now: the default server (if any) and each cached
        server resource."""
        found = [DEFAULT_SERVER] if self.registry.default is not None else []
        for kind, informer in self.informers.items():
            found += [resource_key(kind, server) for server in informer.store]
        return found

    async def resolve_key(
        self, key: str, *, deleting: bool = False
    ) -> tuple[ServerResource | None, ServerHandle]:
        """:meth:`resolve` by the server's key (:func:`~.resources.server_key`)."""
        if key == DEFAULT_SERVER:
            if self.registry.default is None:
                raise ConditionError("ServerNotFound", NO_DEFAULT_SERVER, retry=False)
            return None, self.registry.default
        server = self.server_object(key)
        if server is None:
            informer = self.informers.get(key.partition("/")[0])
            selector = informer.label_selector if informer is not None else None
            unlabelled = f" (or is not labelled {selector}: another instance's)" if selector else ""
            message = f"{describe_server(key)} does not exist{unlabelled}"
            raise ConditionError("ServerNotFound", message, retry=False)
        resource = self.resource(key, server)
        if not deleting:
            if server["metadata"].get("deletionTimestamp"):
                raise ConditionError(
                    "ServerDeleting", f"{resource} is being deleted: nothing more is done there", retry=False
                )
            ready = find_condition((server.get("status") or {}).get("conditions") or [], "Ready")
            if ready is not None and ready.get("status") == "False":
                why = ready.get("message") or ready.get("reason") or "not ready"
                raise ConditionError("ServerNotReady", f"{resource} is not ready: {why}", retry=False)
        try:
            return resource, await self.registry.handle(resource)
        except ServerConfigError as error:
            raise ConditionError("ServerNotReady", f"{resource}: {error.message}") from None


def resource_key(kind: str, obj: dict[str, Any]) -> str:
    """The key of the server resource ``obj`` of ``kind``: ``kind/namespace/name``, or ``kind/name`` for a
    cluster-scoped one (as :func:`~.resources.server_key` names it from a resource's reference)."""
    meta = obj["metadata"]
    namespace = meta.get("namespace") or ""
    return f"{kind}/{namespace}/{meta['name']}" if namespace else f"{kind}/{meta['name']}"
