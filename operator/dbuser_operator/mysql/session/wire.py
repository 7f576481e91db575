"""How connections to the server are opened: the driver's options, TCP keepalive, the password's bytes."""

from __future__ import annotations

import contextlib
import socket
import ssl
from typing import Any

from dbuser_operator.mysql.session.settings import ConnectionSettings

POOL_RECYCLE = 300.0  # seconds: close pooled connections idle longer (proxies and load balancers drop them)
_KEEPALIVE = {"TCP_KEEPIDLE": 30, "TCP_KEEPINTVL": 10, "TCP_KEEPCNT": 3}  # a dead peer found in about 60 s


def connect_options(settings: ConnectionSettings, context: ssl.SSLContext | None) -> dict[str, Any]:
    """aiomysql's ``connect`` arguments for the admin account (its ``connect_timeout`` bounds only the TCP
    connect: callers bound the login themselves)."""
    return {
        "host": settings.host,
        "port": settings.port,
        "user": settings.user,
        "password": _wire_password(settings.password.get_secret_value()),
        "connect_timeout": settings.connect_timeout,
        "charset": "utf8mb4",
        "autocommit": True,
        "ssl": context,
        "local_infile": False,
    }


def keep_alive(connection: Any) -> None:
    """TCP keepalive probes after 30 s of silence on a new connection (aiomysql only turns them on, with
    the system's default of two hours), where the platform has the options."""
    writer = getattr(connection, "_writer", None)
    sock = writer.transport.get_extra_info("socket") if writer is not None else None
    if sock is None:
        return
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        for option, value in _KEEPALIVE.items():
            if hasattr(socket, option):
                sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, option), value)


def hard_close(connection: Any) -> None:
    """Close a connection at once: its transport aborted, not shut down politely (a TLS shutdown waits for
    the peer's answer, up to 30 s, before a read in progress learns the connection is gone)."""
    writer = getattr(connection, "_writer", None)
    if writer is not None:
        with contextlib.suppress(Exception):
            writer.transport.abort()
    connection.close()


def _wire_password(password: str) -> str:
    """The password as aiomysql must get it to send its UTF-8 bytes.

    aiomysql encodes the password as Latin-1, while the server hashed the UTF-8 bytes it received in
    ``IDENTIFIED BY`` (the connection character set is utf8mb4): the Latin-1 reading of those bytes
    round-trips to them exactly, for every password.
    """
    return password.encode("utf-8").decode("latin-1")
