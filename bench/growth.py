"""How time and peak RSS grow with N: ``python -m bench.growth RESULTS.json [...] --out PNG``.

Reads the convergence and backlog rows of one or more ``results.json`` (later files win for the same
implementation, section and N), plots seconds and peak RSS against N for the operator and the floor, and
prints a Markdown table with the operator ÷ floor ratios and the slope of the operator's peak RSS (a least
squares line over the sizes measured, in KiB per user).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

SECTIONS = ("convergence", "backlog")
KINDS = ("operator", "floor")


def rows_of(paths: Sequence[Path]) -> dict[tuple[str, str, int], dict[str, Any]]:
    """(section, implementation, N) → the row, for every converged row of the files."""
    found: dict[tuple[str, str, int], dict[str, Any]] = {}
    for path in paths:
        results = json.loads(path.read_text())
        for section in SECTIONS:
            for row in results.get(section, []):
                if row.get("converged") and row["implementation"] in KINDS:
                    found[section, row["implementation"], int(row["n"])] = row
    return found


def slope(points: Sequence[tuple[float, float]]) -> float:
    """The least squares slope of ``points`` (nan with fewer than two distinct x)."""
    if len({x for x, _ in points}) < 2:
        return float("nan")
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    covariance = sum((x - mean_x) * (y - mean_y) for x, y in points)
    variance = sum((x - mean_x) ** 2 for x, _ in points)
    return covariance / variance


def table(rows: dict[tuple[str, str, int], dict[str, Any]]) -> str:
    """One line per N: live and backlog seconds, ratios, peak RSS; then the RSS slopes."""
    sizes = sorted({n for _, _, n in rows})
    lines = [
        "| N | floor s | operator s | live ratio | floor backlog s | operator backlog s | backlog ratio "
        "| operator peak RSS MiB (live / backlog) | floor peak RSS MiB (live / backlog) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]

    def cell(section: str, kind: str, n: int, key: str, digits: int = 2) -> str:
        row = rows.get((section, kind, n))
        return f"{row[key]:.{digits}f}" if row else "-"

    def ratio(section: str, n: int) -> str:
        operator, floor = rows.get((section, "operator", n)), rows.get((section, "floor", n))
        return f"**{operator['seconds'] / floor['seconds']:.2f}**" if operator and floor else "-"

    for n in sizes:
        lines.append(
            f"| {n} | {cell('convergence', 'floor', n, 'seconds')}"
            f" | {cell('convergence', 'operator', n, 'seconds')}"
            f" | {ratio('convergence', n)} | {cell('backlog', 'floor', n, 'seconds')}"
            f" | {cell('backlog', 'operator', n, 'seconds')} | {ratio('backlog', n)}"
            f" | {cell('convergence', 'operator', n, 'peak_rss_mib', 0)} / "
            f"{cell('backlog', 'operator', n, 'peak_rss_mib', 0)}"
            f" | {cell('convergence', 'floor', n, 'peak_rss_mib', 0)} / "
            f"{cell('backlog', 'floor', n, 'peak_rss_mib', 0)} |"
        )
    lines.append("")
    for section in SECTIONS:
        points = [
            (n, row["peak_rss_mib"]) for (s, k, n), row in rows.items() if s == section and k == "operator"
        ]
        if len(points) >= 2:
            per_user = slope(points) * 1024
            lines.append(
                f"Operator peak RSS slope ({section}, N={min(p[0] for p in points)}…"
                f"{max(p[0] for p in points)}): {per_user:.2f} KiB per user."
            )
    return "\n".join(lines) + "\n"


def plot(rows: dict[tuple[str, str, int], dict[str, Any]], path: Path, title: str) -> None:
    """Two panels: seconds against N, peak RSS against N (operator and floor, live and backlog)."""
    import matplotlib as mpl  # noqa: PLC0415 - slow to import, only here

    mpl.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    colours = {"operator": "#1f77b4", "floor": "#7f7f7f"}
    styles = {"convergence": "-", "backlog": "--"}
    figure, axes = plt.subplots(1, 2, figsize=(11, 4.2), dpi=80)
    for section in SECTIONS:
        for kind in KINDS:
            points = sorted((n, row) for (s, k, n), row in rows.items() if s == section and k == kind)
            if not points:
                continue
            sizes = [n for n, _ in points]
            label = f"{kind}, {'live' if section == 'convergence' else 'backlog'}"
            style = {"color": colours[kind], "linestyle": styles[section], "marker": "o"}
            axes[0].plot(sizes, [row["seconds"] for _, row in points], label=label, **style)
            axes[1].plot(sizes, [row["peak_rss_mib"] for _, row in points], label=label, **style)
    axes[0].set_title("Time to all Ready")
    axes[0].set_ylabel("seconds")
    axes[1].set_title("Peak RSS (VmHWM) of the implementation")
    axes[1].set_ylabel("MiB")
    for axis in axes:
        axis.set_xlabel("N DatabaseUsers")
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.growth", description=__doc__)
    parser.add_argument("results", type=Path, nargs="+", help="results.json files")
    parser.add_argument("--out", type=Path, required=True, help="the PNG to write")
    parser.add_argument("--title", default="dbuser-operator: growth with N")
    arguments = parser.parse_args(argv)
    rows = rows_of(arguments.results)
    plot(rows, arguments.out, arguments.title)
    print(table(rows), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
