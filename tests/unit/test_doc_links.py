"""Every relative link of README.md, CONTRIBUTING.md and docs/ leads somewhere: the file or folder exists,
and an anchor (``#...``) is a heading of the target, as GitHub names it."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from urllib.parse import unquote

import pytest

from tests.conftest import REPO

DOCUMENTS = sorted([REPO / "README.md", REPO / "CONTRIBUTING.md", *(REPO / "docs").glob("*.md")])
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.MULTILINE)
_HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")


def _prose(text: str) -> str:
    """The text without fenced blocks and inline code (links there are examples, not links)."""
    return _CODE.sub("", _FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text (links and emphasis reduced to their words), lower-cased,
    every character but letters, digits, spaces, hyphens and underscores dropped, spaces made hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "")
    text = "".join(ch for ch in text.lower() if ch.isalnum() or ch in " -_")
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor of a Markdown file; a repeated heading's n-th repeat gets ``-n``, as on GitHub."""
    text = _FENCE.sub("", path.read_text())
    seen: Counter[str] = Counter()
    found = set(_HTML_ANCHOR.findall(text))
    for heading in _HEADING.findall(text):
        base = slug(heading)
        found.add(base if not seen[base] else f"{base}-{seen[base]}")
        seen[base] += 1
    return found


def broken_links(path: Path) -> list[str]:
    problems = []
    for target in _LINK.findall(_prose(path.read_text())):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:: not ours to check here
            continue
        file_part, _, anchor = target.partition("#")
        destination = (path.parent / unquote(file_part)).resolve() if file_part else path
        if not destination.exists():
            problems.append(f"{target}: no such file")
        elif anchor and destination.suffix == ".md" and unquote(anchor) not in anchors(destination):
            problems.append(f"{target}: no heading #{anchor} in {destination.relative_to(REPO)}")
    return problems


def test_github_slugs() -> None:
    assert slug("What a role holds, and who holds it") == "what-a-role-holds-and-who-holds-it"
    assert slug("`kubectl dbu` — the plugin") == "kubectl-dbu--the-plugin"
    assert slug("Status and events") == "status-and-events"
    assert slug("TLS to MySQL (`--mysql-ssl-mode`)") == "tls-to-mysql---mysql-ssl-mode"
    assert slug("See [Servers](servers.md) first") == "see-servers-first"


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(REPO)))
def test_every_relative_link_and_anchor_resolves(document: Path) -> None:
    assert broken_links(document) == []
