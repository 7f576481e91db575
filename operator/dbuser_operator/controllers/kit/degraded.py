"""``dbuser_operator_resources_degraded{kind, namespace}``: resources the operator stopped trying on until
something changes — ``Ready=False`` with a reason of the kind's Degraded list, as the Argo CD health checks
read them (:mod:`dbuser_operator.api.argocd_health`) — counted at scrape time from the informers' caches.

Exported by the leader only (a leader task attaches the caches while it leads), so that replicas never count
a resource twice. A series per kind and namespace with resources in the cache, zeros included."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Final

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from dbuser_operator.api.argocd_health import DEGRADED_REASONS
from dbuser_operator.runtime.metrics import REGISTRY

NAME: Final = "dbuser_operator_resources_degraded"

Stores = Mapping[str, Iterable[dict[str, Any]]]  # kind → the objects of its informer's cache


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


class DegradedCollector(Collector):
    """Counts the Degraded resources of every attached set of caches (one per manager in this process)."""

    def __init__(self) -> None:
        self._sources: list[Stores] = []

    def attach(self, stores: Stores) -> Callable[[], None]:
        """Count the objects of ``stores``; returns what detaches them."""
        self._sources.append(stores)
        return lambda: self._sources.remove(stores) if stores in self._sources else None

    def describe(self) -> Iterator[Metric]:
        yield self._family()

    def collect(self) -> Iterator[Metric]:
        counts: Counter[tuple[str, str]] = Counter()
        for stores in list(self._sources):
            for kind, objects in stores.items():
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
