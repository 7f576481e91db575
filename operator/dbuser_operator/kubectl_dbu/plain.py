"""The plugin's API client on the standard library: HTTPS (``http.client``, ``ssl``) with the kubeconfig's
CA and client certificate or token, JSON in and out. It starts in a few milliseconds where importing
kubernetes-asyncio takes most of a second; requests run in worker threads, each on a connection of a small
pool, so a command's parallel reads stay parallel."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import os
import queue
import socket
import ssl
import tempfile
import urllib.parse
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from dbuser_operator.kubectl_dbu.errors import Unavailable, api_failure
from dbuser_operator.kubectl_dbu.kubeconfig import Endpoint
from dbuser_operator.runtime.resources import Resource

TIMEOUT = 30.0  # seconds for one request
STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)  # a pooled connection closed


def tls_context(endpoint: Endpoint) -> ssl.SSLContext:
    """Verification against the kubeconfig's CA (else the system's), unless it says insecure; the client
    certificate, loaded from a private temporary folder removed at once (``ssl`` reads only files)."""
    context = ssl.create_default_context(cadata=endpoint.ca.decode() if endpoint.ca else None)
    if endpoint.insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if endpoint.cert and endpoint.key:
        with tempfile.TemporaryDirectory(prefix="kubectl-dbu-") as folder:  # mode 0700
            cert, key = Path(folder) / "tls.crt", Path(folder) / "tls.key"
            for path, data in ((cert, endpoint.cert), (key, endpoint.key)):
                with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as file:
                    file.write(data)
            context.load_cert_chain(cert, key)
    return context


class PlainClient:
    """``get``, ``list_all``, ``request``, ``patch`` and ``watch`` over plain HTTPS."""

    def __init__(self, endpoint: Endpoint) -> None:
        url = urllib.parse.urlsplit(endpoint.server)
        if url.scheme not in {"https", "http"} or not url.hostname:
            raise Unavailable(None, f"the kubeconfig's server {endpoint.server!r} is not an http(s) URL")
        self.url = url
        self.prefix = url.path.rstrip("/")
        self.context = tls_context(endpoint) if url.scheme == "https" else None
        self.headers = {"Accept": "application/json", "User-Agent": "kubectl-dbu"}
        if endpoint.token:
            self.headers["Authorization"] = f"Bearer {endpoint.token}"
        self.idle: queue.SimpleQueue[http.client.HTTPConnection] = queue.SimpleQueue()

    def _connection(self, timeout: float | None) -> http.client.HTTPConnection:
        if self.context is None:
            return http.client.HTTPConnection(self.url.hostname or "", self.url.port, timeout=timeout)
        return http.client.HTTPSConnection(
            self.url.hostname or "", self.url.port, timeout=timeout, context=self.context
        )

    def _send(self, method: str, url: str, body: bytes | None, content_type: str) -> dict[str, Any]:
        try:
            connection, reused = self.idle.get_nowait(), True
        except queue.Empty:
            connection, reused = self._connection(TIMEOUT), False
        headers = {**self.headers, "Content-Type": content_type} if body is not None else self.headers
        try:
            connection.request(method, url, body=body, headers=headers)
            response = connection.getresponse()
            content = response.read()
        except (OSError, http.client.HTTPException) as error:
            connection.close()
            if reused and method == "GET" and isinstance(error, STALE):  # the server closed an idle one
                return self._send(method, url, body, content_type)
            raise Unavailable(None, f"{type(error).__name__}: {error}") from error
        self.idle.put(connection)
        if not 200 <= response.status <= 299:
            raise api_failure(response.status, response.reason, content)
        data: dict[str, Any] = json.loads(content)
        return data

    def _url(self, path: str, query: Sequence[tuple[str, str]]) -> str:
        return self.prefix + path + (f"?{urllib.parse.urlencode(list(query))}" if query else "")

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]] = (),
        body: Any = None,
        content_type: str = "application/json",
    ) -> dict[str, Any]:
        """One request; the response's JSON, or an ``ApiFailure``."""
        payload = json.dumps(body).encode() if body is not None else None
        url = self._url(path, query)
        return await asyncio.to_thread(self._send, method, url, payload, content_type)

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        """One object."""
        return await self.request("GET", resource.path(namespace, name))

    async def list_all(
        self, resource: Resource, namespace: str | None = None
    ) -> tuple[list[dict[str, Any]], str]:
        """Every page of a list: its items and resourceVersion."""
        items: list[dict[str, Any]] = []
        query: list[tuple[str, str]] = [("limit", "500")]
        while True:
            page = await self.request("GET", resource.path(namespace), query=query)
            items += page.get("items") or []
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return items, (page.get("metadata") or {}).get("resourceVersion") or ""
            query = [("limit", "500"), ("continue", token)]

    async def patch(
        self, resource: Resource, name: str, patch: Any, content_type: str, *, namespace: str | None = None
    ) -> dict[str, Any]:
        """Patch an object with the patch type ``content_type``."""
        return await self.request(
            "PATCH", resource.path(namespace, name), body=patch, content_type=content_type
        )

    async def watch(
        self, resource: Resource, namespace: str | None, resource_version: str
    ) -> AsyncIterator[dict[str, Any]]:
        """The watch events (``{"type": ..., "object": ...}``) after ``resource_version``, until the
        server ends the watch; each line waits without a bound (a watch may be quiet for long)."""
        query = [("watch", "true"), ("resourceVersion", resource_version), ("allowWatchBookmarks", "true")]
        connection = self._connection(None)
        try:
            url = self._url(resource.path(namespace), query)
            response = await asyncio.to_thread(self._open, connection, url)
            while line := await asyncio.to_thread(response.readline):
                yield json.loads(line)
        finally:  # also on Ctrl-C: shutting the socket down ends the thread's wait for a line
            if connection.sock is not None:
                with contextlib.suppress(OSError):
                    connection.sock.shutdown(socket.SHUT_RDWR)
            connection.close()

    def _open(self, connection: http.client.HTTPConnection, url: str) -> http.client.HTTPResponse:
        try:
            connection.request("GET", url, headers=self.headers)
            response = connection.getresponse()
        except (OSError, http.client.HTTPException) as error:
            raise Unavailable(None, f"{type(error).__name__}: {error}") from error
        if response.status != 200:
            raise api_failure(response.status, response.reason, response.read())
        return response

    def close(self) -> None:
        """Close the idle connections."""
        while True:
            try:
                self.idle.get_nowait().close()
            except queue.Empty:
                return
