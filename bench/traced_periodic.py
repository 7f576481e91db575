"""Under ``BENCH_TRACEMALLOC_PERIODIC=1`` (with ``BENCH_TRACEMALLOC=1``): what the operator's periodic tasks
allocate, for finding which one makes the high-water mark; diagnosis only.

:func:`install` wraps the periodic checks (the drift check, each server of it and its access reports, the
role drift check) and appends a JSON line per call to ``$BENCH_TRACEMALLOC_OUT.periodic.jsonl``: the
allocations traced when it started and ended, the highest since it started (tracemalloc's peak: checks that
overlap share it), and the RSS. With ``BENCH_TRACEMALLOC_PERIODIC=top``, the top lines of what is allocated
when the access reports' publication starts are written too (the snapshot itself costs the process tens of
MiB of RSS).
"""

from __future__ import annotations

import functools
import json
import os
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ENV = "BENCH_TRACEMALLOC_PERIODIC"
_PAGE = os.sysconf("SC_PAGE_SIZE")


def _rss_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * _PAGE / 2**20


def _write(record: dict[str, Any]) -> None:
    path = Path(os.environ.get("BENCH_TRACEMALLOC_OUT", "tracemalloc.json") + ".periodic.jsonl")
    with path.open("a") as out:
        out.write(json.dumps(record) + "\n")


def _top(limit: int = 25) -> list[list[Any]]:
    snapshot = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
    stats = snapshot.statistics("lineno")[:limit]
    return [[str(stat.traceback), round(stat.size / 1024, 1), stat.count] for stat in stats]


def _traced(name: str, method: Callable[..., Awaitable[Any]], *, peak: bool, top: bool) -> Callable[..., Any]:
    @functools.wraps(method)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        start, started, rss = tracemalloc.get_traced_memory()[0], time.time(), _rss_mib()
        record: dict[str, Any] = {"task": name, "at": round(started, 1), "rss_before_mib": round(rss, 1)}
        if len(args) > 1 and isinstance(args[1], str):
            record["server"] = args[1]
        if top:
            record["top"] = _top()
        if peak:
            tracemalloc.reset_peak()
        try:
            return await method(*args, **kwargs)
        finally:
            current, highest = tracemalloc.get_traced_memory()
            record |= {
                "seconds": round(time.time() - started, 2),
                "start_kib": round(start / 1024),
                "end_kib": round(current / 1024),
                "peak_above_start_kib": round((highest - start) / 1024),
                "rss_after_mib": round(_rss_mib(), 1),
            }
            _write(record)

    return wrapper


def install() -> None:
    """Wrap the periodic checks (imports the operator's modules: call it under tracemalloc)."""
    from dbuser_operator.controllers.databaseuser.drift import DriftCheck  # noqa: PLC0415
    from dbuser_operator.controllers.databaseuser.role_drift import RoleDriftCheck  # noqa: PLC0415

    targets: list[tuple[Any, str, bool, bool]] = [
        (DriftCheck, "check", True, False),
        (DriftCheck, "_check_server", False, False),
        (DriftCheck, "_publish", False, os.environ.get(ENV) == "top"),
        (RoleDriftCheck, "check", True, False),
    ]
    for cls, attribute, peak, top in targets:
        name = f"{cls.__name__}.{attribute}"
        setattr(cls, attribute, _traced(name, getattr(cls, attribute), peak=peak, top=top))
