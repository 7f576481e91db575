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


DAYS_PATTERN: Final = r"^([0-9]{1,5}d|([0-9]{1,9}(h|m|s))+)$"
"""A whole number of days: ``90d``, or a duration of whole hours, minutes and seconds that makes whole days
(``2160h``); no fractions, no ``ms``, so that CEL's ``duration()`` reads exactly what :func:`parse_days`
reads."""

_SECONDS_PER_DAY: Final = 86400


def parse_days(text: str, *, least: int = 1, most: int = 65535) -> int:
    """The days of ``90d`` or ``2160h`` (ValueError unless a whole number from ``least`` to ``most``)."""
    if not re.fullmatch(DAYS_PATTERN, text):
        raise ValueError(f"not a number of days like 90d or 2160h: {text[:64]!r}")
    if text.endswith("d"):
        days = int(text[:-1])
    else:
        seconds = sum(int(number) * int(_SECONDS[unit]) for number, unit in _PART.findall(text))
        if seconds % _SECONDS_PER_DAY:
            raise ValueError(f"{text[:64]!r} is not a whole number of days (a multiple of 24h)")
        days = seconds // _SECONDS_PER_DAY
    if not least <= days <= most:
        raise ValueError(f"{text[:64]!r} is {days} days: from {least} to {most} days")
    return days


def days_cel(field: str, least: int, most: int) -> str:
    """The CEL rule that admits what :func:`parse_days` does, for ``field`` (an expression such as ``self``
    or ``self.passwordExpire``) that :data:`DAYS_PATTERN` already matches."""
    seconds = f"duration({field}).getSeconds()"
    days = f"int({field}.substring(0, size({field}) - 1))"
    return (
        f"{field}.endsWith('d') ? ({days} >= {least} && {days} <= {most})"
        f" : ({seconds} % {_SECONDS_PER_DAY} == 0 && {seconds} >= {least * _SECONDS_PER_DAY}"
        f" && {seconds} <= {most * _SECONDS_PER_DAY})"
    )
