"""Two passwords at once on MariaDB: the account authenticated by ``mysql_native_password`` twice, new
``OR`` old.

MariaDB (10.4+) lets an account list several authentications, tried in order at login until one succeeds:
``ALTER USER … IDENTIFIED VIA mysql_native_password USING '<new hash>' OR mysql_native_password USING
'<old hash>'``; a later ``ALTER USER … IDENTIFIED VIA … USING '<hash>'`` with one entry drops the other.
Every option that is not the authentication (TLS requirement, limits) is left as it was. The facts, checked
on 10.11 and 11.8, are in docs/credentials.md ("Rotation on MariaDB"); among them why ``ed25519`` is not
offered: a login through its second entry takes a second plugin switch, which common clients refuse.

The operator sends hashes, never passwords (:mod:`.password_hashes`: unsalted), and puts the new password
*first*: ``mysql.global_priv`` keeps the first ``mysql_native_password`` entry in its top-level
``plugin``/``authentication_string`` (the others in ``auth_or``), which is what ``mysql.user`` shows and
what the ownership fingerprint is made of — so during a rotation the account reads as carrying the new
password.

The crash-safe marker: MariaDB has no account attributes, so the account tells whether a password is
already in place by its first entry's hash (:meth:`DualAuthState.holds`, the hash the operator would send
compared with the one stored; both hashes, neither leaves the operator). A retried pass that finds the new
password in place sends nothing, so a crash between any two statements never retains twice (which would
keep the new password twice and lose the old one early) nor keeps a third.
"""

from __future__ import annotations

import hmac
import json
from dataclasses import dataclass
from typing import Final

from pydantic import SecretStr

from dbuser_operator.mysql.accounts import password_hashes
from dbuser_operator.mysql.accounts.authentication import Method, known
from dbuser_operator.mysql.accounts.passwords import check_length, validate_password
from dbuser_operator.mysql.errors import InvalidOptionsError, checked_input
from dbuser_operator.mysql.identifiers import SQL, account, validate_host, validate_user
from dbuser_operator.mysql.session.connection import Database
from dbuser_operator.mysql.session.server import ServerInfo
from dbuser_operator.mysql.session.statement import Statement

MINIMUM_VERSION: Final = (10, 11, 0)
"""The oldest MariaDB the checks of docs/credentials.md passed on (10.11 and 11.8; authentication chains
exist since 10.4, older versions were not checked: they keep Immediate)."""

PLUGIN: Final = password_hashes.NATIVE
"""The one plugin of both entries: its stored string is the unsalted hash, and a client that logged in
with it answers the second entry without a second plugin switch (``ed25519`` needs one)."""


def supports_dual_auth(server: ServerInfo) -> bool:
    """Whether the server can keep two passwords this way: MariaDB 10.11 or later."""
    return server.flavour == "mariadb" and server.version >= MINIMUM_VERSION


@dataclass(frozen=True)
class Entry:
    """One authentication of the account: its plugin and its stored authentication string."""

    plugin: str
    auth_string: str


@dataclass(frozen=True)
class DualAuthState:
    """The account's authentications in login order; the first one is the current (newest) password."""

    entries: tuple[Entry, ...]

    @property
    def current(self) -> Entry:
        return self.entries[0]

    @property
    def retained(self) -> bool:
        """Whether an older password still logs in next to the current one."""
        return len(self.entries) > 1

    def holds(self, method: Method, password: str | SecretStr) -> bool:
        """Whether the current entry is ``password`` under ``method``'s plugin (False when the plugin's hash
        cannot be known beforehand)."""
        expected = method.stored(password)
        current = self.current
        return (
            expected is not None
            and current.plugin == method.plugin
            and hmac.compare_digest(current.auth_string.encode(), expected.encode())
        )


def _key(user: str, host: str) -> tuple[str, str]:
    with checked_input():
        return validate_user(user), validate_host(host).lower()


