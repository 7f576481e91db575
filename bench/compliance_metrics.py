"""What a scrape of the compliance metrics costs: CPU per ``collect()`` over N cached DatabaseUsers.

``python -m bench.compliance_metrics [--users 10000] [--namespaces 20] [--servers 2] [--scrapes 20]``

Builds N synthetic DatabaseUser dicts as the informer's cache holds them (a generated password, a rotation
status, some Retained past their grace period, some with a global grant, TLS on a third, a password lifetime
and an expiry on a quarter), attaches them to a fresh
:class:`~dbuser_operator.controllers.databaseuser.compliance.ComplianceCollector`, and times the exposition
of a registry holding it alone (``generate_latest``: what the metrics endpoint does per scrape), in process
CPU seconds and wall time, with the number of series it returns. Benchmark code, not a product path.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest

from dbuser_operator.controllers.databaseuser.compliance import ComplianceCollector


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
                "status": {"hosts": ["%"], "user": f"user-{i}", "rotation": rotation},
            }
        )
    return users


def _rfc3339(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def measure(users: list[dict[str, Any]], scrapes: int) -> dict[str, float]:
    """Median and worst CPU and wall seconds per scrape, and the number of series of one."""
    registry = CollectorRegistry()
    collector = ComplianceCollector()
    collector.attach(users)
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


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", default="10000", help="comma-separated sizes")
    parser.add_argument("--namespaces", type=int, default=20)
    parser.add_argument("--servers", type=int, default=2)
    parser.add_argument("--scrapes", type=int, default=20)
    args = parser.parse_args(argv)
    print("| users | series | CPU per scrape (median) | CPU (worst) | wall (median) |")
    print("|---:|---:|---:|---:|---:|")
    for size in (int(part) for part in args.users.split(",")):
        found = measure(synthetic_users(size, args.namespaces, args.servers), args.scrapes)
        print(
            f"| {size} | {found['series']:.0f} | {found['cpu_median'] * 1000:.1f} ms"
            f" | {found['cpu_max'] * 1000:.1f} ms | {found['wall_median'] * 1000:.1f} ms |"
        )


if __name__ == "__main__":
    main()
