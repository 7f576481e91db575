"""Free loopback ports, chosen below the kernel's ephemeral range.

A port the kernel hands out for ``bind(("", 0))`` comes from the same range it uses for the local end of
every outgoing connection: between choosing it and the server's ``bind`` (a process starting, seconds on a
busy machine) any client on the machine can take it, and the server fails with "address already in use"
(seen in a cold CI run: a restarted operator's metrics port taken meanwhile). Below that range only an
explicit ``bind`` takes a port, so a random free one there stays free.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

LOOPBACK = "127.0.0.1"

_LOCAL_PORT_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST = 10000
_handed_out: set[int] = set()


def free_port() -> int:
    """A TCP port on the loopback address that nothing listens on right now, outside the ephemeral range
    and never handed out twice by this process."""
    low, high = _LOWEST, _ephemeral_low() - 1
    if high - low < 1000:  # an unusual range: the kernel's choice, as before
        return _kernel_port()
    for _ in range(200):
        port = random.randint(low, high)  # noqa: S311 - spreading test ports, not a secret
        if port not in _handed_out and _bindable(port):
            _handed_out.add(port)
            return port
    return _kernel_port()


def _ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range (Linux's default when it cannot be read)."""
    try:
        return int(_LOCAL_PORT_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((LOOPBACK, port))
        except OSError:
            return False
        return True


def _kernel_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        port: int = sock.getsockname()[1]
        _handed_out.add(port)
        return port
