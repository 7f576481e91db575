"""The MySQLServer and ClusterMySQLServer kinds, as the manager runs them (``SetupWithManager``): their
informers, the registry of server handles every kind works through, and one controller per kind."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dbuser_operator.controllers.kit.resources import (
    SERVER_SECRET_INDEX,
)
from dbuser_operator.controllers.mysqlserver.indexes import (
    dependents_gone,
    requeue_on_liveness,
    servers_of_secret,
)
from dbuser_operator.controllers.mysqlserver.reconciler import ServerReconciler
from dbuser_operator.controllers.servers.connection import (
    DatabaseFactory,
    SecretReader,
    ServerDefaults,
)
from dbuser_operator.controllers.servers.handle import ServerHandle
from dbuser_operator.controllers.servers.liveness import Liveness
from dbuser_operator.controllers.servers.registry import ServerRegistry
from dbuser_operator.controllers.shared import Shared
from dbuser_operator.mysql.session.connection import Database
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.controller import Controller
from dbuser_operator.runtime.errors import NotFound
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.manager import Manager, Runnable
from dbuser_operator.runtime.predicates import DELETED, SPEC_OR_METADATA_CHANGED
from dbuser_operator.runtime.resources import SECRETS, ObjectKey
from dbuser_operator.settings import Settings

MAX_CONCURRENT_RECONCILES = 4


def registry(
    settings: Settings, db: Database | None, read_secret: SecretReader, open_database: DatabaseFactory
) -> ServerRegistry:
    """The servers' handles: the settings' server (``db``, if any) and those of server resources, which
    take what they leave unset from the settings."""
    defaults = ServerDefaults(
        pool_size=settings.max_concurrent_reconciles,
        schema=settings.ownership_schema,
        connect_timeout=settings.mysql_connect_timeout,
        read_timeout=settings.mysql_read_timeout,
        cluster_namespace=settings.cluster_resource_namespace,
    )
    default = ServerHandle(db, settings.ownership_schema) if db is not None else None
    return ServerRegistry(default, defaults, read_secret, open_database)


def secret_reader(kube: KubeClient, secrets: Informer) -> SecretReader:
    """Reads a server resource's Secret from the cache, else from the API (a namespace not watched)."""

    async def read(namespace: str, name: str) -> dict[str, Any] | None:
        cached = secrets.get(ObjectKey(namespace, name))
        if cached is not None:
            return cached
        try:
            return await kube.get(SECRETS, name, namespace)
        except NotFound:
            return None

    return read


def setup(
    manager: Manager, shared: Shared, on_servers: Sequence[tuple[Controller, Informer]] = ()
) -> list[Controller]:
    """One controller per server kind, the registry's pool sweeper, and its pools closed at shutdown; the
    Secret cache keeps the Secrets server resources name (credentials, TLS); the servers' liveness probes
    (on the leader) requeue the resources of ``on_servers`` (the DatabaseUser and DatabaseRole controllers,
    each with its primary informer) on a server that answers again.

    A server is looked at again when it changes, when a Secret it is built from changes, when a resource
    on it goes away, when its liveness changes, and every ``server_check_period`` seconds.
    """
    resolver, dependents = shared.servers, [shared.users, shared.roles, shared.databases]
    controllers = []
    for kind, informer in resolver.informers.items():
        shared.secrets.keep_referenced(informer, SERVER_SECRET_INDEX)
        resource = informer.resource
        reconciler = ServerReconciler(
            shared.kube,
            resource,
            informer,
            resolver,
            dependents,
            shared.recorder,
            shared.scope,
            shared.settings.server_check_period,
        )
        controller = Controller(kind.lower(), reconciler, max_concurrent_reconciles=MAX_CONCURRENT_RECONCILES)
        controller.watch(informer, SPEC_OR_METADATA_CHANGED)
        controller.watch_mapped(shared.secrets, servers_of_secret(informer))
        for dependent in dependents:
            controller.watch_mapped(dependent, dependents_gone(resource), DELETED)
        manager.add_controller(controller)
        controllers.append(controller)
    liveness = Liveness(
        resolver.registry,
        requeue_on_liveness(controllers, on_servers),
        period=shared.settings.server_probe_period,
    )
    manager.add_runnable(Runnable("server liveness", liveness.run), leader_only=True)
    manager.add_runnable(Runnable("server pool sweeper", resolver.registry.run_sweeper))
    manager.on_shutdown(resolver.registry.close)
    return controllers
