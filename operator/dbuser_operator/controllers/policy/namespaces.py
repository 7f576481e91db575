"""Namespace labels for the servers' policies: a cluster-wide cache of namespaces, holding only their names
and labels, and which DatabaseUsers and DatabaseRoles to look at again when a namespace's labels change.

Namespaces are cluster-scoped, so the cache watches all of them (RBAC: get, list and watch on namespaces,
cluster-wide), even when the operator watches only some namespaces' resources; the objects it keeps are a
name, a resourceVersion and labels, a few hundred bytes each.
"""

from __future__ import annotations

from typing import Any

from dbuser_operator.controllers.kit.resources import DEFAULT_SERVER, server_key
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.controller import Controller, KeyMapper, objects_naming
from dbuser_operator.runtime.errors import ApiError, Forbidden
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.predicates import LABELS_CHANGED, Predicate
from dbuser_operator.runtime.resources import NAMESPACES, ObjectKey

POLICY_NAMESPACE_INDEX = "policy-namespace"
"""Index of DatabaseUsers and DatabaseRoles on a server resource (the ones a policy may concern): their
namespace."""

NAMESPACE_EVENTS = Predicate(update=LABELS_CHANGED.update, delete=lambda obj: False)
"""A namespace that appears (its resources may have waited for it) or whose labels change."""


def labels_only(obj: dict[str, Any]) -> dict[str, Any]:
    """What the cache keeps of a namespace: its name, resourceVersion and labels."""
    metadata = obj.get("metadata") or {}
    kept = {key: metadata[key] for key in ("name", "resourceVersion", "labels") if key in metadata}
    return {"metadata": kept}


def on_a_server(obj: dict[str, Any]) -> list[str]:
    """Index value: the namespace of a DatabaseUser or DatabaseRole with spec.serverRef (none without:
    the settings' server has no policy)."""
    if server_key(obj) == DEFAULT_SERVER:
        return []
    return [obj["metadata"].get("namespace", "")]


async def namespaces_readable(kube: KubeClient) -> bool:
    """Whether the operator may list namespaces (False: RBAC forbids it, e.g. an install from before server
    policies with its own RBAC); True when it cannot tell (the informer then retries as for any resource)."""
    try:
        await kube.list(NAMESPACES, limit=1)
    except Forbidden:
        return False
    except ApiError:
        return True
    return True


class NamespaceLabels:
    """The labels of every namespace, from a cache of namespaces kept current by a watch; without ``kube``
    (namespaces may not be read), none: a policy cannot be checked."""

    def __init__(self, kube: KubeClient | None) -> None:
        self.informer = Informer(kube, NAMESPACES, transform=labels_only) if kube is not None else None

    @property
    def available(self) -> bool:
        """Whether namespaces are read at all."""
        return self.informer is not None

    def labels(self, namespace: str) -> dict[str, str] | None:
        """The namespace's labels; None if the cache does not hold it (not created, or not listed yet)."""
        obj = self.informer.get(ObjectKey("", namespace)) if self.informer is not None else None
        if obj is None:
            return None
        return dict(obj["metadata"].get("labels") or {})

    def watch(self, controller: Controller, *informers: Informer) -> None:
        """Requeue ``controller``'s resources (those of ``informers`` on a server resource) in a namespace
        that appears or whose labels change."""
        if self.informer is not None:
            controller.watch_mapped(self.informer, resources_in(*informers), NAMESPACE_EVENTS)


def resources_in(*informers: Informer) -> KeyMapper:
    """A mapping for a namespace watch: the resources on a server resource in that namespace (indexed by
    :data:`POLICY_NAMESPACE_INDEX`) of each informer."""
    return objects_naming(
        POLICY_NAMESPACE_INDEX, *informers, values=lambda namespace: [namespace["metadata"]["name"]]
    )
