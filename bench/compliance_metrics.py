"""What a scrape of the compliance and Degraded metrics costs, and what the per-event counting adds.

``python -m bench.compliance_metrics [--users 10000] [--namespaces 20] [--servers 2] [--scrapes 20]``

Builds N synthetic DatabaseUser dicts as the informer's cache holds them (a generated password, a rotation
status, some Retained past their grace period, some with a global grant, TLS on a third, a password lifetime
and an expiry on a quarter, a Ready condition, a fiftieth Degraded), and times the exposition of a registry
holding a :class:`~dbuser_operator.controllers.databaseuser.compliance.ComplianceCollector` and a
:class:`~dbuser_operator.controllers.kit.degraded.DegradedCollector` (``generate_latest``: what the metrics
endpoint does per scrape), in process CPU seconds and wall time, with the number of series it returns: once
with the objects attached as a snapshot (counted whole at each scrape: what every scrape cost before the
counts were kept per event), once with an informer holding them attached (counted as its events come). Then
the per-event cost of the counts (both collectors' handlers): an add (the attach hands the cache over as
adds), an update (a rotation: new times, Retained) and a delete, and the memory the compliance counts hold
per user and the Degraded counts per resource (tracemalloc). Benchmark code, not a product path.
"""

from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.registry import Collector

from dbuser_operator.controllers.databaseuser.compliance import ComplianceCollector
from dbuser_operator.controllers.databaseuser.compliance_counts import UserCounts
from dbuser_operator.controllers.kit.degraded import DegradedCollector, DegradedCounts
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.runtime.informer import Informer


def synthetic_users(count: int, namespaces: int, servers: int) -> list[dict[str, Any]]:
    """``count`` DatabaseUsers spread over ``namespaces`` by ``servers`` (server resources in each
    namespace), with varied rotation times (no two alike to the second)."""
    now = datetime.now(UTC)
    users = []
    for i in range(count):
        namespace = f"team-{i % namespaces}"
        last = now - timedelta(seconds=37 * i)
        spec: dict[str, Any] = {
            "generatedPassword": {},
            "rotation": {"period": "720h"},
            "serverRef": {"kind": "MySQLServer", "name": f"server-{(i // namespaces) % servers}"},
            "requireTLS": i % 3 == 0,
            "privileges": [{"database": "*" if i % 50 == 0 else "app", "privileges": ["SELECT"]}],
        }
        if i % 4 == 0:
            spec["account"] = {"passwordExpire": "90d", "expiresAt": _rfc3339(now + timedelta(days=i % 30))}
        rotation = {
            "phase": "Retained" if i % 10 == 0 else "Discarded",
            "lastRotationTime": _rfc3339(last),
            "nextRotationTime": _rfc3339(last + timedelta(hours=720)),
            "retainedSince": _rfc3339(last),
        }
        users.append(
            {
                "apiVersion": "mysql.dbuser-operator.dev/v1alpha1",
                "kind": "DatabaseUser",
                "metadata": {
                    "name": f"user-{i}",
                    "namespace": namespace,
                    "uid": f"00000000-0000-0000-0000-{i:012d}",
                    "generation": 1,
                    "creationTimestamp": _rfc3339(last - timedelta(days=1)),
                },
                "spec": spec,
                "status": {
                    "hosts": ["%"],
                    "user": f"user-{i}",
                    "rotation": rotation,
                    "conditions": [_ready(i % 50 == 7)],
                },
            }
        )
    return users


def _ready(degraded: bool) -> dict[str, Any]:
    reason = "SecretNotFound" if degraded else "AccountReady"
    return {"type": "Ready", "status": str(not degraded), "reason": reason, "observedGeneration": 1}


