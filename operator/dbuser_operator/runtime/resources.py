"""Which Kubernetes resource a request is about, and the object keys the runtime passes around."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple


@dataclass(frozen=True)
class Resource:
    """A resource type of the API: its group, version, plural name and kind."""

    group: str  # "" for the core group
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        """``group/version``, or only ``version`` for the core group."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        """The REST path: ``/apis/g/v[/namespaces/ns]/plural[/name[/subresource]]``."""
        parts = ["/api", self.version] if not self.group else ["/apis", self.group, self.version]
        if self.namespaced and namespace:
            parts += ["namespaces", namespace]
        parts.append(self.plural)
        if name:
            parts.append(name)
            if subresource:
                parts.append(subresource)
        return "/".join(parts)


class ObjectKey(NamedTuple):
    """The namespace (empty for cluster-scoped objects) and name of an object."""

    namespace: str
    name: str

    @classmethod
    def of(cls, obj: dict[str, Any]) -> ObjectKey:
        """The key of an object as the API returns it."""
        metadata = obj["metadata"]
        return cls(metadata.get("namespace") or "", metadata["name"])

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


SECRETS = Resource("", "v1", "secrets", "Secret")
EVENTS = Resource("", "v1", "events", "Event")
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
