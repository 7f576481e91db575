"""The look every pass takes reads, in its one statement, what the later steps used to read on their own:
the limits and TLS requirement, MySQL's credential marker and retained password, MariaDB's
authentications; each the same as the statement of its own module reads."""

from __future__ import annotations

import pytest

from dbuser_operator.mysql import Database, ServerInfo
from dbuser_operator.mysql.accounts import accounts, dual_password, mariadb_dual_auth
from dbuser_operator.mysql.accounts.account_lookup import lookup
from dbuser_operator.mysql.accounts.authentication import Method
from dbuser_operator.mysql.accounts.limits import Limits, apply_limits, read_limits
from dbuser_operator.mysql.accounts.tls_identity import TLSIdentity
from dbuser_operator.mysql.bookkeeping.ownership import Owner, account, claim
from tests.integration.mysql.support import Accounts

pytestmark = pytest.mark.integration

OWNER = Owner("33333333-3333-4333-8333-333333333333", "team-c", "app")


async def test_the_look_reads_the_options_as_the_options_read_does(
    db: Database, accounts_made: Accounts, owned_schema: str, server: ServerInfo
) -> None:
    user = accounts_made.track(accounts_made.name(), "%")
    await accounts.create(db, user, "%", "pw-1")
    assert (await lookup(db, owned_schema, user, "%", server)).options == Limits()
    identity = TLSIdentity(issuer="/CN=Example CA", subject="/CN=app", cipher="")
    wanted = Limits(
        max_user_connections=7,
        max_queries_per_hour=100,
        max_updates_per_hour=20,
        max_connections_per_hour=30,
        require_tls=True,
        tls_identity=identity,
    )
    await apply_limits(db, user, "%", wanted)
    found = await lookup(db, owned_schema, user, "%", server)
    assert found.options == await read_limits(db, user, "%") == wanted
    written = db.statements_written, db.statements_read
    assert await apply_limits(db, user, "%", wanted, current=found.options) is False
    assert (db.statements_written, db.statements_read) == written  # nothing read, nothing sent
    assert (await lookup(db, owned_schema, accounts_made.name(), "%", server)).options is None


async def test_the_look_reads_the_password_state_as_each_flavour_keeps_it(
    db: Database, accounts_made: Accounts, owned_schema: str, server: ServerInfo
) -> None:
    user = accounts_made.track(accounts_made.name(), "%")
    await accounts.create(db, user, "%", "pw-1")
    await claim(db, owned_schema, account(user, "%"), OWNER)
    found = await lookup(db, owned_schema, user, "%", server)
    assert found.fingerprint is not None
    assert len(found.fingerprint) == 64
    if dual_password.supports_dual_passwords(server):
        assert found.password_state == dual_password.PasswordState(None, retained=False)
        await dual_password.set_password(db, user, "%", "pw-2", "uid/2", retain=True)
        found = await lookup(db, owned_schema, user, "%", server)
        assert found.password_state == await dual_password.read_state(db, user, "%")
        assert found.password_state == dual_password.PasswordState("uid/2", retained=True)
        assert found.dual_auth is None
    elif mariadb_dual_auth.supports_dual_auth(server):
        method = Method(mariadb_dual_auth.PLUGIN, server.flavour)
        state = await mariadb_dual_auth.read_state(db, user, "%")
        await mariadb_dual_auth.set_password(db, user, "%", "pw-2", method, state=state, retain=True)
        found = await lookup(db, owned_schema, user, "%", server)
        assert found.dual_auth == await mariadb_dual_auth.read_state(db, user, "%")
        assert found.dual_auth is not None
        assert found.dual_auth.retained
        assert found.dual_auth.holds(method, "pw-2")
        assert found.password_state is None
    else:
        pytest.fail(f"{server}: neither dual passwords nor two authentications")
    gone = await lookup(db, owned_schema, accounts_made.name(), "%", server)
    assert (gone.password_state, gone.dual_auth, gone.fingerprint) == (None, None, None)
