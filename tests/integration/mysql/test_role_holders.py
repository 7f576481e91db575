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
from dbuser_operator.mysql.session.server import read_server
from tests.integration.mysql.support import Databases, admin, admin_rows

pytestmark = pytest.mark.integration

OWNER = ownership.Owner("33333333-3333-4333-8333-333333333333", "team-a", "app")


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
    db: Database, mysql: MySQLServer, made_roles: list[str], databases_made: Databases
) -> None:
    """Every holder, hosts lower-cased, with what the bookkeeping says of it: a DatabaseUser's account
    (whatever the case of its host), a managed role, or neither; never the operator's own account."""
    server = await read_server(db)
    host = roles.role_host(server)
    schema = databases_made.name("_own")
    await ownership.ensure_schema(db, schema)
    await ownership.ensure_book(db, schema, ownership.ROLES)
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
