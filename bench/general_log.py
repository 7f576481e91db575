"""The servers' general log, for a window: every statement they received, and those that write.

``async with GeneralLog(servers) as log:`` turns each server's general log on into its table
(``log_output = TABLE``, ``mysql.general_log`` emptied first) and off again on exit, when ``log.writes``
lists, per server, the first words of each statement that changes an account, a grant or a row (``CREATE``,
``ALTER``, ``DROP``, ``GRANT``, ``REVOKE``, ``SET PASSWORD``/``DEFAULT ROLE``, ``INSERT``, ``UPDATE``,
``DELETE``, ``REPLACE``, ``RENAME``, ``TRUNCATE``, ``KILL``, ``FLUSH``), and ``log.statements`` how many
statements each received. Only the first words are kept: a statement's text may hold a password. It taxes
every statement while on: for counts, not for time.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from types import TracebackType

from bench.common import MySQLAddress, admin_sql

WRITE = re.compile(
    r"^\s*(CREATE|ALTER|DROP|GRANT|REVOKE|INSERT|UPDATE|DELETE|REPLACE|RENAME|TRUNCATE|KILL|FLUSH"
    r"|SET\s+(PASSWORD|DEFAULT\s+ROLE))\b",
    re.IGNORECASE,
)
QUERIES = "SELECT argument FROM mysql.general_log WHERE command_type IN ('Query', 'Execute')"


class GeneralLog:
    """The general log of ``servers`` while the block runs."""

    def __init__(self, servers: Sequence[MySQLAddress]) -> None:
        self.servers = list(servers)
        self.writes: dict[str, list[str]] = {}
        self.statements: dict[str, int] = {}
        self.shapes: Counter[str] = Counter()  # the first words of every statement, over all servers

    async def __aenter__(self) -> GeneralLog:
        for server in self.servers:
            await admin_sql(
                server,
                "SET GLOBAL general_log = 'OFF'",
                "SET GLOBAL log_output = 'TABLE'",
                "TRUNCATE TABLE mysql.general_log",
                "SET GLOBAL general_log = 'ON'",
            )
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        for server in self.servers:
            rows = await admin_sql(server, "SET GLOBAL general_log = 'OFF'", QUERIES)
            texts = [_text(argument) for (argument,) in rows]
            self.statements[server.name] = len(texts)
            self.writes[server.name] = [_shape(text) for text in texts if WRITE.match(text)]
            self.shapes.update(_shape(text) for text in texts)
            await admin_sql(server, "TRUNCATE TABLE mysql.general_log", "SET GLOBAL log_output = 'FILE'")

    @property
    def write_count(self) -> int:
        return sum(len(found) for found in self.writes.values())


def _shape(text: str) -> str:
    """A statement's first words (never its values: they may hold a password)."""
    return " ".join(text.split()[:3])[:60]


def _text(argument: object) -> str:
    return argument.decode(errors="replace") if isinstance(argument, bytes | bytearray) else str(argument)
