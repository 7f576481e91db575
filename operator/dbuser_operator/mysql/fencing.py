"""Fencing where the data lives: a leader epoch in the bookkeeping schema, and the sessions under it.

A leader checks its lease before every write, but a process can pause between the check and the write (or
its packets can sit in a stalled network): the write then lands after a newer leader's. This module
closes that window in MySQL itself, with the classic fencing token. Two tables in the bookkeeping schema:

- ``<schema>.leader_epoch``: one row per election (the Lease's name): the highest ``epoch`` that ever
  wrote, and its ``holder``. An epoch is the Lease's ``leaseTransitions`` when the process acquired it
  (monotonic per Lease: each new term of leadership, in any process, adds one; see the runtime's
  leader election);
- ``<schema>.leader_sessions``: the connection ids (``CONNECTION_ID()``) each epoch opened, with the
  MySQL user that opened them.

A new leader, before its first statement (:meth:`SessionFence.claim`), raises the stored epoch to its own
(refusing with :class:`SupersededError` if the stored one is already higher), then ``KILL CONNECTION``\\ s
every session that older epochs registered and that is still open under the same user, and forgets them.
Every connection, before its first statement (:meth:`SessionFence.register`), registers its id under its
epoch in *one statement* that locks the epoch row and inserts only if the stored epoch is still its own:
``INSERT … SELECT … FOR UPDATE``. One statement, not a client-side transaction, so that a client paused
in the middle never holds the lock; it then forgets its epoch's sessions that have ended (recycled pool
connections). So a stale leader's old connections are killed at the takeover, and its new ones fail to
register: its statements fail instead of landing.

Limits: DDL (``CREATE/ALTER/DROP USER``, ``GRANT``) commits implicitly and cannot share a transaction
with an epoch check: it is stopped by the session kill, which the new leader issues before its own first
write. A statement already executing inside the server when the kill arrives may complete (the server
checks the kill flag between steps). Connection ids restart after a server restart, which also ends every
session: a stale id is killed only if the processlist shows it under the same MySQL user, and never one
of the current epoch. Deleting the Lease restarts ``leaseTransitions`` at 0: a new leader then refuses to
write until the row of ``leader_epoch`` is deleted by hand. The admin account needs ``CONNECTION_ADMIN``
(MySQL) or ``CONNECTION ADMIN`` (MariaDB), or ``SUPER``, to kill another user's sessions; ``PROCESS`` to
see them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final, NoReturn

from dbuser_operator.mysql.connection import Session
from dbuser_operator.mysql.errors import MySQLError
from dbuser_operator.mysql.identifiers import SQL, quote_identifier
from dbuser_operator.mysql.ownership import validate_schema
from dbuser_operator.mysql.statement import Statement

EPOCH_TABLE: Final = "leader_epoch"
SESSIONS_TABLE: Final = "leader_sessions"
_UNKNOWN_THREAD: Final = 1094  # KILL of a session that has ended meanwhile

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


def tables(schema: str) -> tuple[SQL, SQL]:
    """```schema`.`leader_epoch``` and ```schema`.`leader_sessions```, the schema validated."""
    name = quote_identifier(validate_schema(schema))
    return SQL(f"{name}.{quote_identifier(EPOCH_TABLE)}"), SQL(f"{name}.{quote_identifier(SESSIONS_TABLE)}")


@dataclass
class SessionFence:
    """Registers every connection of this process under its epoch; the first one claims the epoch.

    ``epoch()`` is the current term's token (None: not leading, nothing may run); ``on_superseded`` is
    told when MySQL shows a newer epoch (the operator revokes its lease fence there).
    """

    schema: str
    election: str
    holder: str
    epoch: Callable[[], int | None]
    on_superseded: Callable[[str], None] = field(default=lambda reason: None)
    _claimed: int | None = field(default=None, init=False)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, init=False)

    def __post_init__(self) -> None:
        validate_schema(self.schema)
        for name, value in (("election", self.election), ("holder", self.holder)):
            if not 0 < len(value) <= 320:
                raise ValueError(f"the fencing {name} must be 1 to 320 characters")

    async def register(self, session: Session) -> None:
        """Before a new connection's first statement: claim the epoch once, then register this session."""
        epoch = self._current_epoch()
        if self._claimed != epoch:
            async with self._lock:
                if self._claimed != epoch:
                    await self.claim(session, epoch)
                    self._claimed = epoch
        epochs, sessions = tables(self.schema)
        registered = await session.execute(
            Statement(
                "INSERT INTO {sessions} (election, connection_id, epoch, user_name)"
                " SELECT e.election, CONNECTION_ID(), e.epoch, SUBSTRING_INDEX(USER(), '@', 1)"
                " FROM {epochs} e WHERE e.election = %s AND e.epoch = %s FOR UPDATE",
                self.election,
                epoch,
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

    async def claim(self, session: Session, epoch: int) -> Sequence[int]:
        """Record ``epoch`` as the newest, then kill the sessions of older epochs; their ids."""
        epochs, sessions = tables(self.schema)
        name = quote_identifier(self.schema)
        await session.execute(
            Statement("CREATE DATABASE IF NOT EXISTS {schema} CHARACTER SET utf8mb4", schema=SQL(name))
        )
        await session.execute(Statement(_CREATE_EPOCH, table=epochs))
        await session.execute(Statement(_CREATE_SESSIONS, table=sessions))
        # Holder first: MySQL and MariaDB assign left to right, so it sees the epoch before the update.
        await session.execute(
            Statement(
                "INSERT INTO {epochs} (election, epoch, holder) VALUES (%s, %s, %s)"
                " ON DUPLICATE KEY UPDATE holder = IF(epoch <= %s, %s, holder), epoch = GREATEST(epoch, %s)",
                self.election,
                epoch,
                self.holder,
                epoch,
                self.holder,
                epoch,
                epochs=epochs,
            )
        )
        rows = await session.fetch(
            Statement("SELECT epoch, holder FROM {epochs} WHERE election = %s", self.election, epochs=epochs)
        )
        stored = int(str(rows[0][0]))
        if stored > epoch:
            self._superseded(f"leader epoch {stored} ({rows[0][1]}) is newer than this process's {epoch}")
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
        killed = [int(str(row[0])) for row in stale]
        for connection_id in killed:
            await _kill(session, connection_id)
        await session.execute(
            Statement(
                "DELETE FROM {sessions} WHERE election = %s AND epoch < %s",
                self.election,
                epoch,
                sessions=sessions,
            )
        )
        return killed

    def _current_epoch(self) -> int:
        epoch = self.epoch()
        if epoch is None:
            self._superseded("this process does not lead: it has no leader epoch")
        return epoch

    def _superseded(self, reason: str) -> NoReturn:
        self.on_superseded(reason)
        raise SupersededError(reason)


async def _kill(session: Session, connection_id: int) -> None:
    try:
        await session.execute(Statement("KILL CONNECTION %s", connection_id))
    except MySQLError as error:
        if error.code != _UNKNOWN_THREAD:
            raise
