"""What a role holds and who holds it, against the real server: roles granted to a role, revoked; the
holders the bookkeeping does not record."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest

from dbuser_operator.envtest import MySQLServer
from dbuser_operator.mysql import Database
from dbuser_operator.mysql.accounts import roles
from dbuser_operator.mysql.bookkeeping import name_holders, ownership
from dbuser_operator.mysql.session.server import ServerInfo, read_server
from tests.integration.mysql.support import admin, admin_rows

pytestmark = pytest.mark.integration

OWNER = ownership.Owner("33333333-3333-4333-8333-333333333333", "team-a", "app")


async def with_roles_book(db: Database, schema: str) -> str:
    """``schema`` with the roles' book beside the accounts' (role_holders reads both)."""
    await ownership.ensure_book(db, schema, ownership.ROLES)
    return schema


async def new_role(db: Database, server: ServerInfo, made_roles: list[str]) -> tuple[str, str]:
    """A new role: its name and its literal (dropped after the test)."""
    name = f"it_{secrets.token_hex(5)}"
    host = roles.role_host(server)
    literal = f"'{name}'" + (f"@'{host}'" if host else "")
    made_roles.append(literal)
    await roles.create(db, name, server)
    return name, literal


@pytest.fixture
def made_roles(mysql: MySQLServer) -> Iterator[list[str]]:
    """Role names a test makes (as ``'name'`` or ``'name'@'%'``), dropped afterwards."""
    made: list[str] = []
    yield made
    for role in made:
        admin(mysql, f"DROP ROLE IF EXISTS {role}")


async def test_roles_granted_to_a_role_are_read_and_revoked(
    db: Database, mysql: MySQLServer, made_roles: list[str]
) -> None:
    server = await read_server(db)
    host = roles.role_host(server)

    def literal(name: str) -> str:
        return f"'{name}'" + (f"@'{host}'" if host else "")

    name = f"it_{secrets.token_hex(5)}"
    odd = f"it_{secrets.token_hex(3)} o'dd"  # a role made by hand may have any name
    plain = f"it_{secrets.token_hex(5)}"
    odd_literal = literal(odd.replace("'", "''"))
    made_roles.extend([literal(name), odd_literal, literal(plain)])
    await roles.create(db, name, server)
    admin(mysql, f"CREATE ROLE {odd_literal}", f"CREATE ROLE {literal(plain)}")
    assert await roles.held_by_role(db, name, server) == frozenset()
    admin(mysql, f"GRANT {odd_literal} TO {literal(name)}")
    admin(mysql, f"GRANT {literal(plain)} TO {literal(name)}")
    held = await roles.held_by_role(db, name, server)
    assert held == {(odd, host), (plain, host)}
    for role in sorted(held):
        await roles.revoke_from_role(db, role, name, server)
    assert await roles.held_by_role(db, name, server) == frozenset()
    assert roles.describe((odd, host)) == (f"'{odd}'@'%'" if host else f"role '{odd}'")


async def test_role_holders(
    db: Database, mysql: MySQLServer, made_roles: list[str], owned_schema: str
) -> None:
    """Every holder, hosts lower-cased, with what the bookkeeping says of it: a DatabaseUser's account
    (whatever the case of its host), a managed role, or neither; never the operator's own account."""
    server = await read_server(db)
    host = roles.role_host(server)
    schema = await with_roles_book(db, owned_schema)
    name, other = f"it_{secrets.token_hex(5)}", f"it_{secrets.token_hex(5)}"
    managed, stranger = f"it_{secrets.token_hex(5)}", f"it_{secrets.token_hex(5)}"
    role_literal = f"'{name}'" + (f"@'{host}'" if host else "")
    other_literal = f"'{other}'" + (f"@'{host}'" if host else "")
    made_roles.extend([role_literal, other_literal])
    await roles.create(db, name, server)
    await roles.create(db, other, server)
    accounts = (f"'{managed}'@'example.com'", f"'{stranger}'@'%'", f"'{stranger}'@'localhost'")
    try:
        admin(mysql, *(f"CREATE USER {account}" for account in accounts))
        assert await name_holders.role_holders(db, schema, name, server) == []  # nor the operator's own
        admin(mysql, *(f"GRANT {role_literal} TO {account}" for account in (*accounts, other_literal)))
        await ownership.claim(db, schema, ownership.account(managed, "Example.COM"), OWNER)

        def holder(user: str, at: str, *, account: bool = False, role: bool = False) -> name_holders.Holder:
            return name_holders.Holder(user, at, account=account, role=role)

        strangers = [holder(stranger, "%"), holder(stranger, "localhost")]
        found = await name_holders.role_holders(db, schema, name, server)
        mine = holder(managed, "example.com", account=True)
        assert found == sorted([mine, holder(other, host), *strangers], key=lambda h: (h.user, h.host))
        await ownership.claim(db, schema, ownership.role(other), OWNER)
        found = await name_holders.role_holders(db, schema, name, server)
        assert [h for h in found if h.managed] == sorted(
            [mine, holder(other, host, role=True)], key=lambda h: (h.user, h.host)
        )
        assert [h for h in found if not h.managed] == strangers
        granted = admin_rows(mysql, f"SHOW GRANTS FOR '{stranger}'@'%'")
        assert any(name in str(row[0]) for row in granted)  # only read: the holders keep the role
    finally:
        admin(mysql, *(f"DROP USER IF EXISTS {account}" for account in accounts))


