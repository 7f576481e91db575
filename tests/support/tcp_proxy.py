"""Loopback TCP proxies for fault tests: the shared plumbing, and one that can go silent without closing."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any, Self


class LoopbackProxy:
    """Listens on 127.0.0.1:<port> (chosen when entered) and forwards to a target, as subclasses say.

    Subclasses implement ``_accept``; ``_connect`` opens the upstream side, ``_spawn`` runs a forwarding
    task that leaving the context cancels.
    """

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self.port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> Self:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *_: object) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError

    async def _connect(
        self, client: asyncio.StreamWriter
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        """The upstream connection for a client; None (the client closed) when the target refuses."""
        try:
            return await asyncio.open_connection(*self.target)
        except OSError:
            client.close()
            return None

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


class StallingProxy(LoopbackProxy):
    """Forwards 127.0.0.1:<port> to a target; ``stall()`` stops forwarding on the open connections.

    ``from_clients`` holds the bytes clients sent towards the target, all connections one after the other.
    """

    def __init__(self, target_host: str, target_port: int) -> None:
        super().__init__(target_host, target_port)
        self.from_clients = bytearray()
        self._stalled: list[asyncio.Event] = []  # one "may forward" event per open connection

    def stall(self) -> None:
        """Connections open now stop forwarding in both directions but stay open; new ones work."""
        for flowing in self._stalled:
            flowing.clear()
        self._stalled = []

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        flowing = asyncio.Event()
        flowing.set()
        self._stalled.append(flowing)
        upstream = await self._connect(writer)
        if upstream is None:
            return
        upstream_reader, upstream_writer = upstream
        for source, sink, from_client in ((reader, upstream_writer, True), (upstream_reader, writer, False)):
            self._spawn(self._pipe(source, sink, flowing, from_client=from_client))

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
