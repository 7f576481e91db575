"""A server's health check: log in as its admin, read what it is and can do, make sure the bookkeeping
schema is there, and count what the operator records there. The outcome is the server's status."""

from __future__ import annotations

from dataclasses import dataclass

from dbuser_operator.api.v1alpha1.mysqlserver import ServerCapabilities
from dbuser_operator.controllers.servers.handle import ServerHandle
from dbuser_operator.controllers.servers.liveness import PROBE_TIMEOUT
from dbuser_operator.mysql.accounts import authentication
from dbuser_operator.mysql.accounts.dual_password import supports_dual_passwords
from dbuser_operator.mysql.accounts.mariadb_dual_auth import supports_dual_auth
from dbuser_operator.mysql.bookkeeping import ownership
from dbuser_operator.mysql.errors import DatabaseUnavailableError, MySQLError
from dbuser_operator.mysql.session.server import ServerInfo, read_server

FLAVOURS = {"mysql": "MySQL", "mariadb": "MariaDB"}


@dataclass(frozen=True)
class Health:
    """What one check found: Ready's reason and message, and (when connected) the server's facts."""

    ready: bool
    reason: str
    message: str
    info: ServerInfo | None = None
    capabilities: ServerCapabilities | None = None
    accounts: int | None = None

    @property
    def flavour(self) -> str | None:
        """``MySQL`` or ``MariaDB``."""
        return FLAVOURS[self.info.flavour] if self.info else None

    @property
    def version(self) -> str | None:
        """``9.7.4``, ``11.8.3``."""
        return ".".join(str(part) for part in self.info.version) if self.info else None


def failure_reason(error: MySQLError) -> str:
    """Ready's reason for a failed check: Unreachable, AccessDenied, TLSError, … (the error's class)."""
    return "Unreachable" if isinstance(error, DatabaseUnavailableError) else error.reason


async def check(handle: ServerHandle, address: str) -> Health:
    """Check the server at ``address`` (``host:port``, for messages): first that it answers, on the probe's
    own connection with a short bound (a stalled server or busy pool holds no check), then, through
    ``handle``'s pool, what it is."""
    try:
        await handle.probe.check(PROBE_TIMEOUT)
        handle.db.mark_reachable()  # it answers now, whatever the last liveness probe found
        info = await read_server(handle.db)
        plugins = await authentication.active_plugins(handle.db)
        await handle.ensure_book(ownership.ROLES)  # the schema, its accounts table and its roles table
        accounts = await ownership.count_owned(handle.db, handle.schema)
    except MySQLError as error:
        if isinstance(error, DatabaseUnavailableError):
            handle.doubt()  # the liveness probe confirms it, and sees the server's return (it may be soon)
        cause = str(error).removeprefix(f"{handle.db.where}: ")  # the pool's errors name the server
        return Health(False, failure_reason(error), f"{address}: {cause}")
    capabilities = ServerCapabilities(
        dual_passwords=supports_dual_passwords(info) or supports_dual_auth(info),
        roles=True,  # every supported version (MySQL 8.0+, MariaDB 10.6+) has roles
        many_default_roles=info.flavour == "mysql",
        plugins=sorted(plugins),
    )
    message = f"connected to {address} as the admin: {info}, bookkeeping in schema {handle.schema}"
    return Health(True, "Connected", message, info, capabilities, accounts)
