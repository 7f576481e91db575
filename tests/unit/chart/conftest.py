"""Fixtures of the chart's tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from dbuser_operator.envtest import Binaries


@pytest.fixture(scope="module")
def helm(binaries: Binaries) -> Path:
    """The pinned helm binary (hack/testbin.sh)."""
    return binaries.path("helm")
