"""Durations as the API writes them: a subset of Go's ``time.ParseDuration`` (``720h``, ``5m``, ``1h30m``).

Only non-negative sums of ``<number><unit>`` with units ``h``, ``m``, ``s`` and ``ms``; the schema's pattern
(:data:`DURATION_PATTERN`) admits exactly what :func:`parse_duration` reads.
"""

from __future__ import annotations

import re
from typing import Final

DURATION_PATTERN: Final = r"^([0-9]{1,9}(\.[0-9]{1,9})?(ms|h|m|s))+$"
DURATION_MAX_LENGTH: Final = 64

_PART: Final = re.compile(r"([0-9]{1,9}(?:\.[0-9]{1,9})?)(ms|h|m|s)")
_SECONDS: Final = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}


def parse_duration(text: str) -> float:
    """Seconds of a duration such as ``720h`` or ``1h30m`` (ValueError when it is not one)."""
    if not re.fullmatch(DURATION_PATTERN, text):
        raise ValueError(f"not a duration like 720h, 5m or 1h30m: {text[:64]!r}")
    return sum(float(number) * _SECONDS[unit] for number, unit in _PART.findall(text))