def entries_of(priv: str | bytes | None) -> tuple[Entry, ...]:
    """The authentications in ``mysql.global_priv.Priv`` (JSON): ``auth_or``'s entries in order, its empty
    one standing for the top-level ``plugin``/``authentication_string``; without ``auth_or``, the
    top-level one alone."""
    data = json.loads(priv or "{}")
    if not isinstance(data, dict):
        return ()
    top = Entry(str(data.get("plugin") or ""), str(data.get("authentication_string") or ""))
    chain = data.get("auth_or")
    if not isinstance(chain, list) or not chain:
        return (top,)
    found = []
    for item in chain:
        if isinstance(item, dict) and item.get("plugin"):
            found.append(Entry(str(item["plugin"]), str(item.get("authentication_string") or "")))
        else:
            found.append(top)
    return tuple(found)


async def read_state(db: Database, user: str, host: str) -> DualAuthState | None:
    """The account's authentications; None without account."""
    rows = await db.fetch(
        Statement("SELECT Priv FROM mysql.global_priv WHERE User = %s AND Host = %s", *_key(user, host))
    )
    return state_of(rows[0][0]) if rows else None


def state_of(priv: object) -> DualAuthState | None:
    """The authentications of an account's ``Priv`` as read (text or bytes); None for none."""
    entries = entries_of(priv.decode() if isinstance(priv, bytes) else None if priv is None else str(priv))
    return DualAuthState(entries) if entries else None


def _plugin(name: str) -> SQL:
    """A plugin's name as SQL: one of the known plugins' (letters, digits and '_'), never input."""
    known(name)
    return SQL(name)


def _writable(entry: Entry) -> bool:
    return entry.plugin == PLUGIN and bool(entry.auth_string)


async def set_password(
    db: Database,
    user: str,
    host: str,
    password: str | SecretStr,
    method: Method,
    *,
    state: DualAuthState | None,
    retain: bool,
    keep_older: bool = False,
) -> bool:
    """Make ``password`` (under ``method``: ``mysql_native_password``) the account's current entry, in one
    statement; whether an older password still logs in afterwards. ``state``: the account's, just read
    (:func:`read_state`).

    ``retain``: the current entry is kept after the new one (a password of another plugin is not kept).
    ``keep_older``: the older entry, if any, stays (a password put back within a rotation). Otherwise the
    account has the new password alone.
    Never more than two entries. Callers check :meth:`DualAuthState.holds` first: a password already
    current is not set again (retaining it would lose the older one).
    """
    with checked_input():
        if method.plugin != PLUGIN:
            raise InvalidOptionsError(f"two passwords on MariaDB need {PLUGIN}, not {method.plugin}")
        secret = validate_password(password)
        check_length(secret, method.flavour, method.plugin)
        stored = method.stored(secret)
        if stored is None:  # pragma: no cover - the plugin's hash is known
            raise InvalidOptionsError(f"no known hash for {method.plugin}")
        kept: Entry | None = None
        if state is not None and retain and state.current.plugin == method.plugin:
            kept = state.current
        elif state is not None and keep_older and state.retained:
            kept = state.entries[1]
        if kept is not None and not _writable(kept):
            kept = None
        plugin = _plugin(method.plugin)
        who = account(user, host)
        if kept is None:
            statement = Statement(
                "ALTER USER {account} IDENTIFIED VIA {plugin} USING %s",
                SecretStr(stored),
                account=who,
                plugin=plugin,
            )
        else:
            statement = Statement(
                "ALTER USER {account} IDENTIFIED VIA {plugin} USING %s OR {old} USING %s",
                SecretStr(stored),
                SecretStr(kept.auth_string),
                account=who,
                plugin=plugin,
                old=_plugin(kept.plugin),
            )
    await db.execute(statement, idempotent=False)  # a retry is judged by the caller on the state read again
    return kept is not None


async def discard_old_password(db: Database, user: str, host: str) -> bool:
    """Keep only the account's current entry (nothing sent when it has one already); whether one was
    dropped. Sent twice, the second finds one entry and sends nothing."""
    state = await read_state(db, user, host)
    if state is None or not state.retained:
        return False
    current = state.current
    with checked_input():
        if not _writable(current):
            raise InvalidOptionsError(
                f"the current authentication of the account is {current.plugin[:64]!a}, which the operator "
                "cannot write back: its older ones are left as they are"
            )
        statement = Statement(
            "ALTER USER {account} IDENTIFIED VIA {plugin} USING %s",
            SecretStr(current.auth_string),
            account=account(user, host),
            plugin=_plugin(current.plugin),
        )
    await db.execute(statement)  # the same single entry again is harmless
    return True
