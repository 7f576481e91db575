"""The side-by-side runs of :mod:`bench.mariadb_operator` as a line each and as a Markdown table."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any


def summary_line(row: dict[str, Any]) -> str:
    rotation = row["rotation"]
    return (
        f"{row['seconds'] or float('nan'):.1f} s, CPU {row['cpu_seconds_settled']:.1f} s, "
        f"peak RSS {row['peak_rss_10s_later_mib']:.1f} MiB, "
        f"{row['api_writes_per_user']:.2f} API writes and "
        f"{row['sql_statements_per_user']:.2f} SQL statements per user; "
        f"rotation p50 {rotation['p50_ms']:.0f} ms, "
        f"{rotation['api_writes_per_rotation']:.2f} API / "
        f"{rotation['sql_writes_per_rotation']:.2f} SQL writes"
    )


TABLE_HEAD = (
    "| round | implementation | time to all Ready s | CPU s | CPU ratio | peak RSS MiB | API writes/user "
    "| SQL statements/user | SQL writes/user | rotation p50 / p99 ms | API / SQL writes per rotation "
    "| CPU ms per rotation |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def table(runs: Sequence[dict[str, Any]]) -> str:
    """The runs as a Markdown table, and the median CPU ratio of the rounds; the CPU ratio is
    dbuser-operator's CPU seconds over mariadb-operator's in the same round (to the last trailing write)."""
    peer_cpu = {
        row["round"]: row["cpu_seconds_settled"]
        for row in runs
        if row["implementation"] == "mariadb-operator"
    }
    lines = [TABLE_HEAD]
    ratios: list[float] = []
    for row in runs:
        rotation = row["rotation"]
        ratio = row["cpu_seconds_settled"] / peer_cpu[row["round"]] if row["round"] in peer_cpu else None
        if ratio is not None and row["implementation"] == "dbuser-operator":
            ratios.append(ratio)
        first = row.get("first")  # older results do not say
        cells = [
            f"{row['round']} ({first} first)" if first else str(row["round"]),
            row["implementation"],
            f"{row['seconds']:.1f}" if row["seconds"] is not None else "not converged",
            f"{row['cpu_seconds_settled']:.1f}",
            f"{ratio:.2f}" if ratio is not None and row["implementation"] == "dbuser-operator" else "",
            f"{max(row['peak_rss_mib'], row['peak_rss_10s_later_mib']):.1f}",
            f"{row['api_writes_per_user']:.2f}",
            f"{row['sql_statements_per_user']:.2f}",
            f"{row['sql_writes_per_user']:.2f}",
            f"{rotation['p50_ms']:.0f} / {rotation['p99_ms']:.0f}",
            f"{rotation['api_writes_per_rotation']:.2f} / {rotation['sql_writes_per_rotation']:.2f}",
            f"{1000 * rotation['cpu_seconds'] / max(1, rotation['samples']):.1f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    if ratios:
        lines.append(f"\nCPU ratio, median of {len(ratios)} round(s): {statistics.median(ratios):.2f}")
    return "\n".join(lines)
