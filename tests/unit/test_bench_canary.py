"""The bench's canary (bench.canary): the machine's own speed over a run's window."""

from __future__ import annotations

import math
import time
from pathlib import Path

from bench.canary import Canary, samples_between, unit_milliseconds

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
    try:
        await eventually(lambda: samples_between(canary.path, started, math.inf), limit=60)
    finally:
        canary.stop()

    assert canary.window(started, time.monotonic())["units"] >= 1
    assert canary.process is None
