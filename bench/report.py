"""Targets, the results table, the JSON and the PNG plot."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

# The targets.
CONVERGENCE_VS_FLOOR = 1.5  # operator time ÷ floor time, at N = 1000 and 5000
MANY_SERVERS_VS_FLOOR = 1.2  # the same over several servers (--servers K > 1), live and backlog, at N=10 000
FASTER_THAN_KOPF = 3.0  # kopf time ÷ operator time
ROTATION_P99_MS = 1000.0
IDLE_CPU_PERCENT = 1.0
IDLE_SELECTS_PER_CHECK = 20  # "batched": a constant number of queries per drift check, not one per user
COLD_START_RSS_MIB = 200.0
API_WRITES_PER_USER = 3.0


def _convergence(
    results: dict[str, Any], kind: str, n: int, section: str = "convergence"
) -> dict[str, Any] | None:
    for row in results.get(section, []):
        if row["implementation"] == kind and row["n"] == n and row["converged"]:
            return dict(row)
    return None


def pair_ratios(results: dict[str, Any], n: int) -> list[float]:
    """Live operator ÷ floor of each pair at ``n`` (``--pairs``; rows without a pair are pair 0), both
    converged, in pair order."""
    seconds: dict[tuple[str, int], float] = {}
    for row in results.get("convergence", []):
        if row["n"] == n and row["converged"] and row["implementation"] in ("operator", "floor"):
            seconds.setdefault((row["implementation"], row.get("pair", 0)), float(row["seconds"]))
    pairs = sorted({pair for _, pair in seconds})
    return [
        seconds[("operator", pair)] / seconds[("floor", pair)]
        for pair in pairs
        if ("operator", pair) in seconds and ("floor", pair) in seconds
    ]


def _kopf_seconds(results: dict[str, Any], n: int, section: str) -> tuple[float, str] | None:
    """kopf's time, or a lower bound when it was given up on; and the unit to show."""
    for row in results.get(section, []):
        if row["implementation"] == "kopf" and row["n"] == n:
            if row["converged"]:
                return float(row["seconds"]), "x"
            if row.get("gave_up_after_seconds"):
                return float(row["gave_up_after_seconds"]), "x at least (kopf gave up)"
    return None


