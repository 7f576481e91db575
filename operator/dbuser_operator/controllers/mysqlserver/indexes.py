"""The server kinds' indexes and key mappers: the informers of MySQLServers and ClusterMySQLServers (indexed
by the Secrets they name), the server index on the informers of the resources that name them, and what a
Secret, a dependent that went away or a server's liveness brings back to the work queues."""

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
from dbuser_operator.controllers.servers.connection import referenced_secrets
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.controller import Controller, KeyMapper, objects_naming
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.resources import ObjectKey, Resource
from dbuser_operator.settings import Settings


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


def requeue_on_liveness(
    servers: Sequence[Controller], dependents: Sequence[tuple[Controller, Informer]]
) -> Callable[[str, bool], None]:
    """What a server's liveness requeues (:data:`~.liveness.Requeue`): the server resource (its status says
    so), and, when it answers again (``with_dependents``), every resource on it (what waited converges now,
    not at its next backoff)."""
    by_kind = {controller.name: controller for controller in servers}

    def requeue(key: str, with_dependents: bool) -> None:
        kind, _, rest = key.partition("/")
        server = by_kind.get(kind.lower())
        if server is not None:
            namespace, _, name = rest.rpartition("/")
            server.queue.add(ObjectKey(namespace, name))
        if not with_dependents:
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
    return objects_naming(SERVER_SECRET_INDEX, informer)
