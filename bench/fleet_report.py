"""The fleet's table and plot (``results.json``'s ``fleet`` rows): ``python -m bench.fleet_report RESULTS.json
[...] --out PNG`` renders them again, merging the rows of several files (later files win for the same N)."""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def _number(value: Any, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def table(results: dict[str, Any]) -> str:
    """The fleet rows as Markdown: convergence, then the restart."""
    rows = sorted(results.get("fleet") or [], key=lambda row: row["n"])
    if not rows:
        return ""
    lines = [
        "Fleet (every user seeded first, then the operator started; time from its start until all Ready):",
        "",
        "| N | servers | Ready | s to all Ready | operator CPU s (ms/user) | peak RSS MiB | settled RSS MiB "
        "| KiB per account | API writes/user | SQL statements/user | kube-apiserver CPU s | etcd CPU s "
        "| mysqld CPU s | seeding s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['n']} | {row['servers']} | {row['ready']}/{row['n']} | {_number(row['seconds'])} "
            f"| {_number(row['cpu_seconds'])} ({_number(row['cpu_ms_per_user'], 2)}) "
            f"| {_number(row['peak_rss_mib'])} | {_number(row['settled_rss_mib'])} "
            f"| {_number(row['kib_per_account'], 2)} | {_number(row['api_writes_per_user'], 2)} "
            f"| {_number(row['sql_statements_per_user'], 2)} | {_number(row['apiserver_cpu_seconds'])} "
            f"| {_number(row['etcd_cpu_seconds'])} | {_number(row['mysqld_cpu_seconds'])} "
            f"| {_number(row['seed_seconds'])} |"
        )
    restarts = [(row["n"], row["restart"]) for row in rows if row.get("restart")]
    if restarts:
        lines += [
            "",
            "Restart (the converged operator stopped and started again; writes counted until its first pass "
            "ended and for the window after):",
            "",
            "| N | ready probe s | every resource checked s | API writes (API server / its own) "
            "| SQL writes | SQL statements per resource | per server | found converged "
            "| CPU s | peak RSS MiB |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for n, restart in restarts:
            lines.append(
                f"| {n} | {_number(restart['seconds_to_ready_probe'])} "
                f"| {_number(restart['seconds_to_first_pass_done'])} "
                f"| {_number(restart['apiserver_writes'], 0)} / {_number(restart['operator_api_writes'], 0)} "
                f"| {_number(restart['sql_writes'], 0)} | {_number(restart['sql_statements_per_object'], 2)} "
                f"| {_number(restart.get('sql_statements_per_server', math.nan), 0)} "
                f"| {_number(restart.get('converged_at_start', math.nan), 0)} "
                f"| {_number(restart['cpu_seconds'])} | {_number(restart['peak_rss_mib'])} |"
            )
    return "\n".join(lines) + "\n"


def plot(results: dict[str, Any], path: Path) -> None:
    """Ready over time per N; time, CPU and memory against N."""
    import matplotlib as mpl  # noqa: PLC0415 - slow to import, only here

    mpl.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    rows = sorted(results.get("fleet") or [], key=lambda row: row["n"])
    if not rows:
        return
    sizes = [row["n"] for row in rows]
    figure, axes = plt.subplots(2, 2, figsize=(12, 8))
    ready, seconds, cpu, memory = axes[0][0], axes[0][1], axes[1][0], axes[1][1]
    for row in rows:
        points = row.get("timeline") or []
        ready.plot([p[0] for p in points], [p[1] for p in points], label=f"N={row['n']}")
    ready.set(title="users Ready since the operator's start", xlabel="s", ylabel="Ready")
    ready.legend()
    seconds.plot(sizes, [row["seconds"] for row in rows], "o-", label="all Ready")
    restarts = [(row["n"], row["restart"]) for row in rows if row.get("restart")]
    if restarts:
        seconds.plot(
            [n for n, _ in restarts],
            [r["seconds_to_first_pass_done"] for _, r in restarts],
            "s--",
            label="restart: every resource checked",
        )
    seconds.set(title="seconds", xlabel="N users")
    seconds.legend()
    for key, label in (
        ("cpu_seconds", "operator"),
        ("apiserver_cpu_seconds", "kube-apiserver"),
        ("etcd_cpu_seconds", "etcd"),
        ("mysqld_cpu_seconds", "mysqld (all)"),
    ):
        cpu.plot(sizes, [row[key] for row in rows], "o-", label=label)
    cpu.set(title="CPU seconds until all Ready", xlabel="N users")
    cpu.legend()
    memory.plot(sizes, [row["peak_rss_mib"] for row in rows], "o-", label="peak")
    memory.plot(sizes, [row["settled_rss_mib"] for row in rows], "o-", label="settled")
    if restarts:
        peaks = [r["peak_rss_mib"] for _, r in restarts]
        memory.plot([n for n, _ in restarts], peaks, "s--", label="restart peak")
    memory.set(title="operator RSS MiB", xlabel="N users")
    memory.legend()
    for axis in (seconds, cpu, memory):
        axis.grid(alpha=0.3)
    ready.grid(alpha=0.3)
    figure.suptitle(f"{rows[0]['servers']} servers ({', '.join(sorted(set(rows[0]['flavours'])))})")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def merged(paths: Sequence[Path]) -> dict[str, Any]:
    """The fleet rows of several results files, one per N (the later file's)."""
    by_n: dict[int, dict[str, Any]] = {}
    for path in paths:
        for row in json.loads(path.read_text()).get("fleet") or []:
            by_n[int(row["n"])] = row
    return {"fleet": [by_n[n] for n in sorted(by_n)]}


def main(argv: Sequence[str] | None = None) -> int:
    arguments = argparse.ArgumentParser(prog="python -m bench.fleet_report", description=__doc__)
    arguments.add_argument("results", type=Path, nargs="+")
    arguments.add_argument("--out", type=Path, required=True, help="the plot (PNG)")
    parsed = arguments.parse_args(argv)
    results = merged(parsed.results)
    print(table(results))
    plot(results, parsed.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
