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

import ipaddress
import re
from collections.abc import Iterable
from typing import Final

from dbuser_operator.mysql.errors import MySQLError, checked_input
from dbuser_operator.mysql.identifiers import validate_host, validate_user
from dbuser_operator.mysql.session.connection import Database
from dbuser_operator.mysql.session.statement import Statement

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


def _wildcard(host: str) -> bool:
    return "%" in host or "_" in host


def _forms(client: str) -> tuple[tuple[str, ...], bool]:
    """The host forms the server may have matched a client shown as ``client`` by, and whether those are
    all of them: an address is itself; ``localhost`` the socket or a loopback address; a name (the server
    resolved the address) is matched by its address too, which the processlist does not show."""
    if client.lower() == "localhost":
        return ("localhost", "127.0.0.1", "::1"), True
    try:
        ipaddress.ip_address(client)
    except ValueError:
        return (client,), False
    return (client,), True


def may_be_of(hosts: Iterable[str], client: str, others: Iterable[str]) -> bool:
    """Whether a session of client host ``client`` may have logged in as one of the accounts of ``hosts``,
    the same user name also having accounts at ``others`` (their hosts). Left out only when sure it did
    not: no host of ``hosts`` admits the client's address (or ``localhost``), or an account of ``others``
    has the client's very host, with no wildcard, which the server prefers to any host with one. A client
    shown by name may have matched by its address, unknown here: counted. Otherwise counted too, though
    the session may be another account's (of ``others`` whose host also admits the client)."""
    literal = {other.lower() for other in others if not _wildcard(other)}
    forms, sure = _forms(client)
    for host in hosts:
        if any(admits(host, form) for form in forms):
            if not (_wildcard(host) and client.lower() in literal):
                return True
        elif not sure:
            return True
    return False


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
