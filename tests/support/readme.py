"""The README's fenced blocks, read the way a newcomer reads them: by section, in order."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from tests.conftest import REPO

README = REPO / "README.md"
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def section(heading: str, path: Path = README) -> str:
    """The text of the ``## heading`` section, up to the next heading of level two."""
    text = path.read_text()
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def fenced(heading: str, language: str, path: Path = README) -> list[str]:
    """The bodies of the ``language`` fenced blocks of a section, in order."""
    return [body for lang, body in _FENCE.findall(section(heading, path)) if lang == language]


def commands(script: str) -> list[list[str]]:
    """A shell block as commands (continuation lines joined, comments and blank lines left out), each split
    as the shell splits it."""
    joined = re.sub(r"\\\n\s*", " ", script)
    return [
        shlex.split(line, comments=True) for line in joined.splitlines() if shlex.split(line, comments=True)
    ]
