"""The leader epoch in MySQL: a newer leader kills the sessions of older ones, whose new ones are refused.

A :class:`Lease` stands in for the Kubernetes Lease's part (the epochs it hands out, and who holds it);
the runtime's own tests cover the real one.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import pytest

from dbuser_operator.envtest import MySQLServer
from dbuser_operator.mysql import ConnectionSettings, Database, Statement
from dbuser_operator.mysql.bookkeeping.fencing import LeaderTerm, SessionFence, SupersededError, tables
from dbuser_operator.mysql.identifiers import SQL, quote_identifier
from tests.integration.mysql.support import Databases, admin_rows
from tests.support.kube import eventually

pytestmark = pytest.mark.integration


@dataclass
class Lease:
    """The Lease's part: the highest epoch it handed out, and the term that holds it (its name)."""

    epoch: int = 0
    holder: str = ""

    async def reserve(self, term: str, above: int) -> int:
        if term != self.holder:
            raise SupersededError("another term holds the Lease")
        self.epoch = max(self.epoch, above) + 1
        return self.epoch


class Leader:
    """A Database whose connections register under ``epoch``, as one leader term's would.

    With a ``lease`` that this term holds, it may be given a higher epoch; without one, never.
    """

    def __init__(
        self,
        settings: ConnectionSettings,
        schema: str,
        holder: str,
        epoch: int,
        lease: Lease | None = None,
        term: LeaderTerm | None = None,
    ) -> None:
        self.term = term or LeaderTerm(epoch, uuid.uuid4().hex[:12])
        self.superseded: list[str] = []
        self.refuse = False
        if lease is not None and term is None:
            lease.holder, lease.epoch = self.term.name, max(lease.epoch, epoch)
        self.fence = SessionFence(
            schema,
            "ns/lease",
            holder,
            lambda: self.term,
            self.superseded.append,
            reserve=None if lease is None else lambda above: lease.reserve(self.term.name, above),
        )
        self.db = Database(settings, before_write=self._check, on_connect=self.fence.register)

    def _check(self) -> None:
        if self.refuse:
            raise PermissionError("fence closed")


def _marker(schema: str) -> SQL:
    return SQL(quote_identifier(schema) + ".`marker`")


async def test_a_newer_epoch_kills_the_older_sessions_and_refuses_their_new_ones(
    admin_settings: ConnectionSettings, databases_made: Databases, mysql: MySQLServer
) -> None:
    schema = databases_made.name("_fence")
    old, new = (Leader(admin_settings, schema, holder, epoch) for holder, epoch in (("a", 4), ("b", 5)))
    try:
        await old.db.execute(Statement("CREATE TABLE {t} (n INT)", t=_marker(schema)))
        await old.db.execute(Statement("INSERT INTO {t} VALUES (1)", t=_marker(schema)))
        epochs, sessions = tables(schema)
        assert admin_rows(mysql, f"SELECT epoch, holder FROM {epochs}") == [(4, f"a {old.term.name}")]
        registered = admin_rows(mysql, f"SELECT connection_id FROM {sessions}")
        assert len(registered) == 1

        # A connection that ended is forgotten when the next one registers.
        await old.db.close()
        query = "SELECT ID FROM information_schema.PROCESSLIST WHERE ID = %s"
        await eventually(lambda: not admin_rows(mysql, query, registered[0][0]), what="the session ended")
        await old.db.fetch(Statement("SELECT 1"))
        assert admin_rows(mysql, f"SELECT connection_id FROM {sessions}") != registered
        registered = admin_rows(mysql, f"SELECT connection_id FROM {sessions}")
        assert len(registered) == 1

        # The new leader's first statement claims epoch 5 and kills the old leader's session.
        await new.db.fetch(Statement("SELECT 1"))
        assert admin_rows(mysql, f"SELECT epoch, holder FROM {epochs}") == [(5, f"b {new.term.name}")]
        alive = admin_rows(
            mysql, "SELECT ID FROM information_schema.PROCESSLIST WHERE ID = %s", registered[0][0]
        )
        assert alive == []

        # The old leader's next statement finds its connection killed, and its new one refused.
        with pytest.raises(SupersededError):
            await old.db.execute(Statement("INSERT INTO {t} VALUES (2)", t=_marker(schema)))
        assert old.superseded
        assert admin_rows(mysql, f"SELECT n FROM {_marker(schema)}") == [(1,)]

        # An old epoch that starts late (it acquired before the new one, then paused) refuses to claim.
        late = Leader(admin_settings, schema, "c", 4)
        with pytest.raises(SupersededError, match="newer"):
            await late.db.fetch(Statement("SELECT 1"))
        await late.db.close()
        assert admin_rows(mysql, f"SELECT epoch, holder FROM {epochs}") == [(5, f"b {new.term.name}")]
    finally:
        await old.db.close()
        await new.db.close()


async def test_a_refused_write_sends_nothing(
    admin_settings: ConnectionSettings, databases_made: Databases, mysql: MySQLServer
) -> None:
    schema = databases_made.name("_fence")
    leader = Leader(admin_settings, schema, "a", 1)
    try:
        await leader.db.execute(Statement("CREATE TABLE {t} (n INT)", t=_marker(schema)))
        written = leader.db.statements_written
        leader.refuse = True
        with pytest.raises(PermissionError):
            await leader.db.execute(Statement("INSERT INTO {t} VALUES (1)", t=_marker(schema)))
        assert leader.db.statements_written == written
        assert admin_rows(mysql, f"SELECT n FROM {_marker(schema)}") == []
    finally:
        await leader.db.close()


