"""Roles: creating and dropping them, granting them to accounts, and the accounts' default roles.

The flavours differ (checked on MySQL 9.7, MariaDB 10.11 and 11.8):

- MySQL keeps a role as a locked account ``'role'@'%'``; ``mysql.role_edges`` says who holds which role,
  ``mysql.default_roles`` which of them are active at login (several: ``SET DEFAULT ROLE a, b TO u``).
- MariaDB keeps a role in ``mysql.user`` with ``is_role = 'Y'`` and host ``''``, named without a host in
  statements (``GRANT r TO u``); ``mysql.roles_mapping`` says who holds it, ``mysql.user.default_role`` the
  one role active at login (``SET DEFAULT ROLE r FOR u``). ``CREATE ROLE`` also grants the new role to its
  creator, with the admin option (the operator's own account).

A role is a :data:`Role`: ``(name, host)``, the host being :func:`role_host` for roles the operator makes,
and whatever the server reports for roles granted by hand.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from dbuser_operator.mysql.errors import AccountExistsError, InvalidAccountError, checked_input
from dbuser_operator.mysql.identifiers import SQL, account, quote_string, validate_host, validate_user
from dbuser_operator.mysql.session.connection import Database
from dbuser_operator.mysql.session.server import ServerInfo
from dbuser_operator.mysql.session.statement import Statement

Role = tuple[str, str]
"""``(name, host)`` of a role."""

_OPERATION_FAILED: Final = 1396
REVOKED: Final = "revoked role"
"""How :func:`converge` reports a role it revoked."""


def role_host(server: ServerInfo) -> str:
    """The host part of a role: ``%`` on MySQL, ``''`` on MariaDB."""
    return "" if server.flavour == "mariadb" else "%"


def role_of(name: str, server: ServerInfo) -> Role:
    """The role ``name`` as the operator creates it on ``server`` (the name validated)."""
    with checked_input():
        return validate_user(name), role_host(server)


def _literal(role: Role) -> SQL:
    """``'name'@'host'``, or ``'name'`` for a MariaDB role (host ``''``). Quoted, never validated here: a
    role granted by hand may have any name."""
    name, host = role
    return SQL(quote_string(name) + ("@" + quote_string(host) if host else ""))


def _account(user: str, host: str) -> SQL:
    with checked_input():
        return account(user, host)


async def exists(db: Database, name: str, server: ServerInfo) -> bool:
    """Whether the role exists: on MySQL any account ``'name'@'%'``, on MariaDB a role of that name."""
    role, host = role_of(name, server)
    if server.flavour == "mariadb":
        query = Statement(
            "SELECT 1 FROM mysql.user WHERE User = %s AND Host = %s AND is_role = 'Y'", role, host
        )
    else:
        query = Statement("SELECT 1 FROM mysql.user WHERE User = %s AND Host = %s", role, host)
    return bool(await db.fetch(query))


async def can_log_in(db: Database, name: str, server: ServerInfo) -> bool:
    """Whether ``'name'@'%'`` is an account made for logging in (unlocked, or with a password) rather than
    a role: on MySQL roles and accounts share ``mysql.user``. Always False on MariaDB, whose roles are
    marked as such."""
    if server.flavour == "mariadb":
        return False
    role, host = role_of(name, server)
    rows = await db.fetch(
        Statement(
            "SELECT 1 FROM mysql.user WHERE User = %s AND Host = %s"
            " AND (account_locked <> 'Y' OR authentication_string <> '')",
            role,
            host,
        )
    )
    return bool(rows)


async def create(db: Database, name: str, server: ServerInfo) -> None:
    """``CREATE ROLE``; :class:`~.errors.AccountExistsError` when the role (or, on MySQL, an account of that
    name and host ``%``) exists already: the caller did not create it."""
    statement = Statement("CREATE ROLE {role}", role=_literal(role_of(name, server)))
    try:
        await db.execute(statement, idempotent=False)
    except InvalidAccountError as error:
        if error.code == _OPERATION_FAILED:
            raise AccountExistsError(f"role {name!r} exists already", error.code) from None
        raise


async def drop(db: Database, name: str, server: ServerInfo) -> None:
    """``DROP ROLE IF EXISTS``: every account that held the role loses it."""
    await db.execute(Statement("DROP ROLE IF EXISTS {role}", role=_literal(role_of(name, server))))


async def held_by(db: Database, grantee: str, grantee_host: str, server: ServerInfo) -> frozenset[Role]:
    """The roles granted to ``'grantee'@'grantee_host'``: an account, or a role (a MariaDB role's host is
    ``''``), its name and host validated by the caller."""
    if server.flavour == "mariadb":
        query = Statement(
            "SELECT Role, '' FROM mysql.roles_mapping WHERE User = %s AND Host = %s", grantee, grantee_host
        )
    else:
        query = Statement(
            "SELECT FROM_USER, FROM_HOST FROM mysql.role_edges WHERE TO_USER = %s AND TO_HOST = %s",
            grantee,
            grantee_host,
        )
    return frozenset((str(name), str(role_host)) for name, role_host in await db.fetch(query))


async def granted(db: Database, user: str, host: str, server: ServerInfo) -> frozenset[Role]:
    """The roles the account ``'user'@'host'`` holds."""
    with checked_input():
        user, host = validate_user(user), validate_host(host).lower()
    return await held_by(db, user, host, server)


Account = tuple[str, str]
"""``(user, host)`` of an account, the host lower-cased as the servers store it (``''`` for a MariaDB
role holding a role)."""


async def held_by_role(db: Database, name: str, server: ServerInfo) -> frozenset[Role]:
    """The roles granted to the role ``name`` (a role granted to a role: its holders get both)."""
    role, host = role_of(name, server)
    return await held_by(db, role, host, server)


async def revoke_from_role(db: Database, held: Role, name: str, server: ServerInfo) -> None:
    """``REVOKE held FROM name``: the role ``name`` no longer holds the role ``held`` (on MySQL the role's
    default roles lose it too)."""
    statement = Statement(
        "REVOKE {held} FROM {role}", held=_literal(held), role=_literal(role_of(name, server))
    )
    await db.execute(statement)


def describe(account: Account) -> str:
    """``'user'@'host'`` for people (a MariaDB role, host ``''``: ``role 'name'``)."""
    user, host = account
    return f"'{user}'@'{host}'" if host else f"role '{user}'"


async def defaults(db: Database, user: str, host: str, server: ServerInfo) -> frozenset[Role]:
    """The account's default roles (active at login)."""
    with checked_input():
        user, host = validate_user(user), validate_host(host).lower()
    if server.flavour == "mariadb":
        query = Statement("SELECT default_role, '' FROM mysql.user WHERE User = %s AND Host = %s", user, host)
    else:
        query = Statement(
            "SELECT DEFAULT_ROLE_USER, DEFAULT_ROLE_HOST FROM mysql.default_roles"
            " WHERE USER = %s AND HOST = %s",
            user,
            host,
        )
    return frozenset((str(name), str(role_host)) for name, role_host in await db.fetch(query) if name)


