"""A pytest plugin (``-p tests.support.collected``) that writes what a run selected, with each test's fixtures
(its whole closure) and markers, as JSON to the file ``DBUSER_OPERATOR_COLLECTED`` names: for the checks of
which run runs a test (``tests/unit/test_passes.py``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest


def pytest_collection_finish(session: pytest.Session) -> None:
    target = os.environ.get("DBUSER_OPERATOR_COLLECTED")
    if not target:
        return
    selected = {
        item.nodeid: {
            "fixtures": sorted(getattr(item, "fixturenames", ())),
            "markers": sorted({marker.name for marker in item.iter_markers()}),
        }
        for item in session.items
    }
    Path(target).write_text(json.dumps(selected))
