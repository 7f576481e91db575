"""Fencing where the data lives: a leader epoch in the bookkeeping schema, and the sessions under it.

A leader checks its lease before every write, but a process can pause between the check and the write (or
its packets can sit in a stalled network): the write then lands after a newer leader's. This module
closes that window in MySQL itself, with the classic fencing token. Two tables in the bookkeeping schema:

- ``<schema>.leader_epoch``: one row per election (the Lease's name): the highest ``epoch`` that ever
  wrote, and its ``holder``: the process's identity and the random name of its term (:class:`LeaderTerm`).
  An epoch comes from the Lease (monotonic per Lease: each new term of leadership, in any process, takes
  a higher one; see the runtime's leader election);
- ``<schema>.leader_sessions``: the connection ids (``CONNECTION_ID()``) each epoch opened, with the
  MySQL user that opened them.

A new leader, before its first statement (:meth:`SessionFence.claim`), raises the stored epoch to its own,
then ``KILL CONNECTION``\\ s every session that older epochs registered and that is still open under the
same user, and forgets them. When the stored epoch is another term's and as high as its own or higher, it
is a newer leader's, or one of a Lease that was deleted (a reinstall starts again at 0): the leader asks
its Lease for an epoch above it (``reserve``), which the Lease records first and refuses to a term it no
longer names (:class:`SupersededError`), and claims that one. So every epoch used here was on the Lease
first, and every later term of the Lease starts above it.

Every connection, before its first statement (:meth:`SessionFence.register`), registers its id under its
epoch in *one statement* that locks the epoch row and inserts only if the stored epoch and term are still
its own: ``INSERT … SELECT … FOR UPDATE``. One statement, not a client-side transaction, so that a client
paused in the middle never holds the lock; it then forgets its epoch's sessions that have ended (recycled
pool connections). So a stale leader's old connections are killed at the takeover, and its new ones fail
to register: its statements fail instead of landing.

Limits: DDL (``CREATE/ALTER/DROP USER``, ``GRANT``) commits implicitly and cannot share a transaction
with an epoch check: it is stopped by the session kill, which the new leader issues before its own first
write. A statement already executing inside the server when the kill arrives may complete (the server
checks the kill flag between steps). Connection ids restart after a server restart, which also ends every
session: a stale id is killed only if the processlist shows it under the same MySQL user, and never one
of the current epoch. The admin account needs ``CONNECTION_ADMIN``
(MySQL) or ``CONNECTION ADMIN`` (MariaDB), or ``SUPER``, to kill another user's sessions; ``PROCESS`` to
see them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Final, NoReturn

from dbuser_operator.mysql.bookkeeping.ownership import validate_schema
from dbuser_operator.mysql.errors import MySQLError
from dbuser_operator.mysql.identifiers import SQL, quote_identifier
from dbuser_operator.mysql.session.connection import Session
from dbuser_operator.mysql.session.statement import Statement

EPOCH_TABLE: Final = "leader_epoch"
SESSIONS_TABLE: Final = "leader_sessions"
_UNKNOWN_THREAD: Final = 1094  # KILL of a session that has ended meanwhile
_CLAIM_ATTEMPTS: Final = 3
_HOLDER_CHARS: Final = 240  # of the identity: with a space and the term's 12 characters, 253 at most

_CREATE_EPOCH: Final = (
    "CREATE TABLE IF NOT EXISTS {table} ("
    " election VARCHAR(320) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,"
    " epoch BIGINT NOT NULL,"
    " holder VARCHAR(253) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,"
    " updated_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),"
    " PRIMARY KEY (election)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
    " COMMENT='dbuser-operator: the newest leader epoch (fencing token) of each election'"
)
_CREATE_SESSIONS: Final = (
    "CREATE TABLE IF NOT EXISTS {table} ("
    " election VARCHAR(320) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,"
    " connection_id BIGINT UNSIGNED NOT NULL,"
    " epoch BIGINT NOT NULL,"
    " user_name VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,"
    " registered_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),"
    " PRIMARY KEY (election, connection_id, epoch)"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
    " COMMENT='dbuser-operator: the sessions each leader epoch opened, killed by the next epoch'"
)


class SupersededError(MySQLError):
    """A newer leader epoch is recorded in MySQL: this process must not write anything any more."""

    reason = "Superseded"


class EpochNotReservedError(MySQLError):
    """The Lease could not be asked for a higher epoch (the API server did not answer): retry later."""

    reason = "LeaderEpochNotReserved"


def tables(schema: str) -> tuple[SQL, SQL]:
    """```schema`.`leader_epoch``` and ```schema`.`leader_sessions```, the schema validated."""
    name = quote_identifier(validate_schema(schema))
    return SQL(f"{name}.{quote_identifier(EPOCH_TABLE)}"), SQL(f"{name}.{quote_identifier(SESSIONS_TABLE)}")


@dataclass(frozen=True)
class LeaderTerm:
    """One leadership of this process: the epoch the Lease gave it, and a random name (``name``)."""

    epoch: int
    name: str


EpochReserver = Callable[[int], Awaitable[int]]
"""``above`` → an epoch for the current term above it, recorded on the Lease first; raises
:class:`SupersededError` when the term no longer holds the Lease."""


@dataclass
class SessionFence:
    """Registers every connection of this process under its term's epoch here; the first one claims it.

    ``term()`` is the current leadership (None: not leading, nothing may run); ``reserve`` asks the Lease
    for a higher epoch when this schema holds the Lease's own or a higher one from another term (None:
    that term is newer, always); ``on_superseded`` is told when MySQL shows a newer epoch (the operator
    revokes its lease fence there). Two server resources that reach one server make two SessionFences on
    one row: the first to claim it sets the term's epoch there, the other takes it as it is.
    """

    schema: str
    election: str
    holder: str
    term: Callable[[], LeaderTerm | None]
    on_superseded: Callable[[str], None] = field(default=lambda reason: None)
    reserve: EpochReserver | None = None
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, init=False)
    _claimed: tuple[LeaderTerm, int] | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        validate_schema(self.schema)
        for name, value in (("election", self.election), ("holder", self.holder)):
            if not 0 < len(value) <= 320:
                raise ValueError(f"the fencing {name} must be 1 to 320 characters")

    async def register(self, session: Session) -> None:
        """Before a new connection's first statement: claim the epoch once, then register this session."""
        term = self._current_term()
        if self._claimed is None or self._claimed[0] != term:
            async with self._lock:
                if self._claimed is None or self._claimed[0] != term:
                    self._claimed = (term, await self.claim(session, term))
        epoch = self._claimed[1]
        epochs, sessions = tables(self.schema)
        registered = await session.execute(
            Statement(
                "INSERT INTO {sessions} (election, connection_id, epoch, user_name)"
                " SELECT e.election, CONNECTION_ID(), e.epoch, SUBSTRING_INDEX(USER(), '@', 1)"
                " FROM {epochs} e WHERE e.election = %s AND e.epoch = %s AND e.holder = %s FOR UPDATE",
                self.election,
                epoch,
                self._holder(term),
                sessions=sessions,
                epochs=epochs,
            )
        )
        if registered != 1:
            self._superseded(f"leader epoch {epoch} is no longer the newest in MySQL")
        # This epoch's sessions that have ended (recycled connections): forgotten, so rows do not pile up.
        await session.execute(
            Statement(
                "DELETE FROM {sessions} WHERE election = %s AND epoch = %s"
                " AND connection_id NOT IN (SELECT ID FROM information_schema.PROCESSLIST)",
                self.election,
                epoch,
                sessions=sessions,
            )
        )

    async def claim(self, session: Session, term: LeaderTerm) -> int:
        """Record an epoch of ``term`` as the newest here, then kill the sessions of older epochs; the epoch.

        The term's own epoch, unless this schema holds it or a higher one from another term: then a
        higher one from ``reserve`` (a newer leader refuses it; a Lease that was deleted does not).
        """
        epochs, sessions = tables(self.schema)
        name = quote_identifier(self.schema)
        await session.execute(
            Statement("CREATE DATABASE IF NOT EXISTS {schema} CHARACTER SET utf8mb4", schema=SQL(name))
        )
        await session.execute(Statement(_CREATE_EPOCH, table=epochs))
        await session.execute(Statement(_CREATE_SESSIONS, table=sessions))
        holder = self._holder(term)
        stored = await self._stored(session)
        # Claimed already by this term (another server resource that reaches the same server): keep it.
        epoch = stored[0] if stored is not None and stored[1] == holder else await self._raise(session, term)
        stale = await session.fetch(
            Statement(
                "SELECT DISTINCT s.connection_id FROM {sessions} s"
                " JOIN information_schema.PROCESSLIST p ON p.ID = s.connection_id AND p.USER = s.user_name"
                " WHERE s.election = %s AND s.epoch < %s AND s.connection_id <> CONNECTION_ID()"
                " AND s.connection_id NOT IN"
                " (SELECT c.connection_id FROM {sessions} c WHERE c.election = %s AND c.epoch = %s)",
                self.election,
                epoch,
                self.election,
                epoch,
                sessions=sessions,
            )
        )
        for connection_id in [int(str(row[0])) for row in stale]:
            await _kill(session, connection_id)
        await session.execute(
            Statement(
                "DELETE FROM {sessions} WHERE election = %s AND epoch < %s",
                self.election,
                epoch,
                sessions=sessions,
            )
        )
        return epoch

    async def _raise(self, session: Session, term: LeaderTerm) -> int:
        """Raise the stored epoch to one of ``term``'s: its own, or reserved above the one stored."""
        epochs, _ = tables(self.schema)
        holder, epoch = self._holder(term), term.epoch
        for _ in range(_CLAIM_ATTEMPTS):
            await session.execute(
                Statement(
                    "INSERT INTO {epochs} (election, epoch, holder) VALUES (%s, %s, %s)"
                    " ON DUPLICATE KEY UPDATE election = election",
                    self.election,
                    epoch,
                    holder,
                    epochs=epochs,
                )
            )
            # Only ever up, and never over this term's own row (another resource on the same server may
            # have claimed it meanwhile, with another epoch the Lease gave this term); an equal epoch
            # stays with its holder: two terms never share one.
            await session.execute(
                Statement(
                    "UPDATE {epochs} SET epoch = %s, holder = %s"
                    " WHERE election = %s AND epoch < %s AND holder <> %s",
                    epoch,
                    holder,
                    self.election,
                    epoch,
                    holder,
                    epochs=epochs,
                )
            )
            stored = await self._stored(session)
            if stored is None:
                raise MySQLError(f"the row of {self.election!r} in {EPOCH_TABLE} vanished while claiming it")
            if stored[1] == holder:
                return stored[0]
            # Another term's epoch, as high as ours or higher: a newer leader (the Lease refuses us a
            # higher one), or a leader of a Lease that no longer exists (it gives us one above it).
            epoch = await self._reserve(stored, epoch)
        return self._superseded(f"leader epoch {epoch} was overtaken {_CLAIM_ATTEMPTS} times in a row")

    async def _reserve(self, stored: tuple[int, str], epoch: int) -> int:
        newer = f"leader epoch {stored[0]} ({stored[1]}) is as new as this process's {epoch} or newer"
        if self.reserve is None:
            self._superseded(newer)
        try:
            return await self.reserve(stored[0])
        except SupersededError as error:
            self._superseded(f"{newer}, and the Lease has a newer leader too: {error}")
        except MySQLError:
            raise
        except Exception as error:  # the API server did not answer: try again later
            raise EpochNotReservedError(
                f"could not record a new leader epoch on the Lease: {error!r}"
            ) from None

    async def _stored(self, session: Session) -> tuple[int, str] | None:
        epochs, _ = tables(self.schema)
        rows = await session.fetch(
            Statement("SELECT epoch, holder FROM {epochs} WHERE election = %s", self.election, epochs=epochs)
        )
        return (int(str(rows[0][0])), str(rows[0][1])) if rows else None

    def _holder(self, term: LeaderTerm) -> str:
        """The stored holder: this process's identity (for people) and the term's name (unique)."""
        return f"{self.holder[:_HOLDER_CHARS]} {term.name}"

    def _current_term(self) -> LeaderTerm:
        term = self.term()
        if term is None:
            self._superseded("this process does not lead: it has no leader epoch")
        return term

    def _superseded(self, reason: str) -> NoReturn:
        self.on_superseded(reason)
        raise SupersededError(reason)


async def _kill(session: Session, connection_id: int) -> None:
    try:
        await session.execute(Statement("KILL CONNECTION %s", connection_id))
    except MySQLError as error:
        if error.code != _UNKNOWN_THREAD:
            raise