async def _session_of(leader: Leader, mysql: MySQLServer, schema: str) -> int:
    """The connection id ``leader`` registered (it has run one statement)."""
    _, sessions = tables(schema)
    rows = admin_rows(mysql, f"SELECT connection_id FROM {sessions} WHERE epoch = %s", leader.term.epoch)
    assert len(rows) == 1
    return int(rows[0][0])


def _alive(mysql: MySQLServer, connection_id: int) -> bool:
    return bool(
        admin_rows(mysql, "SELECT ID FROM information_schema.PROCESSLIST WHERE ID = %s", connection_id)
    )


@pytest.mark.parametrize("old_epoch", [0, 5])
async def test_the_leader_of_a_new_lease_takes_an_epoch_above_the_old_ones_and_fences_them(
    admin_settings: ConnectionSettings, databases_made: Databases, mysql: MySQLServer, old_epoch: int
) -> None:
    """The Lease was deleted: its new leader starts at epoch 0, at or below what MySQL holds. The Lease
    gives it a higher one; the old Lease's leader (paused, say) is fenced all the same."""
    schema = databases_made.name("_fence")
    old_lease, new_lease = Lease(), Lease()
    old = Leader(admin_settings, schema, "a", old_epoch, old_lease)
    new = Leader(admin_settings, schema, "b", 0, new_lease)
    try:
        await old.db.execute(Statement("CREATE TABLE {t} (n INT)", t=_marker(schema)))
        old_session = await _session_of(old, mysql, schema)
        old_lease.holder = ""  # the old Lease is gone: nobody can be given an epoch on it any more

        await new.db.execute(Statement("INSERT INTO {t} VALUES (1)", t=_marker(schema)))
        epochs, sessions = tables(schema)
        assert new_lease.epoch == old_epoch + 1  # recorded on the Lease before it was used
        assert admin_rows(mysql, f"SELECT epoch, holder FROM {epochs}") == [
            (old_epoch + 1, f"b {new.term.name}")
        ]
        assert not _alive(mysql, old_session)
        assert not new.superseded

        with pytest.raises(SupersededError):
            await old.db.execute(Statement("INSERT INTO {t} VALUES (2)", t=_marker(schema)))
        assert admin_rows(mysql, f"SELECT n FROM {_marker(schema)}") == [(1,)]
        # The new leader goes on writing on new connections.
        await new.db.close()
        await new.db.execute(Statement("INSERT INTO {t} VALUES (3)", t=_marker(schema)))
        assert admin_rows(mysql, f"SELECT n FROM {_marker(schema)} ORDER BY n") == [(1,), (3,)]
        assert len(admin_rows(mysql, f"SELECT connection_id FROM {sessions}")) == 1
    finally:
        await old.db.close()
        await new.db.close()


async def test_two_resources_on_one_server_share_their_terms_epoch(
    admin_settings: ConnectionSettings, databases_made: Databases, mysql: MySQLServer
) -> None:
    """Two server resources that reach the same server and schema: one term, one epoch, no mutual kill."""
    schema = databases_made.name("_fence")
    epochs, _ = tables(schema)
    await _seed(admin_settings, mysql, schema, epoch=7, holder="a")  # from a Lease that was deleted
    lease = Lease()
    first = Leader(admin_settings, schema, "b", 0, lease)
    second = Leader(admin_settings, schema, "b", 0, lease, term=first.term)
    try:
        await first.db.execute(Statement("CREATE TABLE {t} (n INT)", t=_marker(schema)))
        await second.db.execute(Statement("INSERT INTO {t} VALUES (1)", t=_marker(schema)))
        await first.db.execute(Statement("INSERT INTO {t} VALUES (2)", t=_marker(schema)))
        assert lease.epoch == 8
        assert admin_rows(mysql, f"SELECT epoch, holder FROM {epochs}") == [(8, f"b {first.term.name}")]
        assert first.superseded == []
        assert second.superseded == []
    finally:
        await first.db.close()
        await second.db.close()


async def test_a_row_of_the_older_scheme_is_taken_over(
    admin_settings: ConnectionSettings, databases_made: Databases, mysql: MySQLServer
) -> None:
    """The older version stored the Lease's transitions and the bare identity: the next term's epoch is
    above it on the same Lease, and a new Lease is given one above it."""
    schema = databases_made.name("_fence")
    epochs, _ = tables(schema)
    await _seed(admin_settings, mysql, schema, epoch=1, holder="b")
    same_lease = Leader(admin_settings, schema, "a", 2)  # no Lease to ask: its own epoch is enough
    try:
        await same_lease.db.fetch(Statement("SELECT 1"))
        assert admin_rows(mysql, f"SELECT epoch FROM {epochs}") == [(2,)]
    finally:
        await same_lease.db.close()
    await _seed(admin_settings, mysql, schema, epoch=1, holder="b", create=False)
    new_lease = Leader(admin_settings, schema, "a", 0, Lease())
    try:
        await new_lease.db.fetch(Statement("SELECT 1"))
        assert admin_rows(mysql, f"SELECT epoch FROM {epochs}") == [(2,)]
        assert not new_lease.superseded
    finally:
        await new_lease.db.close()


async def _seed(
    settings: ConnectionSettings,
    mysql: MySQLServer,
    schema: str,
    *,
    epoch: int,
    holder: str,
    create: bool = True,
) -> None:
    """The tables as a first claim makes them, then the election's row set to ``epoch`` and ``holder``."""
    if create:
        seeder = Leader(settings, schema, "seed", 0)
        try:
            await seeder.db.fetch(Statement("SELECT 1"))
        finally:
            await seeder.db.close()
    epochs, sessions = tables(schema)
    with mysql.connect() as connection, connection.cursor() as cursor:
        cursor.execute(f"UPDATE {epochs} SET epoch = %s, holder = %s", (epoch, holder))
        cursor.execute(f"DELETE FROM {sessions}")
