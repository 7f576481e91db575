"""The account lock and password policy against the real server (each flavour): written only when it differs,
read back as the server keeps it, in the drift inventory too (still two queries), refused where the server
has no failed-login lock."""

from __future__ import annotations

import pytest

from dbuser_operator.envtest import LocalMySQLServer, MySQLServer
from dbuser_operator.mysql import Database, InvalidAccountError, InvalidOptionsError, ServerInfo
from dbuser_operator.mysql.accounts import accounts
from dbuser_operator.mysql.accounts.account_lookup import lookup
from dbuser_operator.mysql.accounts.lock_policy import (
    DEFAULT_LIFETIME,
    NEVER,
    UNBOUNDED,
    LockPolicy,
    WantedPolicy,
    apply_policy,
    failed_login_lock_supported,
    read_policy,
)
from dbuser_operator.mysql.bookkeeping.inventory import QUERIES, inventory
from dbuser_operator.mysql.bookkeeping.ownership import Owner, account, claim
from tests.integration.mysql.support import Accounts, admin

pytestmark = pytest.mark.integration

OWNER = Owner("44444444-4444-4444-8444-444444444444", "team-d", "app")


async def new_account(db: Database, accounts_made: Accounts, host: str = "%") -> str:
    user = accounts_made.track(accounts_made.name(), host)
    await accounts.create(db, user, host, "pw")
    return user


async def test_written_only_when_it_differs_and_read_back(
    db: Database, accounts_made: Accounts, server: ServerInfo
) -> None:
    user = await new_account(db, accounts_made, "10.1.%")
    assert await read_policy(db, user, "10.1.%", server) == (LockPolicy(), 0)
    assert await apply_policy(db, user, "10.1.%", WantedPolicy(), server) is None  # nothing written

    written = db.statements_written
    wanted = WantedPolicy(locked=True, password_lifetime=90)
    changed = await apply_policy(db, user, "10.1.%", wanted, server)
    assert changed == (LockPolicy(), LockPolicy(locked=True, password_lifetime=90))
    assert db.statements_written - written == 1  # one ALTER USER for both
    assert await read_policy(db, user, "10.1.%", server) == (changed[1], 0)
    assert await apply_policy(db, user, "10.1.%", wanted, server) is None

    for lifetime in (NEVER, DEFAULT_LIFETIME, 65535):
        await apply_policy(db, user, "10.1.%", WantedPolicy(password_lifetime=lifetime), server)
        found = await read_policy(db, user, "10.1.%", server)
        assert found == (LockPolicy(password_lifetime=lifetime), 0)


async def test_an_unset_lifetime_follows_the_server_s_default(
    db: Database, mysql: MySQLServer, mysql_provider: object, accounts_made: Accounts, server: ServerInfo
) -> None:
    if not isinstance(mysql_provider, LocalMySQLServer):
        pytest.skip("changes a server-wide setting: only on a local server of the session's flavour")
    user = await new_account(db, accounts_made)
    admin(mysql, "SET GLOBAL default_password_lifetime = 3")
    try:
        assert await read_policy(db, user, "%", server) == (LockPolicy(), 3)
        changed = await apply_policy(db, user, "%", WantedPolicy(), server)
        assert changed is not None
        assert changed[1] == LockPolicy(password_lifetime=NEVER)
    finally:
        admin(mysql, "SET GLOBAL default_password_lifetime = 0")


async def test_the_failed_login_lock_where_the_server_has_it(
    db: Database, accounts_made: Accounts, server: ServerInfo
) -> None:
    user = await new_account(db, accounts_made)
    wanted = WantedPolicy(failed_login_attempts=3, password_lock_time=UNBOUNDED)
    if not failed_login_lock_supported(server):
        with pytest.raises(InvalidOptionsError, match="FAILED_LOGIN_ATTEMPTS"):
            await apply_policy(db, user, "%", wanted, server)
        assert await read_policy(db, user, "%", server) == (LockPolicy(), 0)
        return
    await apply_policy(db, user, "%", wanted, server)
    locking = LockPolicy(failed_login_attempts=3, password_lock_time=UNBOUNDED)
    assert await read_policy(db, user, "%", server) == (locking, 0)
    await apply_policy(db, user, "%", WantedPolicy(), server)
    assert await read_policy(db, user, "%", server) == (LockPolicy(), 0)


async def test_a_missing_account(db: Database, accounts_made: Accounts, server: ServerInfo) -> None:
    user = accounts_made.name()
    assert await read_policy(db, user, "%", server) is None
    with pytest.raises(InvalidAccountError):
        await apply_policy(db, user, "%", WantedPolicy(locked=True), server)


async def test_the_inventory_reads_the_policy_in_its_two_queries(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, owned_schema: str, server: ServerInfo
) -> None:
    locked = await new_account(db, accounts_made)
    plain = await new_account(db, accounts_made, "10.2.%")
    gone = await new_account(db, accounts_made)
    for user, host in ((locked, "%"), (plain, "10.2.%"), (gone, "%")):
        await claim(db, owned_schema, account(user, host), OWNER)
    admin(
        mysql,
        f"ALTER USER '{locked}'@'%' ACCOUNT LOCK PASSWORD EXPIRE INTERVAL 30 DAY",
        f"DROP USER '{gone}'@'%'",
    )
    read = db.statements_read
    found = await inventory(db, owned_schema, server)
    assert db.statements_read - read == QUERIES
    assert found[(locked, "%")].policy == LockPolicy(locked=True, password_lifetime=30)
    assert found[(plain, "10.2.%")].policy == LockPolicy()
    assert found[(gone, "%")].policy is None
    assert {state.default_lifetime for state in found.values()} == {0}
    assert all(state.policy is None for state in (await inventory(db, owned_schema)).values())


async def test_the_ownership_look_reads_the_policy_so_a_pass_reads_nothing_more(
    db: Database, mysql: MySQLServer, accounts_made: Accounts, owned_schema: str, server: ServerInfo
) -> None:
    user = await new_account(db, accounts_made)
    await claim(db, owned_schema, account(user, "%"), OWNER)
    admin(mysql, f"ALTER USER '{user}'@'%' ACCOUNT LOCK PASSWORD EXPIRE INTERVAL 30 DAY")
    found = await lookup(db, owned_schema, user, "%", server)
    assert (found.policy, found.default_lifetime) == (LockPolicy(locked=True, password_lifetime=30), 0)
    assert (await lookup(db, owned_schema, accounts_made.name(), "%", server)).policy is None

    read, written = db.statements_read, db.statements_written
    assert found.policy is not None
    live = (found.policy, found.default_lifetime)
    wanted = WantedPolicy(locked=True, password_lifetime=30)
    assert await apply_policy(db, user, "%", wanted, server, live=live) is None
    assert (db.statements_read, db.statements_written) == (read, written)
    await apply_policy(db, user, "%", WantedPolicy(), server, live=live)
    assert (db.statements_read, db.statements_written) == (read, written + 1)
    assert await read_policy(db, user, "%", server) == (LockPolicy(password_lifetime=NEVER), 0)
