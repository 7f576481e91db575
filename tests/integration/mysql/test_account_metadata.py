"""Owner metadata against the real server: how ALTER USER … ATTRIBUTE merges, what a DBA reads, and that
MariaDB has nowhere to keep it.

The DBA's queries are the ones docs/ownership.md shows (a test checks the page carries them verbatim).
"""

from __future__ import annotations

import json
from typing import Any

import pymysql
import pytest

from dbuser_operator.controllers.databaseuser.steps.account_metadata import AccountMetadataStep
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.mysql import Database, ServerInfo
from dbuser_operator.mysql.accounts import account_lookup, account_metadata, accounts, dual_password
from dbuser_operator.mysql.accounts.account_metadata import AccountMetadata, owner_entry, patch
from dbuser_operator.mysql.accounts.dual_password import PasswordState
from dbuser_operator.mysql.bookkeeping import ownership
from dbuser_operator.mysql.bookkeeping.ownership import Owner
from tests.conftest import REPO
from tests.integration.mysql.support import Accounts, admin, admin_rows, as_user
from tests.integration.mysql.test_account_steps import SECRET, context, steps

pytestmark = pytest.mark.integration

OWNER = Owner("5d0c6c2e-1111-4c2b-9d8e-0a1b2c3d4e5f", "team-a", "app")
ENTRY = owner_entry(OWNER.namespace, OWNER.name, OWNER.uid)

# docs/ownership.md, "Who owns this account?": {schema} and {user} stand for the bookkeeping schema and
# the user name a DBA looks for.
BOOKKEEPING_QUERY = (
    "SELECT user, host, namespace, name, owner_uid, created_at FROM {schema}.accounts WHERE user = '{user}';"
)
ATTRIBUTES_QUERY = (
    "SELECT USER, HOST,"
    " ATTRIBUTE->>'$.\"dbuser-operator.dev/owner\".namespace' AS namespace,"
    " ATTRIBUTE->>'$.\"dbuser-operator.dev/owner\".name' AS name,"
    " ATTRIBUTE->>'$.comment' AS comment"
    " FROM information_schema.USER_ATTRIBUTES WHERE USER = '{user}';"
)
DBA_GRANT = "GRANT SELECT ON {schema}.accounts TO 'dba'@'%';"


def attributes(mysql: MySQLServer, user: str, host: str = "%") -> dict[str, Any]:
    """The account's attributes as information_schema.USER_ATTRIBUTES shows them ({} when none)."""
    rows = admin_rows(
        mysql,
        "SELECT ATTRIBUTE FROM information_schema.USER_ATTRIBUTES WHERE USER = %s AND HOST = %s",
        user,
        host,
    )
    assert len(rows) == 1
    return dict(json.loads(rows[0][0])) if rows[0][0] is not None else {}


@pytest.fixture
def attributes_kept(server: ServerInfo) -> None:
    if not account_metadata.supports_attributes(server):
        pytest.skip("account attributes: MySQL 8.0.21+ (MariaDB: test_mariadb_has_no_account_comment)")


def test_the_docs_show_the_tested_queries() -> None:
    text = (REPO / "docs" / "ownership.md").read_text()
    schema, user = "dbuser_operator", "app"
    for query in (BOOKKEEPING_QUERY, ATTRIBUTES_QUERY, DBA_GRANT):
        assert query.format(schema=schema, user=user) in text, query


async def test_mariadb_has_no_account_comment(
    db: Database, server: ServerInfo, mysql: MySQLServer, accounts_made: Accounts
) -> None:
    """MariaDB 10.11 and 11.8 take neither COMMENT nor ATTRIBUTE in CREATE/ALTER USER (a syntax error):
    there is nowhere on the account for the owner."""
    user = accounts_made.track(accounts_made.name(), "%")
    if account_metadata.supports_attributes(server):
        admin(mysql, f"CREATE USER '{user}'@'%' COMMENT 'billing'")
        assert attributes(mysql, user) == {"comment": "billing"}
        return
    for statement in (
        f"CREATE USER '{user}'@'%' COMMENT 'billing'",
        f"CREATE USER '{user}'@'%' ATTRIBUTE '{{\"a\": 1}}'",
    ):
        with pytest.raises(pymysql.err.ProgrammingError) as refused:
            admin(mysql, statement)
        assert refused.value.args[0] == 1064  # syntax error
    await accounts.create(db, user, "%", "pw")
    for statement in (
        f"ALTER USER '{user}'@'%' COMMENT 'billing'",
        f"ALTER USER '{user}'@'%' ATTRIBUTE '{{}}'",
    ):
        with pytest.raises(pymysql.err.ProgrammingError) as refused:
            admin(mysql, statement)
        assert refused.value.args[0] == 1064
    assert await account_metadata.read(db, user, "%", server) == AccountMetadata()

    # Only a direct write to the grant table keeps a note on the account: it survives the server's own
    # statements, but SHOW CREATE USER (and so a dump of the users) does not carry it.
    admin(
        mysql,
        "UPDATE mysql.global_priv SET Priv = JSON_SET(Priv, '$.comment', 'by hand')"
        f" WHERE User = '{user}' AND Host = '%'",
        "FLUSH PRIVILEGES",
        f"ALTER USER '{user}'@'%' WITH MAX_USER_CONNECTIONS 3",
        f"ALTER USER '{user}'@'%' IDENTIFIED BY 'pw2'",
    )
    query = "SELECT JSON_VALUE(Priv, '$.comment') FROM mysql.global_priv WHERE User = %s AND Host = '%%'"
    assert admin_rows(mysql, query, user) == [("by hand",)]
    assert "by hand" not in str(admin_rows(mysql, f"SHOW CREATE USER '{user}'@'%'"))


