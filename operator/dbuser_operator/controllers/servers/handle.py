"""The MySQL server the operator manages, as the steps share it: connection, bookkeeping schema, version."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import time

import structlog

from dbuser_operator.mysql.accounts.known_passwords import KnownPasswords
from dbuser_operator.mysql.bookkeeping import ownership
from dbuser_operator.mysql.bookkeeping.books import TABLE, Book
from dbuser_operator.mysql.session.connection import Database
from dbuser_operator.mysql.session.probe import Probe
from dbuser_operator.mysql.session.server import ServerInfo, read_identity, read_server

log = structlog.get_logger(__name__)


class ServerHandle:
    """One MySQL server: its connection, the operator's schema there, and its version (read once).

    ``key`` and ``name`` say which server resource it is (empty for the server of the settings). ``probe``
    is the health checks' own connection, outside the pool. ``known``: the passwords this process set on the
    server's accounts (:mod:`~dbuser_operator.mysql.accounts.known_passwords`).
    """

    def __init__(self, db: Database, schema: str, key: str = "", name: str = "") -> None:
        self.db = db
        self.schema = schema
        self.key = key  # the server's key (controllers.kit.resources.server_key); "" for the settings' server
        self.name = name  # for logs and messages: "MySQLServer team-a/main"; "" for the settings' server
        self._server: ServerInfo | None = None
        self._read_at = 0.0  # monotonic time of the last read
        self._schema_ready = False
        self._books_ready = {TABLE}  # the schema's own table (ensure_schema)
        self._lock = asyncio.Lock()
        self.known = KnownPasswords()
        self.digest_rounds: int | None = None  # caching_sha2_password's, once read (mysql.hashed_password)

    @property
    def doubted(self) -> asyncio.Event:
        """Set by :meth:`doubt`, and by any statement through the pool that finds the server unavailable
        (:attr:`~dbuser_operator.mysql.session.connection.Database.unavailable`); cleared by the liveness
        probe that answers it."""
        return self.db.unavailable

    def doubt(self) -> None:
        """Somebody other than the liveness probe (a health check) found the server unreachable: the probe
        looks at once, and reports what it finds even if it saw no outage (:mod:`.liveness`)."""
        self.doubted.set()

    async def server(self) -> ServerInfo:
        """Flavour, version and privilege names of the server, read (and logged) on first use."""
        if self._server is None:
            self._server = await read_server(self.db)
            self._read_at = time.monotonic()
            log.info(
                "managing MySQL server",
                server=str(self._server),
                resource=self.name or None,
                flavour=self._server.flavour,
                version=".".join(str(part) for part in self._server.version),
            )
        return self._server

    def returned(self) -> None:
        """The server answers again after an outage: what was learned of it is asked anew (its version and
        privileges, the bookkeeping schema and tables, the digest rounds), for the server that answers may
        be another one, or the same restarted on a new version or restored from a backup without the
        schema."""
        self._server, self._schema_ready, self.digest_rounds = None, False, None
        self._books_ready = {TABLE}

    def saw_default_lifetime(self, days: int) -> None:
        """The server's ``default_password_lifetime`` as a read of this moment found it (the drift check's):
        what a new account's first pass takes from :meth:`server` without a statement of its own."""
        if self._server is not None and self._server.default_lifetime != days:
            self._server = dataclasses.replace(self._server, default_lifetime=days)

    async def server_reread(self, min_age: float = 60.0) -> ServerInfo:
        """The server read again (a plugin or an upgrade may have brought privileges), unless it was read
        less than ``min_age`` seconds ago: what a privilege the server seemed not to have asks for."""
        if self._server is not None and time.monotonic() - self._read_at >= min_age:
            self._server = None
        return await self.server()

    async def identity(self) -> str:
        """Which physical server this handle reaches, asked now (:func:`~.mysql.server.read_identity`): a
        server behind a name can change, and whoever decides that two handles reach one server asks both."""
        info = await self.server()
        return await read_identity(self.db, info.flavour)

    async def ensure_schema(self) -> None:
        """Create the bookkeeping schema and table on first use (idempotent; retried after a failure)."""
        if self._schema_ready:
            return
        async with self._lock:
            if not self._schema_ready:
                await ownership.ensure_schema(self.db, self.schema)
                self._schema_ready = True

    async def ensure_book(self, book: Book) -> None:
        """The bookkeeping schema, and the table of ``book`` (roles, databases), on first use."""
        await self.ensure_schema()
        if book.name not in self._books_ready:
            await ownership.ensure_book(self.db, self.schema, book)
            self._books_ready.add(book.name)

    @functools.cached_property
    def probe(self) -> Probe:
        """The health checks' own connection (opened by its first probe)."""
        return Probe(self.db.settings, self.db.tls_context, self.db.guard)

    async def close(self) -> None:
        """Close the pool and the probe's connection."""
        if "probe" in self.__dict__:
            self.probe.close()
        await self.db.close()
