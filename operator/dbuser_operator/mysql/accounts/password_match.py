"""Whether an account's password is a given one, judged on the server's own hash of it.

The server keeps a hash of each account's password (its authentication string): unsalted for
``mysql_native_password`` and MariaDB's ``ed25519``, salted and slow for MySQL's ``caching_sha2_password``
(:mod:`.password_hashes`). Checking a password against it needs no key and no hash of the operator's own:
nothing is stored, and the answer is only as good as the server's own check at login.
"""

from __future__ import annotations

import hmac

from dbuser_operator.mysql.accounts import catalog, password_hashes
from dbuser_operator.mysql.errors import checked_input
from dbuser_operator.mysql.identifiers import validate_host, validate_user
from dbuser_operator.mysql.session.connection import Database
from dbuser_operator.mysql.session.server import ServerInfo
from dbuser_operator.mysql.session.statement import Statement


async def read_authentication(
    db: Database, user: str, host: str, server: ServerInfo
) -> tuple[str, str | bytes] | None:
    """The account's plugin and authentication string (text, or bytes from a binary column); None
    without account."""
    with checked_input():
        key = validate_user(user), validate_host(host).lower()
    rows = await db.fetch(
        Statement(
            "SELECT {plugin}, {auth} FROM {accounts} u WHERE u.User = %s AND u.Host = %s",
            *key,
            plugin=catalog.plugin(server, "u"),
            auth=catalog.authentication_string(server, "u"),
            accounts=catalog.accounts_table(server),
        )
    )
    if not rows:
        return None
    plugin, auth = rows[0]
    return str(plugin), auth if isinstance(auth, bytes) else str(auth)


async def holds_password(db: Database, user: str, host: str, server: ServerInfo, password: str) -> bool:
    """Whether ``'user'@'host'`` logs in with ``password`` (its primary one): False without account, or
    under a plugin whose format the operator does not check."""
    found = await read_authentication(db, user, host, server)
    return found is not None and password_hashes.matches(found[0], found[1], password) is True


def fingerprint_matches(plugin: str | None, fingerprint: str | None, password: str) -> bool | None:
    """Whether an account of ``plugin`` whose authentication string has ``fingerprint`` (``SHA2(…, 256)``,
    as a look reads it) logs in with ``password``, with no statement: known for an unsalted hash
    (``mysql_native_password``, ``ed25519``), None for a salted one or when either is missing."""
    stored = password_hashes.stored_hash(plugin, password) if plugin and fingerprint else None
    if stored is None or fingerprint is None:
        return None
    return hmac.compare_digest(password_hashes.fingerprint(stored), fingerprint.lower())
