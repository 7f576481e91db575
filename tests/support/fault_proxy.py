"""A loopback TCP proxy for fault tests: hold a client's MySQL writes in flight, or cut the network.

- ``hold_writes()``: on every connection, the first MySQL ``COM_QUERY`` that changes accounts or the
  bookkeeping (``CREATE``/``ALTER``/``DROP``/``GRANT``/``REVOKE``/``INSERT``/``UPDATE``/``DELETE``, not the
  fencing tables') is kept back, and everything the client sends after it on that connection; the client
  has sent it and waits for the answer. ``release()`` forwards what was held, in order: the statement
  arrives after whatever happened meanwhile (a pause that landed between a check and its write).
  ``hold_writes(after=b"CREATE USER")`` starts holding only once such a write has gone through: the
  write held is the one that follows it; ``hold_writes(only=b"CREATE DATABASE `APP`")`` holds the first
  write starting so (compared in upper case), letting the others through. ``drop_held()`` closes the
  connections holding writes: what they held never arrives (a client killed with its statement unsent).
- ``hold_reply(after=b"ALTER USER")``: the next write starting so goes through and the server runs it, but
  its answer (and anything after it on that connection) is kept from the client: a client killed then
  has changed the server without knowing it. ``drop_held()`` closes that connection too.
- ``cut()``: a network partition: nothing is forwarded any more on open connections, new connections
  are accepted and then ignored (the peer sees silence, not a refusal).
- ``refuse()``: the server is down: the proxy stops listening (connections are refused) and closes the
  open ones.
- ``heal()``: the network is back: new connections are forwarded again (on the same port); those open
  during a cut lost bytes, so they are closed, as a peer would reset them.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from dataclasses import dataclass, field

from tests.support.tcp_proxy import LoopbackProxy

_COM_QUERY = 0x03
_WRITE = re.compile(rb"^\s*(CREATE|ALTER|DROP|GRANT|REVOKE|INSERT|UPDATE|DELETE)\b", re.IGNORECASE)
_FENCING_TABLES = (b"leader_sessions", b"leader_epoch")


def is_write(packet: bytes) -> bool:
    """Whether a client packet (4-byte header included) is a COM_QUERY that writes (not fencing's own)."""
    payload = packet[4:]
    if not payload or payload[0] != _COM_QUERY:
        return False
    text = payload[1:]
    return bool(_WRITE.match(text)) and not any(name in text for name in _FENCING_TABLES)


@dataclass
class _Connection:
    upstream: asyncio.StreamWriter
    downstream: asyncio.StreamWriter
    held: list[bytes] = field(default_factory=list)
    holding: bool = False
    muted: bool = False  # the server's answers are kept from the client


class FaultProxy(LoopbackProxy):
    """Forwards 127.0.0.1:<port> to a target; ``hold_writes``/``release`` and ``cut`` (see the module)."""

    def __init__(self, target_host: str, target_port: int, *, mysql: bool = True) -> None:
        """``mysql=False``: any protocol (TLS to the API server, say): ``cut`` only, no holding."""
        super().__init__(target_host, target_port)
        self.mysql = mysql
        self.held_writes: list[bytes] = []  # every write statement held so far (COM_QUERY text)
        self._connections: list[_Connection] = []
        self._silenced: list[asyncio.StreamWriter] = []  # clients accepted during a cut
        self._hold = False
        self._hold_after: bytes | None = None  # hold once a write starting so has gone through
        self._hold_only: bytes | None = None  # hold only a write starting so
        self._mute_after: bytes | None = None  # the next write starting so: its answer is kept back
        self.muted_writes: list[bytes] = []  # the writes whose answers were kept back (COM_QUERY text)
        self._cut = False

    async def __aexit__(self, *exc_info: object) -> None:
        await super().__aexit__(*exc_info)
        self._close_all()

    def hold_writes(self, *, after: bytes | None = None, only: bytes | None = None) -> None:
        """From now on (``after``: once a write starting with it has gone through), keep back each
        connection's next write statement (``only``: the next starting with it) and all it sends after."""
        self._hold, self._hold_after, self._hold_only = after is None, after, only

    def hold_reply(self, *, after: bytes) -> None:
        """The next write starting with ``after`` goes through; its answer, and all after it on that
        connection, is kept from the client."""
        self._mute_after = after

    def drop_held(self) -> None:
        """Hold nothing more; close the connections that hold writes (which never arrive) or answers."""
        self._hold, self._hold_after, self._hold_only, self._mute_after = False, None, None, None
        holding = [c for c in self._connections if c.holding or c.muted]
        self._connections = [c for c in self._connections if not (c.holding or c.muted)]
        for connection in holding:
            connection.held = []
            for writer in (connection.upstream, connection.downstream):
                with contextlib.suppress(Exception):
                    writer.close()

    async def release(self) -> None:
        """Forward everything held, in order, and hold nothing more."""
        self._hold = False
        for connection in self._connections:
            held, connection.held, connection.holding = connection.held, [], False
            for packet in held:
                with contextlib.suppress(ConnectionError, OSError):
                    connection.upstream.write(packet)
                    await connection.upstream.drain()

    def cut(self) -> None:
        """Forward nothing any more, on open connections or new ones, and close nothing."""
        self._cut = True

    async def refuse(self) -> None:
        """Listen no more (connections are refused) and close the open connections."""
        if self._server is not None:
            self._server.close()
            self._server = None
        self._close_all()

    async def heal(self) -> None:
        """Forward again, on the same port; the connections open during a cut are closed."""
        self._cut = False
        self._close_all()
        if self._server is None:
            self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)

    def _close_all(self) -> None:
        writers = [w for c in self._connections for w in (c.upstream, c.downstream)] + self._silenced
        self._connections, self._silenced = [], []
        for writer in writers:
            with contextlib.suppress(Exception):
                writer.close()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._cut:
            self._silenced.append(writer)
            self._spawn(_swallow(reader))  # accepted, then silence
            return
        upstream = await self._connect(writer)
        if upstream is None:
            return
        upstream_reader, upstream_writer = upstream
        connection = _Connection(upstream_writer, writer)
        self._connections.append(connection)
        self._spawn(self._client_to_server(reader, connection))
        self._spawn(self._server_to_client(upstream_reader, connection))

    async def _client_to_server(self, reader: asyncio.StreamReader, connection: _Connection) -> None:
        buffer = b""
        try:
            while data := await reader.read(65536):
                if self._cut:
                    continue
                if not self.mysql:
                    connection.upstream.write(data)
                    await connection.upstream.drain()
                    continue
                buffer += data
                while len(buffer) >= 4:
                    length = int.from_bytes(buffer[:3], "little")
                    if len(buffer) < 4 + length:
                        break
                    packet, buffer = buffer[: 4 + length], buffer[4 + length :]
                    if not connection.holding and self._holds(packet):
                        connection.holding = True
                        self.held_writes.append(packet[5:])
                    if connection.holding:
                        connection.held.append(packet)
                    else:
                        connection.upstream.write(packet)
                        self._hold = self._hold or self._starts(self._hold_after, packet)
                        if self._starts(self._mute_after, packet):
                            connection.muted, self._mute_after = True, None
                            self.muted_writes.append(packet[5:])
                await connection.upstream.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            if not self._cut and not connection.holding:
                with contextlib.suppress(Exception):
                    connection.upstream.close()

    def _holds(self, packet: bytes) -> bool:
        """Whether ``packet`` is the write to hold, now."""
        if not self._hold or not is_write(packet):
            return False
        return self._hold_only is None or self._starts(self._hold_only, packet)

    @staticmethod
    def _starts(after: bytes | None, packet: bytes) -> bool:
        """Whether ``packet`` is a write whose text starts with ``after`` (None: none is)."""
        return after is not None and is_write(packet) and packet[5:].lstrip().upper().startswith(after)

    async def _server_to_client(self, reader: asyncio.StreamReader, connection: _Connection) -> None:
        try:
            while data := await reader.read(65536):
                if self._cut or connection.muted:
                    continue
                connection.downstream.write(data)
                await connection.downstream.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            if not self._cut:
                with contextlib.suppress(Exception):
                    connection.downstream.close()


async def _swallow(reader: asyncio.StreamReader) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        while await reader.read(65536):
            pass
