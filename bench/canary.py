"""How fast the machine itself is while a benchmark runs: the CPU time of one fixed unit of work, measured
every two seconds by a process of its own.

On a shared machine a run can be slower for a reason outside everything it measures (another tenant of the
host, its caches and memory bandwidth). Then every process of the run (the API server, etcd, each mysqld, the
implementation) uses more CPU for the same work, and a ratio of two runs says nothing of the code. The canary
does the same work all the time: its CPU milliseconds per unit over a run's window, beside the run's figures,
say whether the machine was slower then. Its own cost is about 1 % of a core.

``python -m bench.canary OUT PARENT_PID`` appends ``<monotonic seconds> <CPU milliseconds>`` lines to OUT
until stopped or until the parent ends (``time.monotonic`` is the system's monotonic clock: the harness's
windows use the same one).
"""

from __future__ import annotations

import contextlib
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

UNIT = 200_000  # iterations of the loop below: about 20 ms of CPU on the 2-core machine
INTERVAL = 2.0


def unit_milliseconds() -> float:
    """The CPU time (this process's, in ms) one fixed unit of pure-Python work takes now."""
    started = time.process_time()
    total = 0
    for i in range(UNIT):
        total += i * i % 7
    return 1000 * (time.process_time() - started)


def record(path: Path, parent: int, interval: float = INTERVAL) -> None:
    """Measure a unit every ``interval`` seconds, appending a line each to ``path``; until killed or until
    ``parent``, the process that started it, ends (a benchmark killed without its cleanup leaves no canary
    behind; ``parent`` is passed, not read, in case it ended before this process began)."""
    with path.open("a", buffering=1) as out:
        while os.getppid() == parent:
            out.write(f"{time.monotonic():.3f} {unit_milliseconds():.3f}\n")
            time.sleep(interval)


def samples_between(path: Path, start: float, end: float) -> list[float]:
    """The units' CPU milliseconds measured between ``start`` and ``end`` (monotonic seconds)."""
    found = []
    with contextlib.suppress(FileNotFoundError), path.open() as lines:
        for line in lines:
            at, _, milliseconds = line.partition(" ")
            with contextlib.suppress(ValueError):
                if start <= float(at) <= end:
                    found.append(float(milliseconds))
    return found


class Canary:
    """The canary process of one benchmark session, and what it measured over a window."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(  # noqa: S603 - this interpreter, this module
            [sys.executable, "-m", "bench.canary", str(self.path), str(os.getpid())],
            cwd=Path(__file__).resolve().parent.parent,  # where the bench package is
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def window(self, start: float, end: float) -> dict[str, Any]:
        """The median unit over ``start`` to ``end`` and how many were measured (NaN when none)."""
        found = samples_between(self.path, start, end)
        return {"unit_ms_median": statistics.median(found) if found else math.nan, "units": len(found)}


def main() -> None:
    record(Path(sys.argv[1]), int(sys.argv[2]))


if __name__ == "__main__":
    main()
