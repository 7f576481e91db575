"""``python -m bench.traced_operator ARGS``: the operator (``python -m dbuser_operator ARGS``) under
tracemalloc, for finding where its memory goes; diagnosis only (tracemalloc slows it and adds to its RSS).

On SIGUSR1 it writes what is allocated now to ``$BENCH_TRACEMALLOC_OUT`` (JSON): the total, and the top
lines and top files by size, tracemalloc's own allocations left out. ``$BENCH_TRACEMALLOC_FRAMES`` (default
1) frames are kept per allocation. With the fleet bench: ``BENCH_TRACEMALLOC=1 python -m bench --scenarios
fleet ...`` runs the operator this way and writes the snapshot of the settled operator beside its log.
"""

from __future__ import annotations

import json
import os
import runpy
import signal
import sys
import tracemalloc
from pathlib import Path
from types import FrameType

OUT_ENV = "BENCH_TRACEMALLOC_OUT"
FRAMES_ENV = "BENCH_TRACEMALLOC_FRAMES"


def dump(signum: int, frame: FrameType | None) -> None:
    snapshot = tracemalloc.take_snapshot().filter_traces(
        [
            tracemalloc.Filter(False, tracemalloc.__file__),
            tracemalloc.Filter(False, "<frozen importlib._bootstrap*>"),
        ]
    )
    lines = snapshot.statistics("lineno")
    files = snapshot.statistics("filename")
    report = {
        "total_kib": round(sum(stat.size for stat in lines) / 1024, 1),
        "blocks": sum(stat.count for stat in lines),
        "lines": [[str(stat.traceback), round(stat.size / 1024, 1), stat.count] for stat in lines[:60]],
        "files": [[str(stat.traceback), round(stat.size / 1024, 1), stat.count] for stat in files[:40]],
    }
    Path(os.environ.get(OUT_ENV, "tracemalloc.json")).write_text(json.dumps(report, indent=1))


def main() -> None:
    tracemalloc.start(int(os.environ.get(FRAMES_ENV, "1")))
    signal.signal(signal.SIGUSR1, dump)
    sys.argv = ["dbuser_operator", *sys.argv[1:]]
    runpy.run_module("dbuser_operator", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