async def test_a_name_that_is_not_ascii_is_no_bookkeeping_rows(
    db: Database, mysql: MySQLServer, made_roles: list[str], owned_schema: str
) -> None:
    """The bookkeeping's names are ASCII: a holder whose name is not is nobody's, even where the server's
    conversion to ASCII would make it a recorded name (``'?'`` for each other character)."""
    server = await read_server(db)
    schema = await with_roles_book(db, owned_schema)
    name, role_literal = await new_role(db, server, made_roles)
    stem = f"it_{secrets.token_hex(4)}"
    account = f"'{stem}\u00e9'@'%'"
    try:
        admin(mysql, f"CREATE USER {account}", f"GRANT {role_literal} TO {account}")
        admin(
            mysql,
            f"INSERT INTO `{schema}`.`accounts` (user, host, owner_uid, namespace, name)"
            f" VALUES ('{stem}?', '%', '{OWNER.uid}', 'team-a', 'app')",
        )
        found = await name_holders.role_holders(db, schema, name, server)
        assert found == [name_holders.Holder(f"{stem}\u00e9", "%", account=False, role=False)]
    finally:
        admin(mysql, f"DROP USER IF EXISTS {account}")


async def test_the_holders_are_looked_up_in_the_bookkeeping_by_its_key(
    db: Database, mysql: MySQLServer, made_roles: list[str], owned_schema: str
) -> None:
    """Each holder costs one primary-key lookup in each bookkeeping table, not a scan of it (on MariaDB the
    tables' collations differ, and a plain join scanned every account for each holder: 12 s for a role of
    1001 holders beside 10 000 accounts). Asserted on the server's plan, with 3000 accounts recorded."""
    server = await read_server(db)
    schema = await with_roles_book(db, owned_schema)
    name, role_literal = await new_role(db, server, made_roles)
    accounts = [f"'it_{secrets.token_hex(5)}'@'%'" for _ in range(3)]  # holders: no plan without any
    admin(mysql, *(f"CREATE USER {account}" for account in accounts))
    admin(mysql, *(f"GRANT {role_literal} TO {account}" for account in accounts))
    admin(
        mysql,
        "SET SESSION cte_max_recursion_depth = 5000"
        if server.flavour == "mysql"
        else "SET SESSION max_recursive_iterations = 5000",
        f"INSERT INTO `{schema}`.`accounts` (user, host, owner_uid, namespace, name)"
        " WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)"
        f" SELECT CONCAT('it_bulk_', i), '%', '{OWNER.uid}', 'team-a', CONCAT('u', i) FROM n",
    )
    query = name_holders.holders_query(schema, *roles.role_of(name, server), server)
    try:
        with mysql.connect() as connection, connection.cursor() as cursor:
            if server.flavour == "mysql":
                cursor.execute("SET SESSION explain_format = TRADITIONAL")
            cursor.execute("EXPLAIN " + query.text, query.params)
            columns = [column[0] for column in cursor.description]
            plan = [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]
    finally:
        admin(mysql, *(f"DROP USER IF EXISTS {account}" for account in accounts))
    bookkeeping = [step for step in plan if step["table"] in ("a", "r")]
    assert len(bookkeeping) == 2, plan
    for step in bookkeeping:
        by_key = step["type"] in ("ref", "eq_ref") or "Range checked for each record" in str(step["Extra"])
        assert by_key, plan
