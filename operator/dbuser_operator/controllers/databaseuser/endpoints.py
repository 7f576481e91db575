"""Which endpoints a DatabaseUser's connection Secret may name: those of the server it is on, never any
other's (the policy has already decided that the namespace may use that server)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from dbuser_operator.api.v1alpha1.mysqlserver import ServerEndpoint
from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.credentials.endpoints import Endpoint


def endpoint_of(endpoint: ServerEndpoint) -> Endpoint:
    """The API's endpoint as the credentials layer knows it."""
    mode = endpoint.tls.mode if endpoint.tls is not None else None
    return Endpoint(endpoint.host, endpoint.port, mode, endpoint.name)


@dataclass(frozen=True)
class DefaultServerEndpoints:
    """The default server's endpoints (``--connection-endpoints``), and its address without them
    (``--connection-host``/``--connection-port``/``--connection-ssl-mode``, else the admin's)."""

    named: Sequence[Endpoint]
    fallback: Endpoint

    def of(self, ctx: Context) -> tuple[Sequence[Endpoint], Endpoint, str]:
        """The endpoints of ``ctx``'s server, its address without them, and how messages name it."""
        if ctx.server_resource is None:
            return self.named, self.fallback, "the default server (--connection-endpoints)"
        spec = ctx.server_resource.spec
        named = [endpoint_of(endpoint) for endpoint in spec.endpoints or []]
        return named, Endpoint(spec.host, spec.port), str(ctx.server_resource)
