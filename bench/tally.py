"""A window of work counted the same way whoever did it: API writes by the API server, SQL by the server,
CPU by ``/proc`` — for comparing implementations that expose different metrics of their own (or none).

- API writes: ``apiserver_request_total`` of verbs other than GET, LIST and WATCH, Leases excluded
  (:func:`bench.common.apiserver_writes`), less the writes the harness itself sent (its client counts them);
- SQL: the server's ``Questions`` (statements) and ``Com_*`` counters (:data:`bench.common.SQL_COUNTERS`),
  less the harness's own statements (the ``SHOW GLOBAL STATUS`` that reads them, a login's
  ``SET AUTOCOMMIT``);
- CPU: user + system seconds of the process, from ``/proc/<pid>/stat``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubernetes_asyncio import client

from bench.common import (
    SQL_WRITE_COUNTERS,
    MySQLAddress,
    apiserver_writes,
    changed_counters,
    counter_delta,
    rotate_password,
    sample_process,
    settle_writes,
    sql_counters_of,
)
from bench.scenarios import Bench, percentile
from dbuser_operator.runtime.client import KubeClient


@dataclass(frozen=True)
class Reading:
    """The counters at one moment."""

    api_writes: Mapping[str, float]  # by resource (and subresource), Leases excluded
    harness_writes: float
    sql: Mapping[str, float]
    cpu_seconds: float
    at: float


async def read(api: client.ApiClient, servers: Sequence[MySQLAddress], pid: int) -> Reading:
    """The API server's write counters, the harness's own writes, the SQL counters, the process's CPU."""
    writes = await apiserver_writes(api)
    return Reading(
        writes, Bench.harness_writes(), await sql_counters_of(servers), _cpu(pid), time.monotonic()
    )


def _cpu(pid: int) -> float:
    return sample_process(pid).cpu_seconds


def difference(before: Reading, after: Reading, *, harness_statements: int, per: int) -> dict[str, Any]:
    """What happened between two readings: API writes (the harness's own taken out), SQL statements and
    writes (``harness_statements`` of the harness's own taken out), CPU seconds; each also ``per`` unit."""
    by_resource = changed_counters(before.api_writes, after.api_writes)
    api_writes = sum(by_resource.values()) - (after.harness_writes - before.harness_writes)
    sql = counter_delta(before.sql, after.sql)
    sql["Questions"] = sql.get("Questions", 0) - harness_statements
    sql_writes = sum(sql.get(name, 0) for name in SQL_WRITE_COUNTERS)
    cpu = after.cpu_seconds - before.cpu_seconds
    return {
        "api_writes": api_writes,
        "api_writes_per": api_writes / per,
        "apiserver_writes_by_resource": by_resource,
        "sql": sql,
        "sql_statements_per": sql["Questions"] / per,
        "sql_writes_per": sql_writes / per,
        "cpu_seconds": cpu,
        "wall_seconds": after.at - before.at,
    }


async def rotation(
    api: client.ApiClient,
    kube: KubeClient,
    server: MySQLAddress,
    pid: int,
    *,
    namespace: str,
    accounts: Sequence[tuple[str, str]],
) -> dict[str, Any]:
    """Each ``(Secret name, MySQL user)`` given a new password, one at a time; the time until the new one
    logs in (p50, p99, max), and the writes, statements and CPU seconds per rotation, counted by
    :func:`difference` once the API server has served the last trailing write."""
    before = await read(api, [server], pid)
    latencies: list[float] = []
    tries = 0
    for secret_name, user in accounts:
        seconds, attempts, _ = await rotate_password(kube, namespace, secret_name, server, user)
        tries += attempts
        if seconds is not None:
            latencies.append(seconds)
    await settle_writes(api)
    after = await read(api, [server], pid)
    # the SHOW GLOBAL STATUS that read ``after``, and the SET AUTOCOMMIT of each login that succeeded
    counted = difference(before, after, harness_statements=1 + len(latencies), per=max(1, len(accounts)))
    return {
        "samples": len(accounts),
        "timeouts": len(accounts) - len(latencies),
        "login_tries_per_rotation": tries / max(1, len(accounts)),
        "p50_ms": 1000 * percentile(latencies, 0.50),
        "p99_ms": 1000 * percentile(latencies, 0.99),
        "max_ms": 1000 * max(latencies, default=float("nan")),
        "latencies_ms": [round(1000 * value, 2) for value in latencies],
        "api_writes_per_rotation": counted["api_writes_per"],
        "sql_writes_per_rotation": counted["sql_writes_per"],
        "sql_statements_per_rotation": counted["sql_statements_per"],
        "cpu_seconds": counted["cpu_seconds"],
        "apiserver_writes_by_resource": counted["apiserver_writes_by_resource"],
        "sql": counted["sql"],
    }