async def every_grant(db: Database, server: ServerInfo) -> dict[Account, tuple[set[Role], set[Role]]]:
    """For every account holding a role or having a default one: ``(roles held, default roles)``, in two
    queries whatever the number of accounts (the drift check)."""
    if server.flavour == "mariadb":
        held_query = Statement("SELECT User, Host, Role, '' FROM mysql.roles_mapping")
        default_query = Statement(
            "SELECT User, Host, default_role, '' FROM mysql.user WHERE default_role <> ''"
        )
    else:
        held_query = Statement("SELECT TO_USER, TO_HOST, FROM_USER, FROM_HOST FROM mysql.role_edges")
        default_query = Statement(
            "SELECT USER, HOST, DEFAULT_ROLE_USER, DEFAULT_ROLE_HOST FROM mysql.default_roles"
        )
    result: dict[Account, tuple[set[Role], set[Role]]] = {}
    for index, query in enumerate((held_query, default_query)):
        for user, host, name, role_host in await db.fetch(query):
            entry = result.setdefault((str(user), str(host).lower()), (set(), set()))
            entry[index].add((str(name), str(role_host)))
    return result


async def grant(db: Database, role: Role, user: str, host: str) -> None:
    """``GRANT role TO 'user'@'host'``."""
    statement = Statement("GRANT {role} TO {account}", role=_literal(role), account=_account(user, host))
    await db.execute(statement)


async def revoke(db: Database, role: Role, user: str, host: str) -> None:
    """``REVOKE role FROM 'user'@'host'``."""
    await db.execute(
        Statement("REVOKE {role} FROM {account}", role=_literal(role), account=_account(user, host))
    )


async def set_defaults(db: Database, roles: Iterable[Role], user: str, host: str, server: ServerInfo) -> None:
    """Make ``roles`` (granted already) the account's default roles; none for an empty list. MariaDB takes
    one at most (:class:`ValueError` for more)."""
    chosen = sorted(roles)
    names = SQL(", ".join(_literal(role) for role in chosen)) if chosen else SQL("NONE")
    who = _account(user, host)
    if server.flavour == "mariadb":
        if len(chosen) > 1:
            raise ValueError("MariaDB allows one default role per account")
        statement = Statement("SET DEFAULT ROLE {roles} FOR {account}", roles=names, account=who)
    else:
        statement = Statement("SET DEFAULT ROLE {roles} TO {account}", roles=names, account=who)
    await db.execute(statement)


async def converge(
    db: Database,
    user: str,
    host: str,
    server: ServerInfo,
    *,
    wanted: Iterable[Role],
    wanted_defaults: Iterable[Role] | None,
    keep: Iterable[Role] = (),
) -> list[str]:
    """Make the account's roles exactly ``wanted`` (revoking any other but those of ``keep``), then its
    default roles ``wanted_defaults`` (None: leave them). What changed, for people."""
    wanted, keep = frozenset(wanted), frozenset(keep)
    held = await granted(db, user, host, server)
    summary: list[str] = []
    for role in sorted(held - wanted - keep):
        await revoke(db, role, user, host)
        summary.append(f"{REVOKED} {_literal(role)}")
    for role in sorted(wanted - held):
        await grant(db, role, user, host)
        summary.append(f"granted role {_literal(role)}")
    if wanted_defaults is not None and (held or wanted):  # without any role, there is no default one
        chosen = frozenset(wanted_defaults)
        if chosen != await defaults(db, user, host, server):
            await set_defaults(db, chosen, user, host, server)
            shown = ", ".join(_literal(role) for role in sorted(chosen)) or "NONE"
            summary.append(f"set default roles {shown}")
    return summary
