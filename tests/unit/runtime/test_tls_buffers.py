"""TLS connections read through the smaller buffer, and large payloads still arrive whole."""

from __future__ import annotations

import asyncio
import asyncio.sslproto
import os
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

from dbuser_operator.envtest.pki import CertificateAuthority
from dbuser_operator.runtime import tls_buffers


@pytest.fixture
def installed() -> Iterator[int]:
    original = asyncio.sslproto.SSLProtocol.max_size
    tls_buffers.install()
    yield tls_buffers.READ_BUFFER
    asyncio.sslproto.SSLProtocol.max_size = original


def _contexts(tmp_path: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    authority = CertificateAuthority()
    serving = authority.issue_server(["localhost"], ["127.0.0.1"])
    (tmp_path / "tls.crt").write_bytes(serving.cert_pem)
    (tmp_path / "tls.key").write_bytes(serving.key_pem)
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    client = ssl.create_default_context(cadata=authority.cert_pem.decode())
    return server, client


async def test_a_tls_connection_reads_through_the_small_buffer_and_gets_every_byte(
    installed: int, tmp_path: Path
) -> None:
    server_context, client_context = _contexts(tmp_path)
    payload = os.urandom(3 * 2**20 + 12345)  # many records, many buffers' worth

    async def send(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(payload)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(send, "127.0.0.1", 0, ssl=server_context)
    port = server.sockets[0].getsockname()[1]
    async with server:
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", port, ssl=client_context, server_hostname="localhost"
        )
        protocol = writer.transport._ssl_protocol  # type: ignore[attr-defined]
        assert len(protocol._ssl_buffer) == installed < 256 * 1024
        received = await reader.read(-1)
        writer.close()
    assert received == payload


def test_a_buffer_must_hold_something() -> None:
    with pytest.raises(ValueError, match="at least one byte"):
        tls_buffers.install(0)
