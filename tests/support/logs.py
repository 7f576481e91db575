"""Capture what the operator logs, as the JSON lines it writes, whatever earlier tests configured.

``structlog.testing.capture_logs`` misses module loggers cached under an earlier ``configure_logging`` (it
swaps the processors of the current configuration only). Every logger goes through the standard library
once ``configure_logging`` has run, so a handler on the root logger sees them all.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import structlog

from dbuser_operator.runtime.logging import configure_logging


class JsonLogs(logging.Handler):
    """Keeps every line, rendered as the operator renders it; ``entries`` parses them."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))

    def entries(self, event: str | None = None) -> list[dict[str, Any]]:
        """The log lines as dicts (those whose ``event`` is ``event``, if given)."""
        parsed = [json.loads(line) for line in self.lines if line.startswith("{")]
        return [entry for entry in parsed if event is None or entry.get("event") == event]


@contextmanager
def captured_logs() -> Iterator[JsonLogs]:
    """JSON logging at debug level, captured; the previous configuration is restored afterwards."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    previous = structlog.get_config()
    configure_logging("json", "debug")
    capture = JsonLogs()
    capture.setFormatter(root.handlers[0].formatter)
    root.addHandler(capture)
    try:
        yield capture
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
        structlog.configure(**previous)
