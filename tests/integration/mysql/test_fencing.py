"""The leader epoch in MySQL: a newer leader kills the sessions of older ones, whose new ones are refused."""

from __future__ import annotations

import pytest

from dbuser_operator.envtest import MySQLServer
from dbuser_operator.mysql import ConnectionSettings, Database, Statement
from dbuser_operator.mysql.fencing import SessionFence, SupersededError, tables
from dbuser_operator.mysql.identifiers import SQL, quote_identifier
from tests.integration.mysql.support import Databases, admin_rows
from tests.support.kube import eventually

pytestmark = pytest.mark.integration


class Leader:
    """A Database whose connections register under ``epoch``, as one leader term's would."""

    def __init__(self, settings: ConnectionSettings, schema: str, holder: str, epoch: int) -> None:
        self.epoch = epoch
        self.superseded: list[str] = []
        self.refuse = False
        self.fence = SessionFence(schema, "ns/lease", holder, lambda: self.epoch, self.superseded.append)
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
        assert admin_rows(mysql, f"SELECT epoch, holder FROM {epochs}") == [(4, "a")]
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
        assert admin_rows(mysql, f"SELECT epoch, holder FROM {epochs}") == [(5, "b")]
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
        assert admin_rows(mysql, f"SELECT epoch, holder FROM {epochs}") == [(5, "b")]
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