@pytest.mark.usefixtures("attributes_kept")
async def test_attributes_merge_next_to_the_credential_marker_and_null_removes_a_key(
    db: Database, server: ServerInfo, mysql: MySQLServer, accounts_made: Accounts, owned_schema: str
) -> None:
    user = accounts_made.track(accounts_made.name(), "%")
    await accounts.create(db, user, "%", "first-pw")
    await dual_password.set_password(db, user, "%", "second-pw", "v2", retain=True)  # marker, 2 passwords

    await account_metadata.apply(db, user, "%", patch(AccountMetadata(), ENTRY, "billing"))
    marker = {dual_password.CREDENTIAL_ATTRIBUTE: "v2"}
    assert attributes(mysql, user) == {**marker, "dbuser-operator.dev/owner": ENTRY, "comment": "billing"}
    assert await dual_password.read_state(db, user, "%") == PasswordState("v2", retained=True)
    assert await account_metadata.read(db, user, "%", server) == AccountMetadata(ENTRY, "billing")
    await ownership.claim(db, owned_schema, ownership.account(user, "%"), OWNER)
    found = await account_lookup.lookup(db, owned_schema, user, "%", server)  # the state read of every pass
    assert found.metadata == AccountMetadata(ENTRY, "billing")

    # COMMENT is the same key; a merge keeps what it is not told about.
    admin(mysql, f"ALTER USER '{user}'@'%' COMMENT 'by hand'")
    assert attributes(mysql, user) == {**marker, "dbuser-operator.dev/owner": ENTRY, "comment": "by hand"}

    # A hand edit inside the owner entry is merged key by key: the patch sets the stranger to null.
    forged = json.dumps({"dbuser-operator.dev/owner": {"namespace": "team-b", "extra": 1}})
    admin(mysql, f"ALTER USER '{user}'@'%' ATTRIBUTE '{forged}'")
    current = await account_metadata.read(db, user, "%", server)
    assert current is not None
    assert current.owner == {**ENTRY, "namespace": "team-b", "extra": 1}
    await account_metadata.apply(db, user, "%", patch(current, ENTRY, "billing"))
    assert attributes(mysql, user) == {**marker, "dbuser-operator.dev/owner": ENTRY, "comment": "billing"}

    # null removes a key (and a key that is not there: no error); the comment and the marker stay.
    await account_metadata.apply(db, user, "%", {"dbuser-operator.dev/owner": None, "absent": None})
    assert attributes(mysql, user) == {**marker, "comment": "billing"}
    await account_metadata.apply(db, user, "%", patch(AccountMetadata(None, "billing"), None, ""))
    assert attributes(mysql, user) == marker
    assert await dual_password.read_state(db, user, "%") == PasswordState("v2", retained=True)
    assert can_log_in_with(mysql, user, "second-pw")
    assert can_log_in_with(mysql, user, "first-pw")  # the retained password too: nothing else changed


def can_log_in_with(mysql: MySQLServer, user: str, password: str) -> bool:
    return as_user(mysql, user, password, "SELECT 1") == [(1,)]


@pytest.mark.usefixtures("attributes_kept")
@pytest.mark.parametrize(
    "comment",
    [
        '"}, "dbuser-operator.dev/owner": {"namespace": "team-b", "name": "x"}, "y": {"',
        "it's `app`'; DROP USER 'root'@'localhost'; --",
        'back\\slash \\u0000 \\" end',
        "{}",
    ],
)
async def test_a_hostile_comment_is_stored_as_one_string_and_forges_no_owner(
    db: Database, server: ServerInfo, mysql: MySQLServer, accounts_made: Accounts, comment: str
) -> None:
    user = accounts_made.track(accounts_made.name(), "%")
    await accounts.create(db, user, "%", "pw")
    await account_metadata.apply(db, user, "%", patch(AccountMetadata(), ENTRY, comment))
    assert attributes(mysql, user) == {"dbuser-operator.dev/owner": ENTRY, "comment": comment}
    assert admin_rows(mysql, "SELECT COUNT(*) FROM mysql.user WHERE User = 'root'")[0][0] >= 1


