"""``python -m bench.traced_operator ARGS``: the operator (``python -m dbuser_operator ARGS``) under
tracemalloc, for finding where its memory goes; diagnosis only (tracemalloc slows it and adds to its RSS).

On SIGUSR1 it writes what is allocated now to ``$BENCH_TRACEMALLOC_OUT`` (JSON): the total, and the top
lines and top files by size, tracemalloc's own allocations left out; then runs a full garbage collection
and adds what it freed (``garbage``: cyclic garbage that was waiting for one).
``$BENCH_TRACEMALLOC_FRAMES`` (default 1) frames are kept per allocation. With the fleet bench:
``BENCH_TRACEMALLOC=1 python -m bench --scenarios fleet ...`` runs the operator this way and keeps the
snapshots of the idle and of the settled operator in ``results.json``.
"""

from __future__ import annotations

import gc
import json
import os
import runpy
import signal
import sys
import tracemalloc
from pathlib import Path
from types import FrameType

from bench import traced_periodic

OUT_ENV = "BENCH_TRACEMALLOC_OUT"
FRAMES_ENV = "BENCH_TRACEMALLOC_FRAMES"


def _snapshot() -> tracemalloc.Snapshot:
    ignored = [tracemalloc.__file__, "<frozen importlib._bootstrap*>"]
    return tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(False, name) for name in ignored])


def dump(signum: int, frame: FrameType | None) -> None:
    """What is allocated now; then what a full garbage collection freed of it (cyclic garbage that was
    waiting for one)."""
    snapshot = _snapshot()
    lines = snapshot.statistics("lineno")
    files = snapshot.statistics("filename")
    gc.collect()
    # The snapshot before, compared to the one after: a positive difference is what the collection freed.
    garbage = sorted(snapshot.compare_to(_snapshot(), "lineno"), key=lambda stat: -stat.size_diff)
    report = {
        "total_kib": round(sum(stat.size for stat in lines) / 1024, 1),
        "blocks": sum(stat.count for stat in lines),
        "garbage_kib": round(sum(stat.size_diff for stat in garbage) / 1024, 1),
        "lines": [[str(stat.traceback), round(stat.size / 1024, 1), stat.count] for stat in lines[:60]],
        "files": [[str(stat.traceback), round(stat.size / 1024, 1), stat.count] for stat in files[:40]],
        "garbage": [
            [str(stat.traceback), round(stat.size_diff / 1024, 1), stat.count_diff] for stat in garbage[:30]
        ],
    }
    Path(os.environ.get(OUT_ENV, "tracemalloc.json")).write_text(json.dumps(report, indent=1))


def main() -> None:
    tracemalloc.start(int(os.environ.get(FRAMES_ENV, "1")))
    signal.signal(signal.SIGUSR1, dump)
    if os.environ.get(traced_periodic.ENV):  # what each periodic check allocates, a line per call
        traced_periodic.install()
    sys.argv = ["dbuser_operator", *sys.argv[1:]]
    runpy.run_module("dbuser_operator", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
