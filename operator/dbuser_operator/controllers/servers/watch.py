"""How server resources reach the DatabaseUser and DatabaseRole controllers: their informers, and which
of their changes requeue the resources on them (SERVER_INDEX)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dbuser_operator.api.v1alpha1 import GROUP, VERSION
from dbuser_operator.api.v1alpha1.mysqlserver import CLUSTER_KIND, KIND
from dbuser_operator.controllers.kit.resources import CLUSTER_MYSQL_SERVERS, MYSQL_SERVERS, SERVER_INDEX
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.conditions import find_condition
from dbuser_operator.runtime.controller import Controller, KeyMapper, objects_naming
from dbuser_operator.runtime.errors import ApiError, NotFound
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.predicates import DELETION_STARTED, GENERATION_CHANGED, Predicate, any_of


def key_of_server(obj: dict[str, Any]) -> str:
    """The server key of a MySQLServer or ClusterMySQLServer object (as the informers list them)."""
    meta = obj["metadata"]
    namespace = meta.get("namespace")
    return f"{KIND}/{namespace}/{meta['name']}" if namespace else f"{CLUSTER_KIND}/{meta['name']}"


def _ready(obj: dict[str, Any]) -> Any:
    condition = find_condition((obj.get("status") or {}).get("conditions"), "Ready")
    return condition.get("status") if condition else None


READY_CHANGED = Predicate(update=lambda old, new: _ready(old) != _ready(new))
SERVER_CHANGED = any_of(GENERATION_CHANGED, DELETION_STARTED, READY_CHANGED)
"""A server change its users and roles must see: created, deleted, spec, deletion, readiness."""


def on_server(*dependents: Informer) -> KeyMapper:
    """Key mapper: a server event requeues the resources of ``dependents`` that name it (SERVER_INDEX)."""
    return objects_naming(SERVER_INDEX, *dependents, values=lambda server: [key_of_server(server)])


def watch_servers(controller: Controller, dependents: Informer, informers: Iterable[Informer]) -> None:
    """Requeue ``controller``'s resources (those of ``dependents``) when their server changes."""
    for informer in informers:
        controller.watch_mapped(informer, on_server(dependents), SERVER_CHANGED)


async def server_kinds_served(kube: KubeClient) -> bool:
    """Whether the API server serves MySQLServers and ClusterMySQLServers (their CRDs are installed); True
    when it cannot tell (the informers then retry as for any resource)."""
    try:
        listed = await kube.request("GET", f"/apis/{GROUP}/{VERSION}")
    except NotFound:
        return False
    except ApiError:
        return True
    names = {resource.get("name") for resource in listed.get("resources") or []}
    return {MYSQL_SERVERS.plural, CLUSTER_MYSQL_SERVERS.plural} <= names
