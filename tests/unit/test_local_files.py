"""The local run's files that hold the admin password are private from their first byte."""

from __future__ import annotations

import stat
from pathlib import Path

from dbuser_operator.local import write_private


def test_a_new_file_is_created_owner_only(tmp_path: Path) -> None:
    path = write_private(tmp_path / "secret", "s3cret")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text() == "s3cret"


def test_an_existing_readable_file_is_narrowed_before_it_is_written(tmp_path: Path) -> None:
    path = tmp_path / "secret"
    path.write_text("old and longer")
    path.chmod(0o644)
    write_private(path, "new")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text() == "new"
