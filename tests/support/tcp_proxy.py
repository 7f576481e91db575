"""A loopback TCP proxy that can go silent without closing: a half-open connection, on demand."""

from __future__ import annotations

import asyncio
import contextlib


class StallingProxy:
    """Forwards 127.0.0.1:<port> to a target; ``stall()`` stops forwarding on the open connections.

    ``from_clients`` holds the bytes clients sent towards the target, all connections one after the other.
    """

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self.from_clients = bytearray()
        self._server: asyncio.Server | None = None
        self._stalled: list[asyncio.Event] = []  # one "may forward" event per open connection
        self._tasks: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> StallingProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *_: object) -> None:
        if self._server is not None:
            self._server.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def stall(self) -> None:
        """Connections open now stop forwarding in both directions but stay open; new ones work."""
        for flowing in self._stalled:
            flowing.clear()
        self._stalled = []

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        flowing = asyncio.Event()
        flowing.set()
        self._stalled.append(flowing)
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        for source, sink, from_client in ((reader, upstream_writer, True), (upstream_reader, writer, False)):
            task = asyncio.create_task(self._pipe(source, sink, flowing, from_client=from_client))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _pipe(
        self,
        source: asyncio.StreamReader,
        sink: asyncio.StreamWriter,
        flowing: asyncio.Event,
        *,
        from_client: bool,
    ) -> None:
        try:
            while data := await source.read(65536):
                await flowing.wait()
                if from_client:
                    self.from_clients += data
                sink.write(data)
                await sink.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            with contextlib.suppress(Exception):
                sink.close()
