"""The plain client against a real HTTP server on loopback: a pooled connection the server closed while it
was idle is replaced for a read, and an error status is typed with the server's message."""

from __future__ import annotations

import json
import socketserver
import threading
from collections.abc import Iterator

import pytest

from dbuser_operator.kubectl_dbu.errors import NotFound
from dbuser_operator.kubectl_dbu.kubeconfig import Endpoint
from dbuser_operator.kubectl_dbu.names import DATABASE_USERS
from dbuser_operator.kubectl_dbu.plain import PlainClient


class OneAnswerEach(socketserver.StreamRequestHandler):
    """Answers one request per connection as HTTP/1.1 keep-alive, then closes it: what a server does to an
    idle connection."""

    def handle(self) -> None:
        request_line = self.rfile.readline().decode()
        while self.rfile.readline() not in {b"\r\n", b""}:
            pass
        missing = "/missing" in request_line
        body = json.dumps(
            {"kind": "Status", "message": 'databaseusers "missing" not found'} if missing else {"items": []}
        ).encode()
        status = "404 Not Found" if missing else "200 OK"
        head = f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        self.wfile.write(head.encode() + body)


@pytest.fixture
def server() -> Iterator[str]:
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), OneAnswerEach) as running:
        thread = threading.Thread(target=running.serve_forever, daemon=True)
        thread.start()
        yield f"http://127.0.0.1:{running.server_address[1]}"
        running.shutdown()


async def test_a_closed_idle_connection_is_replaced_for_a_read(server: str) -> None:
    client = PlainClient(Endpoint(server=server))
    for _ in range(3):  # the second and third take the connection the server closed
        assert await client.list_all(DATABASE_USERS, "team") == ([], "")
    client.close()


async def test_an_error_status_is_typed_with_the_servers_message(server: str) -> None:
    client = PlainClient(Endpoint(server=server))
    with pytest.raises(NotFound, match='databaseusers "missing" not found'):
        await client.get(DATABASE_USERS, "missing", "team")
    client.close()
