"""The bench's canary (bench.canary): the machine's own speed over a run's window."""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import signal
import sys
import time
from pathlib import Path

from bench.canary import Canary, samples_between, unit_milliseconds

from tests.conftest import REPO
from tests.integration.operator.support.wait import eventually


def test_a_unit_takes_some_cpu() -> None:
    assert unit_milliseconds() > 0


def test_the_window_keeps_only_the_units_measured_inside_it(tmp_path: Path) -> None:
    path = tmp_path / "canary.txt"
    path.write_text("10.0 20.0\n11.0 30.0\nnot a line\n12.5 40.0\n14.0 90.0\n")

    assert samples_between(path, 11.0, 13.0) == [30.0, 40.0]
    assert Canary(path).window(10.0, 14.0) == {"unit_ms_median": 35.0, "units": 4}


def test_a_window_without_units_says_so(tmp_path: Path) -> None:
    window = Canary(tmp_path / "never-written.txt").window(0.0, 1.0)

    assert math.isnan(window["unit_ms_median"])
    assert window["units"] == 0


async def test_the_process_measures_until_stopped(tmp_path: Path) -> None:
    canary = Canary(tmp_path / "canary.txt")
    started = time.monotonic()
    canary.start()
    process = canary.process
    try:
        measured = await eventually(lambda: samples_between(canary.path, started, math.inf), limit=60)
    finally:
        canary.stop()

    assert all(unit > 0 for unit in measured)
    assert process is not None
    assert process.returncode is not None  # killed and reaped
    assert canary.process is None


_START_AND_LEAVE = """
import sys, time
from pathlib import Path
from bench.canary import Canary
canary = Canary(Path(sys.argv[1]))
canary.start()
assert canary.process is not None
for _ in range(600):  # leave once it measures
    if canary.path.exists() and canary.path.read_text():
        break
    time.sleep(0.1)
print(canary.process.pid)
"""


def _gone(pid: int) -> bool:
    """Whether process ``pid`` has exited (a zombie waiting for its new parent counts)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in {"Z", "X"}


async def test_the_process_ends_with_the_benchmark_that_started_it(tmp_path: Path) -> None:
    """A benchmark killed before its cleanup (here: one that just exits) leaves no canary running."""
    path = tmp_path / "canary.txt"
    started = time.monotonic()
    benchmark = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _START_AND_LEAVE, str(path), cwd=REPO, stdout=asyncio.subprocess.PIPE
    )
    output, _ = await benchmark.communicate()
    assert benchmark.returncode == 0
    pid = int(output)
    try:
        assert samples_between(path, started, math.inf)  # it measured while the benchmark lived
        await eventually(lambda: _gone(pid), limit=60, message="the canary outlived its benchmark")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
