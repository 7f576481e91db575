"""The threat model names, for every path, the tests that try it: each must exist."""

from __future__ import annotations

import re

from tests.conftest import REPO

THREAT_MODEL = REPO / "docs" / "threat-model.md"
OPERATOR_TESTS = REPO / "tests" / "integration" / "operator"
TEST_DIRS = (*sorted(path for path in OPERATOR_TESTS.iterdir() if path.is_dir()), REPO / "tests", REPO)


def named_tests() -> list[str]:
    """Every `` `file.py` `` or `` `file.py::test_name` `` in the last column of the paths table."""
    names: list[str] = []
    for line in THREAT_MODEL.read_text().splitlines():
        if re.match(r"^\| \d+ \|", line):
            last = line.rstrip(" |").rsplit("|", 1)[-1]
            names += re.findall(r"`([\w/]+\.py(?:::\w+)?)`", last)
    return names


def test_every_path_names_a_test_that_exists() -> None:
    names = named_tests()
    assert len(names) >= 15
    for name in names:
        path, _, function = name.partition("::")
        candidates = [root / path for root in TEST_DIRS if (root / path).is_file()]
        assert candidates, f"docs/threat-model.md names {path}, which is not a test file"
        if function:
            text = candidates[0].read_text()
            assert re.search(rf"^(async )?def {function}\(", text, re.MULTILINE), name
