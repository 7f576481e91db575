"""Plain-text tables and ages as kubectl prints them."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from datetime import datetime, timedelta

MINUTE, HOUR, DAY, YEAR = 60, 3600, 86400, 365 * 86400


def printable(text: str, keep: str = "") -> str:
    """``text`` with control and format characters (escape sequences, bidi overrides, newlines but those
    in ``keep``) written as ``\\xNN``/``\\uNNNN``: messages and names come from other people, and must
    not drive the terminal of whoever reads them."""
    return "".join(
        char
        if char in keep or unicodedata.category(char) not in {"Cc", "Cf"}
        else (f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")
        for char in text
    )


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns left-aligned and three spaces apart, like ``kubectl get``; no trailing spaces; every cell
    :func:`printable` (one line each)."""
    rows = [[printable(str(cell)) for cell in row] for row in rows]
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=True)]
    lines = [
        "   ".join(str(cell).ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in [headers, *rows]
    ]
    return "\n".join(lines)


def human_duration(delta: timedelta) -> str:  # noqa: PLR0911 - one return per range, as in kubectl
    """A duration the way kubectl's AGE column writes it (``duration.HumanDuration``): 45s, 3m12s, 17m,
    5h30m, 20h, 3d4h, 40d, 3y20d, 10y."""
    seconds = int(delta.total_seconds())
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 2 * MINUTE:
        return f"{seconds}s"
    minutes, hours, days = seconds // MINUTE, seconds // HOUR, seconds // DAY
    if minutes < 10:
        rest = seconds % MINUTE
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 3 * 60:
        return f"{minutes}m"
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 8 * 24:
        rest = hours % 24
        return f"{days}d{rest}h" if rest else f"{days}d"
    if hours < 24 * 365 * 2:
        return f"{days}d"
    years = seconds // YEAR
    if hours < 24 * 365 * 8:
        rest = days % 365
        return f"{years}y{rest}d" if rest else f"{years}y"
    return f"{years}y"


def parse_time(value: object) -> datetime | None:
    """An RFC 3339 time of the API (``...Z`` or with an offset); None when absent or malformed."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def age(value: object, now: datetime) -> str:
    """How long ago the RFC 3339 time ``value`` was, or ``-`` when there is none."""
    moment = parse_time(value)
    return human_duration(now - moment) if moment is not None else "-"