@pytest.mark.usefixtures("attributes_kept")
async def test_release_removes_the_owner_entry_only_from_the_owners_accounts(
    db: Database, server: ServerInfo, mysql: MySQLServer, accounts_made: Accounts, owned_schema: str
) -> None:
    user = accounts_made.track(accounts_made.name(), "%", "10.0.0.1", "10.0.0.2")
    other = accounts_made.track(accounts_made.name(), "%")
    for host in ("%", "10.0.0.1", "10.0.0.2"):
        await accounts.create(db, user, host, "pw")
        await ownership.claim(db, owned_schema, ownership.account(user, host), OWNER)
        await account_metadata.apply(db, user, host, patch(AccountMetadata(), ENTRY, "billing"))
    await accounts.create(db, other, "%", "pw")  # nobody owns it; somebody wrote our entry by hand
    await account_metadata.apply(db, other, "%", patch(AccountMetadata(), ENTRY))
    table = ownership.table(owned_schema)

    assert await account_metadata.release(db, table, user, OWNER.uid, server, host="10.0.0.1") == 1
    assert attributes(mysql, user, "10.0.0.1") == {"comment": "billing"}
    assert attributes(mysql, user, "10.0.0.2")["dbuser-operator.dev/owner"] == ENTRY
    assert await account_metadata.release(db, table, user, "another-uid", server) == 0
    assert await account_metadata.release(db, table, user, OWNER.uid, server) == 2
    assert await account_metadata.release(db, table, user, OWNER.uid, server) == 0  # nothing left
    for host in ("%", "10.0.0.1", "10.0.0.2"):
        assert attributes(mysql, user, host) == {"comment": "billing"}
    assert await account_metadata.release(db, table, other, OWNER.uid, server) == 0
    assert attributes(mysql, other)["dbuser-operator.dev/owner"] == ENTRY  # not the owner's: left


async def test_the_documented_query_tells_a_dba_the_owner(
    db: Database, server: ServerInfo, mysql: MySQLServer, accounts_made: Accounts, owned_schema: str
) -> None:
    """A DBA with only the documented grant reads the owner from the bookkeeping table (both flavours), and
    on MySQL from the account's attributes too."""
    user = accounts_made.track(accounts_made.name(), "%")
    dba = accounts_made.track(accounts_made.name(), "%")
    await accounts.create(db, user, "%", "pw")
    await ownership.claim(db, owned_schema, ownership.account(user, "%"), OWNER)
    await accounts.create(db, dba, "%", "dba-pw")
    admin(mysql, DBA_GRANT.format(schema=f"`{owned_schema}`").replace("'dba'", f"'{dba}'"))

    rows = as_user(mysql, dba, "dba-pw", BOOKKEEPING_QUERY.format(schema=f"`{owned_schema}`", user=user))
    assert isinstance(rows, list)
    assert [row[:5] for row in rows] == [(user, "%", OWNER.namespace, OWNER.name, OWNER.uid)]
    assert as_user(mysql, dba, "dba-pw", "SELECT * FROM mysql.user") == 1142  # nothing more than that table

    if account_metadata.supports_attributes(server):
        await account_metadata.apply(db, user, "%", patch(AccountMetadata(), ENTRY, "billing"))
        found = as_user(mysql, dba, "dba-pw", ATTRIBUTES_QUERY.format(user=user))
        assert found == [], "USER_ATTRIBUTES shows a DBA only its own account without more privileges"
        answer = admin_rows(mysql, ATTRIBUTES_QUERY.format(user=user))
        assert answer == [(user, "%", OWNER.namespace, OWNER.name, "billing")]


async def test_the_metadata_costs_no_statement_at_creation_and_none_in_a_pass_in_line(
    db: Database, server: ServerInfo, mysql: MySQLServer, accounts_made: Accounts, owned_schema: str
) -> None:
    """The state comes with the ownership look every pass sends: a pass with the attributes in line sends
    nothing more; creation sends none either (CREATE USER carries them where the server keeps them)."""
    user = accounts_made.track(accounts_made.name(), "%")
    ownership_step, account_step, handle = steps(db, owned_schema)
    metadata_step = AccountMetadataStep()
    ctx = context(user, handle)
    await handle.server()
    await handle.ensure_schema()
    read, written = db.statements_read, db.statements_written
    await ownership_step.ensure(ctx)
    await account_step.ensure(ctx)
    created = (db.statements_read - read, db.statements_written - written)
    if account_metadata.supports_attributes(server):  # already, from CREATE USER
        assert attributes(mysql, user)["dbuser-operator.dev/owner"]["uid"] == ctx.user.metadata.uid
    await metadata_step.ensure(ctx)
    assert (db.statements_read - read, db.statements_written - written) == created

    again = context(user, handle)  # the next pass: the ownership look, nothing else
    again.status.observed_generation, again.status.applied_secret = 1, SECRET
    read, written = db.statements_read, db.statements_written
    await ownership_step.ensure(again)
    await account_step.ensure(again)
    await metadata_step.ensure(again)
    assert (db.statements_read - read, db.statements_written - written) == (1, 0)
