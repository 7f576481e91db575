"""``dbuser_operator_resources_degraded{kind, namespace}``: resources the operator stopped trying on until
something changes — ``Ready=False`` with a reason of the kind's Degraded list, as the Argo CD health checks
read them (:mod:`dbuser_operator.api.argocd_health`) — counted as the informers' events come (a scrape costs
the kinds and namespaces, not the resources); any other iterable of objects (a snapshot) at each scrape.

Exported by the leader only (a leader task attaches the caches while it leads), so that replicas never count
a resource twice. A series per kind and namespace with resources in the cache, zeros included."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Final

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from dbuser_operator.api.argocd_health import DEGRADED_REASONS
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.metrics import REGISTRY

NAME: Final = "dbuser_operator_resources_degraded"

Stores = Mapping[str, Iterable[dict[str, Any]] | Informer]  # kind → its informer, or a snapshot of objects


def is_degraded(kind: str, obj: dict[str, Any]) -> bool:
    """Whether the resource reads as Degraded: not Paused, not being deleted, and its Ready condition of
    the current generation False with a reason of ``kind``'s Degraded list."""
    metadata, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    if spec.get("managementPolicy") == "Paused" or metadata.get("deletionTimestamp"):
        return False
    conditions = (obj.get("status") or {}).get("conditions") or []
    ready = next((c for c in conditions if c.get("type") == "Ready"), None)
    if ready is None or ready.get("status") != "False":
        return False
    generation, observed = metadata.get("generation"), ready.get("observedGeneration")
    if generation is not None and observed is not None and observed < generation:
        return False  # not reconciled yet: Progressing
    return ready.get("reason") in DEGRADED_REASONS.get(kind, frozenset())


class DegradedCounts:
    """The resources and the Degraded ones of one kind's cache by namespace, kept by its informer's events;
    read by a scrape in another thread (one lock). A namespace keeps whether each of its cached names (the
    objects' own strings) is Degraded: a dict by name (a set, sparser, costs more), no key object."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._degraded: dict[str, dict[str, bool]] = {}  # namespace → name → whether it is Degraded
        self._counts: Counter[str] = Counter()  # the Degraded ones by namespace
        self._lock = threading.Lock()

    def on_add(self, obj: dict[str, Any]) -> None:
        """Count ``obj``."""
        self._put(obj, is_degraded(self.kind, obj))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        """Count ``new`` instead of what its key counted before."""
        self._put(new, is_degraded(self.kind, new))

    def on_delete(self, obj: dict[str, Any]) -> None:
        """Take back what the key of ``obj`` counted."""
        self._put(obj, None)

    def counts(self) -> dict[str, int]:
        """The Degraded resources by namespace, zeros included for namespaces with resources."""
        with self._lock:
            return {namespace: self._counts[namespace] for namespace in self._degraded}

    def _put(self, obj: dict[str, Any], degraded: bool | None) -> None:
        metadata = obj["metadata"]
        namespace, name = metadata.get("namespace") or "", metadata["name"]
        with self._lock:
            names = self._degraded.get(namespace)
            was = names.pop(name, None) if names is not None else None  # popped: the newest name kept
            if was is not None:
                self._counts[namespace] -= was
            if degraded is not None:
                if names is None:
                    names = self._degraded[namespace] = {}
                names[name] = degraded
                self._counts[namespace] += degraded
            elif names is not None and not names:
                del self._degraded[namespace], self._counts[namespace]


class DegradedCollector(Collector):
    """Counts the Degraded resources of every attached set of caches (one per manager in this process)."""

    def __init__(self) -> None:
        self._sources: list[tuple[Stores, list[DegradedCounts]]] = []

    def attach(self, stores: Stores) -> Callable[[], None]:
        """Count the objects of ``stores`` (an informer's by its events from now on); returns what detaches
        them."""
        handlers = [
            (informer, DegradedCounts(kind))
            for kind, informer in stores.items()
            if isinstance(informer, Informer)
        ]
        for informer, counts in handlers:
            informer.add_handler(counts)  # the cached objects as adds, then every change
        source = (stores, [counts for _, counts in handlers])
        self._sources.append(source)

        def detach() -> None:
            if source in self._sources:
                self._sources.remove(source)
                for informer, counts in handlers:
                    informer.remove_handler(counts)

        return detach

    def describe(self) -> Iterator[Metric]:
        yield self._family()

    def collect(self) -> Iterator[Metric]:
        counts: Counter[tuple[str, str]] = Counter()
        for stores, counted in list(self._sources):
            for kind_counts in counted:
                for namespace, count in kind_counts.counts().items():
                    counts[(kind_counts.kind, namespace)] += count
            for kind, objects in stores.items():
                if isinstance(objects, Informer):
                    continue
                for obj in list(objects):
                    key = (kind, str((obj.get("metadata") or {}).get("namespace") or ""))
                    counts[key] += is_degraded(kind, obj)
        family = self._family()
        for key, count in sorted(counts.items()):
            family.add_metric(list(key), float(count))
        yield family

    @staticmethod
    def _family() -> GaugeMetricFamily:
        return GaugeMetricFamily(
            NAME,
            "Resources whose Ready is False for a reason the operator does not get past without a change "
            "(Argo CD's Degraded), by kind and namespace",
            labels=["kind", "namespace"],
        )


async def export_while_leading(stores: Stores, collector: DegradedCollector) -> None:
    """A leader task: export the Degraded counts of ``stores`` until cancelled (leadership lost, shutdown)."""
    detach = collector.attach(stores)
    try:
        await asyncio.Event().wait()
    finally:
        detach()


DEGRADED = DegradedCollector()
REGISTRY.register(DEGRADED)
