"""Putting an account's grants right, behind one handle that observes first and then acts.

:class:`AccountGrants` is one account on one server: :meth:`~AccountGrants.check` refuses what the server
cannot grant (before any SQL), :meth:`~AccountGrants.observe` reads what the account holds (once),
:meth:`~AccountGrants.converge` runs the difference. :func:`apply` does all three.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from dbuser_operator.mysql.errors import (
    ColumnNotFoundError,
    InvalidAccountError,
    InvalidGrantError,
    MySQLError,
    PrivilegeMisplacedError,
    PrivilegeUnknownError,
    RoutineNotFoundError,
    TableNotFoundError,
    checked_input,
)
from dbuser_operator.mysql.grants.diff import Change, changes, normalise
from dbuser_operator.mysql.grants.model import Grant, describe
from dbuser_operator.mysql.grants.privileges import refusals
from dbuser_operator.mysql.grants.read import read_account
from dbuser_operator.mysql.identifiers import validate_grantee_host, validate_user
from dbuser_operator.mysql.session.connection import Database
from dbuser_operator.mysql.session.server import ServerInfo

_MISSING: Final[dict[int, tuple[type[InvalidGrantError], str]]] = {
    1146: (TableNotFoundError, "table"),
    1054: (ColumnNotFoundError, "column"),
    1305: (RoutineNotFoundError, "routine"),
}
"""What a GRANT on a missing object answers: MySQL error code → error, and the object named."""


def check(desired: Iterable[Grant], server: ServerInfo) -> None:
    """Refuse what this server cannot grant where it is wanted (:func:`~.privileges.refusals`): a
    :class:`~.errors.PrivilegeUnknownError` when any name is unknown, else a
    :class:`~.errors.PrivilegeMisplacedError`; the message names every refused privilege."""
    found = refusals(((_privilege_level(grant), grant.privileges) for grant in desired), server)
    if not found:
        return
    message = "; ".join(refusal.message for refusal in found)
    if any(refusal.kind == "unknown" for refusal in found):
        raise PrivilegeUnknownError(message)
    raise PrivilegeMisplacedError(message)


def _privilege_level(grant: Grant) -> tuple[str, str]:
    """The level whose privileges ``grant`` draws from: a routine's database (its privileges, fewer, are
    checked by :class:`~.model.Grant`), a column's table."""
    return (grant.database, "*") if grant.routine else grant.level


class AccountGrants:
    """The grants of ``'user'@'host'`` on ``server``: observed once, then converged."""

    def __init__(self, db: Database, user: str, host: str, server: ServerInfo) -> None:
        with checked_input():
            self.user, self.host = validate_user(user), validate_grantee_host(host)
        self.db = db
        self.server = server
        self.exists: bool | None = None  # None: not observed yet
        self.held: frozenset[Grant] = frozenset()
        self.reduced = False  # the last converge revoked something

    def assume(self, held: Iterable[Grant]) -> AccountGrants:
        """Take ``held`` as observed (an account just created holds nothing): saves the read."""
        self.exists, self.held = True, frozenset(held)
        return self

    async def observe(self) -> frozenset[Grant]:
        """Read whether the account exists and what it holds (one query, two at most)."""
        exists, held = await read_account(self.db, self.user, self.host, self.server)
        self.exists, self.held = exists, frozenset(held)
        return self.held

    def plan(self, desired: Iterable[Grant]) -> list[Change]:
        """The changes from what was observed to ``desired`` (:func:`~.diff.changes`)."""
        return changes(self.held, desired, self.server)

    async def converge(self, desired: Iterable[Grant]) -> list[str]:
        """Check ``desired``, observe if not done yet, and run the changes in order; what changed, for
        people (see :func:`apply`)."""
        desired = list(desired)
        check(desired, self.server)
        if self.exists is None:
            await self.observe()
        planned = self.plan(desired)
        if planned and not self.exists:
            raise InvalidAccountError(
                f"cannot grant to '{self.user}'@'{self.host}': the account does not exist"
            )
        done: list[str] = []
        self.reduced = any(change.action != "grant" for change in planned)
        for change in planned:
            try:
                await self.db.execute(change.statement(self.user, self.host))
            except MySQLError as exc:
                missing = _MISSING.get(exc.code or 0)
                if missing is not None:
                    error, what = missing
                    raise error(
                        f"cannot grant on {describe(change.key)}: no such {what} (MySQL error {exc.code})",
                        exc.code,
                    ) from None
                raise
            done.append(str(change))
        self.exists, self.held = True, normalise(desired, self.server)  # as a read would report them now
        return done


async def apply(
    db: Database,
    user: str,
    host: str,
    desired: Iterable[Grant],
    server: ServerInfo,
    *,
    current: Iterable[Grant] | None = None,
) -> list[str]:
    """Make the account's grants equal ``desired``: check, read them, plan, run the statements in order.

    Returns what changed, for people (``["granted INSERT, SELECT ON `app`.*", "revoked DELETE ON
    `app`.*"]``); empty, with nothing sent but the read, when they were equal. A privilege this server does
    not have, or not at the level wanted, raises :class:`~.errors.PrivilegeUnknownError` or
    :class:`~.errors.PrivilegeMisplacedError` naming it, before anything is read or sent. A missing account
    raises :class:`~.errors.InvalidAccountError` before any statement (MariaDB without
    ``NO_AUTO_CREATE_USER`` in its sql_mode would create it, without a password, on GRANT). A statement that
    fails stops the run (the next pass starts from what the server then has): a table grant on a missing
    table raises :class:`~.errors.TableNotFoundError`, a level the server refuses
    :class:`~.errors.InvalidGrantError`. ``current``, when the caller knows it (an account it has just
    created has no grants), saves the read.
    """
    handle = AccountGrants(db, user, host, server)
    if current is not None:
        handle.assume(current)
    return await handle.converge(desired)
