"""Smaller read buffers for asyncio's TLS connections.

asyncio's ``SSLProtocol`` (Python 3.11+) gives each TLS connection a zero-filled read buffer of
``SSLProtocol.max_size`` bytes, 256 KiB, resident for as long as the connection lives. The operator keeps
tens of TLS connections open (to the API server, and a pool per MySQL server): about 47 at N=2000 in the
benchmark, 12 MiB of buffers, an eighth of its resident memory. A TLS record carries at most 16 KiB, so
a buffer of :data:`READ_BUFFER` bytes still takes whole records in each read; large responses take a few
more reads, nothing else changes.

:func:`install` sets the size for the whole process: call it in the entry point, before any connection.
"""

from __future__ import annotations

import asyncio.sslproto
from typing import Final

READ_BUFFER: Final = 32 * 1024


def install(size: int = READ_BUFFER) -> None:
    """Make TLS connections opened from now on read through a ``size``-byte buffer.

    Nothing happens on a Python whose ``SSLProtocol`` has no ``max_size`` (its buffers are its own then).
    """
    if size < 1:
        raise ValueError(f"the read buffer must hold at least one byte, not {size}")
    protocol = asyncio.sslproto.SSLProtocol
    if hasattr(protocol, "max_size"):
        protocol.max_size = size