def evaluate(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Each target: what was measured, and whether it passed (None: not measured in this run)."""
    targets: list[dict[str, Any]] = []

    def add(name: str, target: str, value: float | None, passed: bool | None, unit: str = "") -> None:
        targets.append({"name": name, "target": target, "value": value, "unit": unit, "pass": passed})

    many = results.get("options", {}).get("servers", 1) > 1
    # --floor-events: the floor posts the operator's one Event per new user too
    floor_name = "floor with Events" if results.get("options", {}).get("floor_events") else "floor"
    limit = MANY_SERVERS_VS_FLOOR if many else CONVERGENCE_VS_FLOOR
    sizes = sorted({row["n"] for row in results.get("convergence", [])})
    for n in sizes:
        operator, floor = (_convergence(results, kind, n) for kind in ("operator", "floor"))
        ratios = pair_ratios(results, n)
        if ratios:
            ratio = statistics.median(ratios)
            judged = n >= 1000 or results.get("smoke")
            median = f" (median of {len(ratios)} pairs)" if len(ratios) > 1 else ""
            add(
                f"convergence N={n} vs {floor_name}{median}",
                f"≤ {limit}x floor" + ("" if judged else " (judged at N ≥ 1000)"),
                ratio,
                ratio <= limit if judged else None,
                "x",
            )
            if len(ratios) > 1:
                for pair, value in enumerate(ratios, 1):
                    first = "floor" if pair % 2 else "operator"
                    add(
                        f"convergence N={n} vs {floor_name}, pair {pair} ({first} first)",
                        "-",
                        value,
                        None,
                        "x",
                    )
        if operator and (peer := _kopf_seconds(results, n, "convergence")):
            speedup = peer[0] / operator["seconds"]
            add(f"convergence N={n} vs kopf", f"≥ {FASTER_THAN_KOPF}x faster", speedup, speedup >= 3, peer[1])
        _ceiling(results, n, "convergence", add)
        if operator:
            writes = operator.get("operator_api_writes_per_user", operator["api_writes_per_user"])
            writes -= operator.get("server_resource_writes", 0) / n  # the servers' health, not the users'
            add(f"API writes per created user N={n}", f"≤ {API_WRITES_PER_USER:g}", writes, writes <= 3)
            dropped = operator.get("events_dropped")
            if dropped is not None:
                add(f"Events recorded N={n}", "none dropped", dropped, dropped == 0)
    for n in sorted({row["n"] for row in results.get("backlog", [])}):
        operator, floor = (_convergence(results, k, n, "backlog") for k in ("operator", "floor"))
        if operator and floor:
            ratio = operator["seconds"] / floor["seconds"]
            add(
                f"backlog N={n} vs floor (processing only)",
                f"≤ {limit}x floor",
                ratio,
                ratio <= limit if many and n >= 10_000 else None,
                "x",
            )
        if operator and (peer := _kopf_seconds(results, n, "backlog")):
            speedup = peer[0] / operator["seconds"]
            add(
                f"backlog N={n} vs kopf (processing only)",
                f"≥ {FASTER_THAN_KOPF}x faster",
                speedup,
                speedup >= FASTER_THAN_KOPF if n >= 1000 or results.get("smoke") else None,
                peer[1],
            )
        _ceiling(results, n, "backlog", add)
    for row in [*results.get("convergence", []), *results.get("backlog", [])]:
        if row["implementation"] == "operator" and not row["converged"]:
            add(f"convergence N={row['n']}", "all Ready", row["ready"], False)
    _steady_state_targets(results, add)
    return targets


Add = Callable[..., None]


def _ceiling(results: dict[str, Any], n: int, section: str, add: Add) -> None:
    """How much faster than kopf the floor is: no implementation of the job can beat that ratio."""
    floor, peer = _convergence(results, "floor", n, section), _kopf_seconds(results, n, section)
    if floor and peer:
        what = "" if section == "convergence" else " (processing only)"
        add(
            f"{section} N={n}: floor vs kopf{what}",
            "the ceiling of 'vs kopf'",
            peer[0] / floor["seconds"],
            None,
            peer[1],
        )


def _steady_state_targets(results: dict[str, Any], add: Add) -> None:
    """Rotation, idle cost and cold start."""
    rotation = results.get("rotation")
    if rotation:
        add("rotation p99", f"≤ {ROTATION_P99_MS:g} ms", rotation["p99_ms"], rotation["p99_ms"] <= 1000, "ms")
    idle = results.get("idle")
    if idle:
        add("idle API writes", "0", idle["operator_api_writes"], idle["operator_api_writes"] == 0)
        add("idle SQL writes", "0", idle["sql_writes"], idle["sql_writes"] == 0)
        checks = idle["drift_checks_expected"]
        per_check = idle["sql_selects"] / max(checks, 1)
        add(
            "idle drift checks batched",
            f"≤ {IDLE_SELECTS_PER_CHECK} SELECTs per check (N={idle['n']})",
            per_check,
            per_check <= IDLE_SELECTS_PER_CHECK,
        )
        add(
            "idle CPU",
            f"≤ {IDLE_CPU_PERCENT:g} % of a core",
            idle["cpu_percent_of_core"],
            idle["cpu_percent_of_core"] <= IDLE_CPU_PERCENT,
            "%",
        )
    cold = results.get("coldstart")
    if cold:
        writes = cold["operator_api_writes"] + cold["sql_writes"]
        add(f"cold start N={cold['n']} writes (API + SQL)", "0", writes, writes == 0)
        add(
            f"cold start N={cold['n']} peak RSS",
            f"≤ {COLD_START_RSS_MIB:g} MiB",
            cold["peak_rss_mib"],
            cold["peak_rss_mib"] <= COLD_START_RSS_MIB,
            "MiB",
        )


def _number(value: Any, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and math.isnan(value):
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _servers(row: dict[str, Any]) -> str:
    """CPU seconds the API server, etcd and MySQL spent meanwhile (when they run here)."""
    servers = row.get("server_cpu_seconds") or {}
    return _number(float(sum(servers.values())), 1) if servers else "-"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |"
    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |" for row in rows]
    return [line, rule, *body]


Column = tuple[str, Callable[[dict[str, Any]], str]]


def _api_writes(row: dict[str, Any]) -> str:
    return _number(row.get("operator_api_writes_per_user", row["api_writes_per_user"]))


_SHARED_HEAD: list[Column] = [
    ("N", lambda row: str(row["n"])),
    ("implementation", lambda row: str(row["implementation"])),
    ("Ready", lambda row: f"{row['ready']}/{row['n']}"),
]
_WRITES: list[Column] = [
    ("API writes/user", _api_writes),
    ("Events dropped", lambda row: _number(row.get("events_dropped"))),
    ("SQL stmts/user", lambda row: _number(row["sql_statements_per_user"], 1)),
    ("CPU s", lambda row: _number(row["cpu_seconds"], 1)),
]
_SHARED_TAIL: list[Column] = [
    ("servers' CPU s", _servers),
    ("peak RSS MiB", lambda row: _number(row["peak_rss_mib"], 0)),
    ("logins", lambda row: f"{row['logins_ok']}/{row['logins_checked']}"),
]
CONVERGENCE_COLUMNS: list[Column] = [
    *_SHARED_HEAD,
    ("total s", lambda row: _number(row["seconds"])),
    ("after last create s", lambda row: _number(row["after_last_create_seconds"])),
    ("objects/s", lambda row: _number(row["objects_per_second"], 0)),
    ("p50 ms", lambda row: _number(row["latency_p50_ms"], 0)),
    ("p99 ms", lambda row: _number(row["latency_p99_ms"], 0)),
    *_WRITES,
    *_SHARED_TAIL,
    ("canary ms", lambda row: _number(row.get("canary", {}).get("unit_ms_median"), 1)),
]
BACKLOG_COLUMNS: list[Column] = [
    *_SHARED_HEAD,
    ("s from start", lambda row: _number(row["seconds"])),
    ("objects/s", lambda row: _number(row["objects_per_second"], 0)),
    *_WRITES,
    ("CPU ms/user", lambda row: _number(row["cpu_ms_per_user"], 1)),
    *_SHARED_TAIL,
]


def _rows_table(title: str, rows: list[dict[str, Any]], columns: list[Column]) -> list[str]:
    """A titled Markdown table of ``rows``, one column per ``(header, cell)``; nothing without rows."""
    if not rows:
        return []
    cells = [[cell(row) for _, cell in columns] for row in rows]
    return [title, "", *_table([header for header, _ in columns], cells), ""]


def render_table(results: dict[str, Any]) -> str:
    """The results as Markdown tables (printed, and pasted into bench/README.md)."""
    what = (
        "Databases, one CREATE DATABASE each (per user: per Database; logins: databases found)"
        if results.get("options", {}).get("kind") == "Database"
        else "DatabaseUsers + Secrets, one grant each"
    )
    lines = _rows_table(
        f"Convergence (create N {what}, until all Ready):",
        results.get("convergence", []),
        CONVERGENCE_COLUMNS,
    )
    lines += _rows_table(
        "Backlog (processing only: N DatabaseUsers + Secrets created first, then the implementation "
        "started; time from its start until all Ready):",
        results.get("backlog", []),
        BACKLOG_COLUMNS,
    )
    rotation = results.get("rotation")
    if rotation:
        lines.append(
            f"Rotation (N={rotation['n']} Ready, {rotation['samples']} Secrets changed one at a time, until "
            f"the new password logs in): p50 {_number(rotation['p50_ms'], 0)} ms, p99 "
            f"{_number(rotation['p99_ms'], 0)} ms, max {_number(rotation['max_ms'], 0)} ms; "
            f"{_number(rotation['operator_api_writes_per_rotation'])} API writes and "
            f"{_number(rotation['sql_writes_per_rotation'])} SQL writes per rotation"
            + (
                f" ({_number(rotation['sql_statements_per_rotation'])} SQL statements)."
                if "sql_statements_per_rotation" in rotation
                else "."
            )
        )
        lines.append("")
    idle = results.get("idle")
    if idle:
        lines.append(
            f"Idle (N={idle['n']} Ready, {_number(idle['seconds'], 0)} s, resync period "
            f"{idle['resync_period']:g} s): {_number(idle['operator_api_writes'], 0)} API writes "
            f"({_number(idle['operator_api_reads'], 0)} reads), {_number(idle['sql_writes'], 0)} SQL writes, "
            f"{_number(idle['sql_selects'], 0)} SELECTs over {idle['drift_checks_expected']} drift checks, "
            f"{_number(idle['reconciles'], 0)} reconciles, CPU {_number(idle['cpu_seconds'])} s = "
            f"{_number(idle['cpu_percent_of_core'])} % of a core, RSS {_number(idle['rss_mib'], 0)} MiB."
        )
        lines.append("")
    cold = results.get("coldstart")
    if cold:
        lines.append(
            f"Cold start (N={cold['n']} Ready, operator restarted): all checked after "
            f"{_number(cold['seconds_to_all_checked'])} s (ready probe after "
            f"{_number(cold['seconds_to_ready_probe'])} s), {_number(cold['reconciles'], 0)} reconciles, "
            f"{_number(cold['operator_api_writes'], 0)} API writes, {_number(cold['sql_writes'], 0)} SQL "
            f"writes, {_number(cold['sql_statements_per_object'], 1)} SQL statements per object, peak RSS "
            f"{_number(cold['peak_rss_mib'], 0)} MiB, CPU {_number(cold['cpu_seconds'], 1)} s."
        )
        lines.append("")
    targets = results.get("targets", [])
    if targets:
        lines += ["Targets:", ""]
        verdict = {True: "PASS", False: "FAIL", None: "info"}
        rows = [
            [
                t["name"],
                t["target"],
                _number(t["value"]) + (f" {t['unit']}" if t["unit"] else ""),
                verdict[t["pass"]],
            ]
            for t in targets
        ]
        lines += _table(["target", "goal", "measured", "result"], rows)
    return "\n".join(lines) + "\n"


def write_json(results: dict[str, Any], path: Path) -> None:
    def clean(value: Any) -> Any:
        if isinstance(value, float) and math.isnan(value):
            return None
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items()}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    path.write_text(json.dumps(clean(results), indent=1, ensure_ascii=False) + "\n")


def _rotation_panel(axis: Any, rotation: dict[str, Any] | None) -> None:
    if not rotation or not rotation["latencies_ms"]:
        axis.set_axis_off()
        return
    ordered = sorted(rotation["latencies_ms"])
    axis.plot(ordered, [(i + 1) / len(ordered) for i in range(len(ordered))], drawstyle="steps-post")
    axis.axvline(ROTATION_P99_MS, color="#d62728", linestyle="--", linewidth=1, label="target p99 1 s")
    axis.set_xscale("log")
    axis.set_title(f"Rotation: Secret patch → new password logs in (N={rotation['n']})")
    axis.set_xlabel("ms (log)")
    axis.set_ylabel("fraction of samples")
    axis.legend(fontsize=8)


def plot(results: dict[str, Any], path: Path) -> None:
    """Four panels: convergence time, per-object latency, rotation latency, API and SQL cost per user."""
    import matplotlib as mpl  # noqa: PLC0415 - slow to import, only here

    mpl.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    convergence = [dict(row) for row in results.get("convergence", []) if row["converged"]]
    kinds = [k for k in ("operator", "floor", "kopf") if any(r["implementation"] == k for r in convergence)]
    sizes = sorted({row["n"] for row in convergence})
    colours = {"operator": "#1f77b4", "floor": "#7f7f7f", "kopf": "#d62728"}
    figure, axes = plt.subplots(2, 2, figsize=(11, 7.5), dpi=80)
    width = 0.8 / max(len(kinds), 1)

    backlog = [dict(row) for row in results.get("backlog", []) if row["converged"]]
    for row in results.get("backlog", []):  # an implementation given up on: a hatched bar at the limit
        if not row["converged"] and row.get("gave_up_after_seconds"):
            backlog.append({**row, "seconds": row["gave_up_after_seconds"], "gave_up": True})

    def bars(
        axis: Any, rows: list[dict[str, Any]], key: str, title: str, ylabel: str, *, log: bool = True
    ) -> None:
        for offset, kind in enumerate(kinds):
            values = [
                next((r[key] for r in rows if r["implementation"] == kind and r["n"] == n), 0) for n in sizes
            ]
            positions = [i + (offset - (len(kinds) - 1) / 2) * width for i in range(len(sizes))]
            drawn = axis.bar(positions, values, width, label=kind, color=colours[kind])
            gave_up = [
                any(r.get("gave_up") and r["implementation"] == kind and r["n"] == n for r in rows)
                for n in sizes
            ]
            labels = [
                f"gave up after {v:.0f} s" if g else f"{v:.3g}" for v, g in zip(values, gave_up, strict=True)
            ]
            for bar, hatched in zip(drawn, gave_up, strict=True):
                if hatched:
                    bar.set_hatch("//")
                    bar.set_alpha(0.5)
            axis.bar_label(drawn, labels=labels, fontsize=7)
        axis.set_xticks(range(len(sizes)), [f"N={n}" for n in sizes])
        axis.set_title(title)
        axis.set_ylabel(ylabel)
        if log:
            axis.set_yscale("log")
        axis.legend(fontsize=8)

    bars(axes[0][0], convergence, "seconds", "Convergence: first create → all Ready", "seconds (log)")
    if backlog:
        bars(axes[0][1], backlog, "seconds", "Backlog: start → all Ready (processing only)", "seconds (log)")
    else:
        bars(axes[0][1], convergence, "latency_p99_ms", "Per-object latency create → Ready, p99", "ms (log)")
    _rotation_panel(axes[1][0], results.get("rotation"))
    for row in convergence:
        row.setdefault("api_per_user", row.get("operator_api_writes_per_user", row["api_writes_per_user"]))
    bars(axes[1][1], convergence, "api_per_user", "API writes per created user", "writes", log=False)
    axes[1][1].axhline(API_WRITES_PER_USER, color="#d62728", linestyle="--", linewidth=1)
    machine = results.get("machine", {})
    servers = machine.get("servers")
    versions = machine.get("mysql_version") or "?"
    if servers:
        versions = "servers " + ", ".join(s["version"].split("-")[0] for s in servers)
    figure.suptitle(
        f"dbuser-operator benchmarks — {machine.get('cpus', '?')} CPUs ({machine.get('cpu_model', '?')}), "
        f"{versions}, kube-apiserver {machine.get('kube_version', '?')}",
        fontsize=10,
    )
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.report RESULTS.json``: render results.md and results.png again from the JSON."""
    import sys  # noqa: PLC0415

    path = Path((argv if argv is not None else sys.argv[1:])[0])
    results = json.loads(path.read_text())
    results["targets"] = evaluate(results)
    (path.parent / "results.md").write_text(render_table(results))
    plot(results, path.parent / "results.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
