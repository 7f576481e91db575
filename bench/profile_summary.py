"""Where a process's CPU went, by function, from py-spy's collapsed stacks (``--format=raw``).

``python -m bench.profile_summary FILE [--top 15] [--own dbuser_operator/]``. Each line of the file is one
stack, outermost frame first, ``;``-separated, then a space and its sample count; a frame reads
``function (file:line)``. With ``--gil`` (how the bench records) a sample is Python running on the CPU.

Four views: the leaf function (where the CPU was spent), the task the event loop was running, the innermost
frame of the process's own code (``--own``: which of its functions the time is charged to, the libraries it
called included), and the leaf's library (its top-level package).
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

_FRAME = re.compile(r"^(?P<function>.*?) \((?P<file>[^()]*?)(?::\d+)?\)$")
OWN = "dbuser_operator/"
SOURCE_ROOTS = frozenset({"site-packages", "dist-packages", "operator"})
STANDARD_LIBRARY = frozenset({f"python3.{minor}" for minor in range(8, 20)})


@dataclass(frozen=True)
class Frame:
    function: str
    file: str

    def __str__(self) -> str:
        return f"{self.function} ({self.file})"

    @property
    def library(self) -> str:
        """The frame's top-level package or module: ``aiomysql`` of ``…/site-packages/aiomysql/x.py``,
        ``asyncio`` of ``…/python3.12/asyncio/x.py``, ``dbuser_operator`` of ``…/operator/dbuser_operator/…``;
        else the file's folder."""
        parts = self.file.split("/")
        if not self.file.startswith("/") and len(parts) > 1:  # py-spy's short form: aiohttp/client.py
            return parts[0]
        for roots in (SOURCE_ROOTS, STANDARD_LIBRARY):
            for index, part in enumerate(parts[:-1]):
                if part in roots:
                    return parts[index + 1].removesuffix(".py")
        return parts[-2] if len(parts) > 1 else self.file.removesuffix(".py")


def frame(text: str) -> Frame:
    match = _FRAME.match(text)
    return Frame(match["function"], match["file"]) if match else Frame(text, "")


def parse(text: str) -> list[tuple[list[Frame], int]]:
    """The stacks and their sample counts (blank or malformed lines skipped)."""
    stacks = []
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            stacks.append(([frame(part) for part in stack.split(";")], int(count)))
    return stacks


def by_leaf(stacks: Sequence[tuple[list[Frame], int]]) -> Counter[str]:
    return _count((str(frames[-1]), count) for frames, count in stacks)


def by_own(stacks: Sequence[tuple[list[Frame], int]], own: str = OWN) -> Counter[str]:
    """Samples by the innermost frame whose file is under ``own`` (``(outside)`` when none is)."""
    return _count(
        (next((str(f) for f in reversed(frames) if own in f.file), "(outside)"), count)
        for frames, count in stacks
    )


def by_task(stacks: Sequence[tuple[list[Frame], int]]) -> Counter[str]:
    """Samples by the coroutine or callback the event loop was running (the frame after its last
    ``Handle._run``): which task the time went to; ``(outside the event loop)``: start-up, imports, the
    loop's own select and scheduling."""
    return _count((_task(frames), count) for frames, count in stacks)


def _task(frames: list[Frame]) -> str:
    runs = [
        index for index, f in enumerate(frames) if f.function == "Handle._run" and index + 1 < len(frames)
    ]
    return str(frames[runs[-1] + 1]) if runs else "(outside the event loop)"


def by_library(stacks: Sequence[tuple[list[Frame], int]]) -> Counter[str]:
    return _count((frames[-1].library, count) for frames, count in stacks)


def _count(pairs: Iterable[tuple[str, int]]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for key, count in pairs:
        counts[key] += count
    return counts


def summarise(text: str, top: int = 15, own: str = OWN) -> str:
    """The three views as Markdown tables: the ``top`` entries of each, with their share of all samples."""
    stacks = parse(text)
    total = sum(count for _, count in stacks)
    out = [f"{total} samples"]
    views = (
        ("leaf function", by_leaf(stacks)),
        ("task", by_task(stacks)),
        ("innermost own function", by_own(stacks, own)),
        ("leaf library", by_library(stacks)),
    )
    for title, counts in views:
        out += ["", f"| {title} | samples | share |", "|---|---|---|"]
        out += [
            f"| `{key}` | {value} | {100 * value / total:.1f} % |" for key, value in counts.most_common(top)
        ]
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.profile_summary", description=__doc__)
    parser.add_argument("file", type=Path)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--own", default=OWN, help="a path fragment of the process's own code")
    arguments = parser.parse_args(argv)
    print(summarise(arguments.file.read_text(), arguments.top, arguments.own))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