def _rfc3339(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def rotated(user: dict[str, Any]) -> dict[str, Any]:
    """``user`` after a rotation: new times, its old password Retained (a new resourceVersion's object)."""
    now = datetime.now(UTC)
    rotation = {
        "phase": "Retained",
        "lastRotationTime": _rfc3339(now),
        "nextRotationTime": _rfc3339(now + timedelta(hours=720)),
        "retainedSince": _rfc3339(now),
    }
    return {**user, "status": {**user["status"], "rotation": rotation}}


def scrape_cost(collectors: Sequence[Collector], scrapes: int) -> dict[str, float]:
    """Median and worst CPU and wall seconds per scrape of ``collectors``, and the number of series."""
    registry = CollectorRegistry()
    for collector in collectors:
        registry.register(collector)
    text = generate_latest(registry).decode()  # warm (the time caches)
    cpu, wall = [], []
    for _ in range(scrapes):
        cpu_start, wall_start = time.process_time(), time.perf_counter()
        generate_latest(registry)
        cpu.append(time.process_time() - cpu_start)
        wall.append(time.perf_counter() - wall_start)
    series = sum(1 for line in text.splitlines() if line and not line.startswith("#"))
    return {
        "cpu_median": statistics.median(cpu),
        "cpu_max": max(cpu),
        "wall_median": statistics.median(wall),
        "series": float(series),
    }


def measure(users: list[dict[str, Any]], scrapes: int) -> dict[str, dict[str, float]]:
    """The scrape's cost over a snapshot and over an informer; each event's cost; the counts' memory."""
    compliance, degraded = ComplianceCollector(), DegradedCollector()
    compliance.attach(users)
    degraded.attach({"DatabaseUser": users})
    snapshot = scrape_cost([compliance, degraded], scrapes)
    informer = Informer(cast(Any, None), DATABASE_USERS)
    for user in users:
        informer.store.put(user)
    compliance, degraded = ComplianceCollector(), DegradedCollector()
    compliance.attach(informer)
    degraded.attach({"DatabaseUser": informer})
    events = scrape_cost([compliance, degraded], scrapes)
    return {"snapshot": snapshot, "events": events, "event": event_cost(users)}


def event_cost(users: list[dict[str, Any]]) -> dict[str, float]:
    """CPU microseconds per add, update and delete of both collectors' counts, and bytes per user held by
    the compliance counts and by the Degraded counts."""
    counts, degraded = UserCounts(), DegradedCounts("DatabaseUser")
    changed = [rotated(user) for user in users]
    found = {}
    for name, step in (
        ("add", lambda i: (counts.on_add(users[i]), degraded.on_add(users[i]))),
        (
            "update",
            lambda i: (counts.on_update(users[i], changed[i]), degraded.on_update(users[i], changed[i])),
        ),
        ("delete", lambda i: (counts.on_delete(changed[i]), degraded.on_delete(changed[i]))),
    ):
        start = time.process_time()
        for i in range(len(users)):
            step(i)
        found[name] = (time.process_time() - start) / len(users) * 1e6
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    held = UserCounts.of(users)
    found["bytes"] = (tracemalloc.get_traced_memory()[0] - before) / len(users)
    before = tracemalloc.get_traced_memory()[0]
    flags = DegradedCounts("DatabaseUser")
    for user in users:
        flags.on_add(user)
    found["degraded_bytes"] = (tracemalloc.get_traced_memory()[0] - before) / len(users)
    tracemalloc.stop()
    del held, flags
    return found


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", default="10000", help="comma-separated sizes")
    parser.add_argument("--namespaces", type=int, default=20)
    parser.add_argument("--servers", type=int, default=2)
    parser.add_argument("--scrapes", type=int, default=20)
    args = parser.parse_args(argv)
    print(
        "| users | series | CPU per scrape, snapshot (median / worst) | per event (median / worst) |"
        " wall, snapshot / per event | add / update / delete (µs) | bytes per user (compliance / Degraded) |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for size in (int(part) for part in args.users.split(",")):
        found = measure(synthetic_users(size, args.namespaces, args.servers), args.scrapes)
        before, after, event = found["snapshot"], found["events"], found["event"]
        print(
            f"| {size} | {after['series']:.0f}"
            f" | {before['cpu_median'] * 1000:.1f} / {before['cpu_max'] * 1000:.1f} ms"
            f" | {after['cpu_median'] * 1000:.2f} / {after['cpu_max'] * 1000:.2f} ms"
            f" | {before['wall_median'] * 1000:.1f} / {after['wall_median'] * 1000:.2f} ms"
            f" | {event['add']:.1f} / {event['update']:.1f} / {event['delete']:.1f}"
            f" | {event['bytes']:.0f} / {event['degraded_bytes']:.0f} |"
        )


if __name__ == "__main__":
    main()
