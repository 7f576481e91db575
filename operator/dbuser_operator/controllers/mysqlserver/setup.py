"""The MySQLServer and ClusterMySQLServer kinds, as the manager runs them (``SetupWithManager``): their
informers, the registry of server handles every kind works through, and one controller per kind."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from dbuser_operator.controllers.kit.resources import (
    CLUSTER_MYSQL_SERVERS,
    MYSQL_SERVERS,
    SERVER_INDEX,
    SERVER_SECRET_INDEX,
    referenced_server,
    server_key,
)
from dbuser_operator.controllers.kit.scope import Scope
from dbuser_operator.controllers.mysqlserver.reconciler import ServerReconciler
from dbuser_operator.controllers.servers.connection import (
    DatabaseFactory,
    SecretReader,
    ServerDefaults,
    referenced_secrets,
)
from dbuser_operator.controllers.servers.handle import ServerHandle
from dbuser_operator.controllers.servers.liveness import Liveness
from dbuser_operator.controllers.servers.registry import ServerRegistry
from dbuser_operator.controllers.shared import Shared
from dbuser_operator.mysql.session.connection import Database
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.controller import Controller, KeyMapper
from dbuser_operator.runtime.errors import NotFound
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.manager import Manager, Runnable
from dbuser_operator.runtime.predicates import (
    ANNOTATIONS_CHANGED,
    DELETION_STARTED,
    GENERATION_CHANGED,
    LABELS_CHANGED,
    Predicate,
    any_of,
)
from dbuser_operator.runtime.resources import SECRETS, ObjectKey, Resource
from dbuser_operator.settings import Settings

GONE = Predicate(create=lambda obj: False, update=lambda old, new: False)  # deletions only
MAX_CONCURRENT_RECONCILES = 4


def informers(
    reader: KubeClient, settings: Settings, scope: Scope, *dependents: Informer
) -> tuple[Informer, Informer]:
    """The informers of MySQLServers and ClusterMySQLServers (of this instance's target label; indexed by
    the Secrets they name), and the server index on the informers of the resources that name them."""
    for informer in dependents:
        informer.add_index(SERVER_INDEX, referenced_server)
    namespaced = Informer(
        reader, MYSQL_SERVERS, namespaces=settings.namespaces, label_selector=scope.selector
    )
    cluster = Informer(reader, CLUSTER_MYSQL_SERVERS, label_selector=scope.selector)
    for informer in (namespaced, cluster):  # the Secrets each names, for the Secret cache and watch
        informer.add_index(SERVER_SECRET_INDEX, referenced_secrets(settings.cluster_resource_namespace))
    return namespaced, cluster


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
        controller.watch(
            informer, any_of(GENERATION_CHANGED, ANNOTATIONS_CHANGED, LABELS_CHANGED, DELETION_STARTED)
        )
        controller.watch_mapped(shared.secrets, servers_of_secret(informer))
        for dependent in dependents:
            controller.watch_mapped(dependent, dependents_gone(resource), GONE)
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


def requeue_on_liveness(
    servers: Sequence[Controller], dependents: Sequence[tuple[Controller, Informer]]
) -> Callable[[str, bool], None]:
    """What a server's liveness change requeues: the server resource (its status says so), and, when it
    answers again, every resource on it (what waited converges now, not at its next backoff)."""
    by_kind = {controller.name: controller for controller in servers}

    def requeue(key: str, up: bool) -> None:
        kind, _, rest = key.partition("/")
        server = by_kind.get(kind.lower())
        if server is not None:
            namespace, _, name = rest.rpartition("/")
            server.queue.add(ObjectKey(namespace, name))
        if not up:
            return
        for controller, informer in dependents:
            for obj in informer.store.by_index(SERVER_INDEX, key):
                controller.queue.add(ObjectKey.of(obj))

    return requeue


def dependents_gone(resource: Resource) -> KeyMapper:
    """Key mapper: a DatabaseUser or DatabaseRole that goes away requeues its server of ``resource``'s kind
    (a deleted server waits for it)."""

    def to_keys(obj: dict[str, Any]) -> list[ObjectKey]:
        kind, _, rest = server_key(obj).partition("/")
        if kind != resource.kind:
            return []
        namespace, _, name = rest.rpartition("/")
        return [ObjectKey(namespace, name)]

    return to_keys


def servers_of_secret(informer: Informer) -> KeyMapper:
    """Key mapper: a Secret requeues the servers of ``informer`` built from it."""

    def to_keys(secret: dict[str, Any]) -> list[ObjectKey]:
        key = ObjectKey.of(secret)
        return [
            ObjectKey.of(obj)
            for obj in informer.store.by_index(SERVER_SECRET_INDEX, f"{key.namespace}/{key.name}")
        ]

    return to_keys
