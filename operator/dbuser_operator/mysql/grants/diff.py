"""The difference between an account's grants and the wanted ones, as the fewest GRANT/REVOKE statements.

Level by level: a level that is already right yields no statement; privileges held but not wanted, on a
wanted level or another one, are revoked; ``ALL`` is compared as the server's explicit list for the level
(:func:`~.privileges.expand_all`), so that a second pass changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from dbuser_operator.mysql.errors import checked_input
from dbuser_operator.mysql.grants.model import Grant, Key, describe, levels_of
from dbuser_operator.mysql.grants.privileges import ALL, ROUTINE_PRIVILEGES, USAGE, expand_all, server_name
from dbuser_operator.mysql.identifiers import (
    column_privilege_list,
    grant_level,
    grantee_account,
    privilege_list,
    routine_level,
    validate_grantee_host,
    validate_user,
)
from dbuser_operator.mysql.session.server import ServerInfo
from dbuser_operator.mysql.session.statement import Statement


def server_privileges(grant: Grant, server: ServerInfo) -> frozenset[str]:
    """The privileges of ``grant`` as the server reports them: ALL expanded, old names in the server's."""
    if ALL in grant.privileges:
        return ROUTINE_PRIVILEGES if grant.routine else expand_all(grant.level, server)
    return frozenset(server_name(name, server) for name in grant.privileges)


def _by_level(grants: Iterable[Grant], server: ServerInfo | None) -> dict[Key, tuple[frozenset[str], bool]]:
    """One entry per level: privileges united, grant option if any grant of the level has it."""
    levels: dict[Key, tuple[frozenset[str], bool]] = {}
    for grant in grants:
        privileges = server_privileges(grant, server) if server is not None else grant.privileges
        for key in levels_of(grant):
            held, option = levels.get(key, (frozenset(), False))
            levels[key] = (held | privileges, option or grant.grant_option)
    return levels


def normalise(grants: Iterable[Grant], server: ServerInfo) -> frozenset[Grant]:
    """``grants`` as :func:`read_grants` would report them once applied: one grant per level, ALL expanded."""
    return frozenset(
        Grant.observed(
            privileges,
            key.database,
            key.table,
            option,
            pattern=key.pattern,
            columns=(key.column,) if key.column else (),
            routine=key.routine,
        )
        for key, (privileges, option) in _by_level(grants, server).items()
    )


@dataclass(frozen=True)
class Change:
    """One GRANT or REVOKE on one level: ``privileges`` (sorted), or the grant option alone."""

    action: Literal["grant", "revoke", "revoke grant option"]
    key: Key
    privileges: tuple[str, ...] = ()
    with_grant_option: bool = False  # for "grant": WITH GRANT OPTION

    def statement(self, user: str, host: str) -> Statement:
        """The statement for the account ``'user'@'host'``."""
        key = self.key
        if key.routine:
            level = routine_level(key.routine, key.database, key.table)
        else:
            level = grant_level(key.database, key.table, pattern=key.pattern)
        who = grantee_account(user, host)
        if self.action == "revoke grant option":
            return Statement("REVOKE GRANT OPTION ON {level} FROM {account}", level=level, account=who)
        if key.column:
            privileges = column_privilege_list(self.privileges, key.column)
        else:
            privileges = privilege_list(self.privileges or (USAGE,))
        if self.action == "revoke":
            return Statement(
                "REVOKE {privileges} ON {level} FROM {account}",
                privileges=privileges,
                level=level,
                account=who,
            )
        if self.with_grant_option:
            return Statement(
                "GRANT {privileges} ON {level} TO {account} WITH GRANT OPTION",
                privileges=privileges,
                level=level,
                account=who,
            )
        return Statement(
            "GRANT {privileges} ON {level} TO {account}", privileges=privileges, level=level, account=who
        )

    def __str__(self) -> str:
        where = describe(self.key)
        if self.action == "revoke grant option":
            return f"revoked GRANT OPTION ON {where}"
        names = ", ".join(self.privileges)
        if self.action == "revoke":
            return f"revoked {names} ON {where}"
        if not self.privileges:
            return f"granted GRANT OPTION ON {where}"
        return f"granted {names} ON {where}" + (" WITH GRANT OPTION" if self.with_grant_option else "")


def changes(current: Iterable[Grant], desired: Iterable[Grant], server: ServerInfo) -> list[Change]:
    """The changes that make ``current`` (as read) equal to ``desired``, level by level, in a fixed order.

    Per level, at most: a REVOKE of the privileges held but not wanted, a REVOKE of the grant option, and a
    GRANT of the privileges wanted but missing (``WITH GRANT OPTION`` when that is missing too). A level
    that is already right gives nothing; a level held but not wanted at all is revoked entirely.
    """
    have = _by_level(current, None)
    want = _by_level(desired, server)
    result: list[Change] = []
    for key in sorted(have.keys() | want.keys()):
        held, held_option = have.get(key, (frozenset(), False))
        wanted, wanted_option = want.get(key, (frozenset(), False))
        extra = held - wanted
        if extra:
            result.append(Change("revoke", key, tuple(sorted(extra))))
        if held_option and not wanted_option:
            result.append(Change("revoke grant option", key))
        missing = wanted - held
        add_option = wanted_option and not held_option
        if missing or add_option:
            result.append(Change("grant", key, tuple(sorted(missing)), with_grant_option=add_option))
    return result


def plan(
    current: Iterable[Grant], desired: Iterable[Grant], server: ServerInfo, *, user: str, host: str
) -> list[Statement]:
    """The GRANT/REVOKE statements for ``'user'@'host'`` that make ``current`` equal ``desired`` (see
    :func:`changes`); none when they are equal already."""
    with checked_input():
        validate_user(user)
        validate_grantee_host(host)
    return [change.statement(user, host) for change in changes(current, desired, server)]


def summary(grants: Iterable[Grant]) -> list[str]:
    """The grants for people, one line each in the planner's order: ``["PROCESS ON *.*",
    "INSERT, SELECT ON `app`.*", "SELECT (a, b) ON `app`.`t`"]`` (``ALL`` kept as ``ALL``)."""
    return [str(grant) for grant in sorted(grants, key=lambda grant: levels_of(grant)[0])]
