"""Ending an account's open sessions: MySQL fixes a session's global privileges (and its password check)
when it opens, so whoever takes privileges away from an account ends the sessions that still have them.

The processlist names a session's user and client host, not the account (``'user'@'host pattern'``) it
logged in as. A session is ended when its user is the account's and its client host is one the account's
host admits (``%`` and ``_`` as in LIKE, case-insensitive); a host written as a netmask or an IPv6 address
admits every client, so a session of another account of the same user name may be ended too: it only has
to reconnect. The admin account needs ``PROCESS`` (to see the sessions) and ``CONNECTION_ADMIN`` or
``SUPER`` (to end them), as the fence does.
"""

from __future__ import annotations

import re
from typing import Final

from dbuser_operator.mysql.connection import Database
from dbuser_operator.mysql.errors import MySQLError, checked_input
from dbuser_operator.mysql.identifiers import validate_host, validate_user
from dbuser_operator.mysql.statement import Statement

_UNKNOWN_THREAD: Final = 1094  # the session ended meanwhile
_SESSIONS: Final = (
    "SELECT ID, HOST FROM information_schema.PROCESSLIST WHERE USER = %s AND ID <> CONNECTION_ID()"
)


def client_host(processlist_host: str) -> str:
    """The client's host without its port: ``10.0.0.7:51234`` → ``10.0.0.7``, ``[::1]:5`` → ``::1``."""
    host = processlist_host.strip()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host[1:]
    if host.count(":") == 1:
        return host.split(":", 1)[0]
    return host


def admits(account_host: str, client: str) -> bool:
    """Whether an account of host ``account_host`` may have a session from ``client`` (over-approximated:
    a netmask or an IPv6 pattern admits every client)."""
    if account_host == "%" or "/" in account_host or ":" in account_host:
        return True
    pattern = "".join(
        ".*" if char == "%" else "." if char == "_" else re.escape(char) for char in account_host
    )
    return re.fullmatch(pattern, client, flags=re.IGNORECASE | re.DOTALL) is not None


async def end_sessions(db: Database, user: str, host: str) -> int:
    """``KILL CONNECTION`` every open session of ``'user'@'host'`` but the caller's; how many."""
    with checked_input():
        user, host = validate_user(user), validate_host(host)
    ended = 0
    for session_id, processlist_host in await db.fetch(Statement(_SESSIONS, user)):
        if not admits(host, client_host(str(processlist_host or ""))):
            continue
        try:
            await db.execute(Statement("KILL CONNECTION %s", int(session_id)))
        except MySQLError as error:
            if error.code != _UNKNOWN_THREAD:
                raise
            continue
        ended += 1
    return ended
