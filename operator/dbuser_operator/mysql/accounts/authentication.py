"""Authentication plugins: which ones the server has, which one an account uses, and the ``IDENTIFIED``
clause that sets one.

The plugin names come from :data:`PLUGINS` only (never from input), and passwords travel as query
parameters. The syntax differs: MySQL writes ``IDENTIFIED WITH plugin BY %s``; MariaDB is sent the hash it
stores instead of the password (:mod:`.password_hashes`: unsalted for both its plugins that take one), so
that its general log, which records statements as sent, never holds a password: ``IDENTIFIED BY PASSWORD
%s`` for ``mysql_native_password``, ``IDENTIFIED VIA ed25519 USING %s``. MySQL's ``caching_sha2_password``
is salted by the server, so MySQL gets the password, and writes ``<secret>`` in its place in its logs.
Plugins that take no password are ``IDENTIFIED WITH plugin`` (``AS 'RDS'`` for AWS IAM) on both.

Which plugins a server has is asked of it (``information_schema.PLUGINS``, the ACTIVE
authentication plugins): MySQL 9 has no ``mysql_native_password``, MariaDB loads ``ed25519`` only after
``INSTALL SONAME 'auth_ed25519'``, ``auth_socket`` and the AWS plugin are loaded by configuration.

Changing an account's plugin replaces its authentication string: on MySQL ``RETAIN CURRENT PASSWORD`` is
refused then (error 3894), so a plugin change sets the same password again under the new plugin, and the
application keeps logging in with it.

A certificate-only account (:func:`certificate_only`: a workload's) has the flavour's built-in password
plugin with an empty authentication string, set as a hash so that no password policy or expiry applies:
``IDENTIFIED WITH caching_sha2_password AS ''`` (MySQL: ``IDENTIFIED WITH`` a plugin and no password would
expire it) or ``IDENTIFIED VIA mysql_native_password USING ''`` (MariaDB). It goes with a ``REQUIRE ISSUER
… SUBJECT …`` in the same statement: the certificate is the credential, the empty password none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, LiteralString

from pydantic import SecretStr

from dbuser_operator.mysql.accounts import catalog, password_hashes
from dbuser_operator.mysql.accounts.passwords import check_length, validate_password
from dbuser_operator.mysql.errors import InvalidOptionsError, checked_input
from dbuser_operator.mysql.identifiers import SQL, account, quote_string, validate_host, validate_user
from dbuser_operator.mysql.session.connection import Database
from dbuser_operator.mysql.session.server import Flavour, ServerInfo
from dbuser_operator.mysql.session.statement import Statement


@dataclass(frozen=True)
class Plugin:
    """What the operator knows of a plugin: whether it takes a password, the authentication string it is
    given instead (``AS``), and the flavour it comes with (None: both)."""

    takes_password: bool
    auth_string: str = ""
    flavour: Flavour | None = None
    note: str = ""


PLUGINS: Final[dict[str, Plugin]] = {
    "caching_sha2_password": Plugin(True, flavour="mysql"),
    "sha256_password": Plugin(True, flavour="mysql", note="deprecated by MySQL"),
    "mysql_native_password": Plugin(
        True, note="removed in MySQL 9.0, disabled by default in MySQL 8.4 (--mysql-native-password=ON)"
    ),
    "ed25519": Plugin(True, flavour="mariadb", note="on MariaDB after INSTALL SONAME 'auth_ed25519'"),
    "auth_socket": Plugin(False, flavour="mysql", note="on MySQL after INSTALL PLUGIN auth_socket"),
    "unix_socket": Plugin(False, flavour="mariadb"),
    "AWSAuthenticationPlugin": Plugin(False, auth_string="RDS", note="on Amazon RDS and Aurora only"),
}
"""Every plugin the operator can set, by its server name."""

PASSWORDLESS: Final = tuple(name for name, plugin in PLUGINS.items() if not plugin.takes_password)

CERTIFICATE_ONLY_PLUGINS: Final[dict[Flavour, str]] = {
    "mysql": "caching_sha2_password",
    "mariadb": "mysql_native_password",
}
"""The plugin of a certificate-only account, by flavour: built into the server, never to be loaded."""


def known(name: str) -> Plugin:
    """The plugin ``name`` (:class:`~.errors.InvalidOptionsError` for one the operator does not know)."""
    plugin = PLUGINS.get(name) if isinstance(name, str) else None
    if plugin is None:
        raise InvalidOptionsError(f"unknown authentication plugin {str(name)[:64]!a}")
    return plugin


@dataclass(frozen=True)
class Method:
    """How an account authenticates: ``plugin`` on a server of ``flavour``; ``certificate_only``: with an
    empty authentication string under it (:func:`certificate_only`)."""

    plugin: str
    flavour: Flavour
    certificate_only: bool = False

    def __post_init__(self) -> None:
        known(self.plugin)
        if self.certificate_only and self.plugin != CERTIFICATE_ONLY_PLUGINS[self.flavour]:
            raise InvalidOptionsError(f"a certificate-only account on {self.flavour} is not {self.plugin}")

    @property
    def takes_password(self) -> bool:
        return known(self.plugin).takes_password and not self.certificate_only

    def stored(self, password: str | SecretStr | None) -> str | None:
        """The authentication string the server will store for ``password`` under this plugin, when it
        can be known beforehand (``mysql_native_password``, ``ed25519``: unsalted; a certificate-only
        account's: empty); None otherwise."""
        if self.certificate_only:
            return ""
        if password is None or not self.takes_password:
            return None
        value = password.get_secret_value() if isinstance(password, SecretStr) else password
        return password_hashes.stored_hash(self.plugin, value)

    def identified(
        self,
        verb: LiteralString,
        who: SQL,
        password: str | SecretStr | None,
        suffix: LiteralString = "",
        params: tuple[str, ...] = (),
    ) -> Statement:
        """``<verb> {account} IDENTIFIED ...<suffix>`` (``verb``: ``CREATE USER`` or ``ALTER USER``;
        ``suffix``: constant clauses, such as `` PASSWORD EXPIRE``, with a ``%s`` for each of ``params``)
        with this plugin, and the password as a parameter when the plugin takes one (it must be given then,
        and must not be otherwise)."""
        name = SQL(self.plugin)  # one of PLUGINS' names: letters, digits and '_'
        if not self.takes_password:
            if password is not None:
                raise InvalidOptionsError(f"{self.plugin} takes no password")
            return self._without_password(verb, who, suffix, params)
        if password is None:
            raise InvalidOptionsError(f"{self.plugin} needs a password")
        secret = validate_password(password)
        check_length(secret, self.flavour, self.plugin)
        hashed = self.stored(secret) if self.flavour == "mariadb" else None
        if hashed is not None and self.plugin == password_hashes.NATIVE:
            template = verb + " {account} IDENTIFIED BY PASSWORD %s" + suffix
            return Statement(template, SecretStr(hashed), *params, account=who)
        if hashed is not None:
            template = verb + " {account} IDENTIFIED VIA {plugin} USING %s" + suffix
            return Statement(template, SecretStr(hashed), *params, account=who, plugin=name)
        if self.flavour == "mariadb":
            template = verb + " {account} IDENTIFIED VIA {plugin} USING PASSWORD(%s)" + suffix
            return Statement(template, secret, *params, account=who, plugin=name)
        template = verb + " {account} IDENTIFIED WITH {plugin} BY %s" + suffix
        return Statement(template, secret, *params, account=who, plugin=name)

    def _without_password(
        self, verb: LiteralString, who: SQL, suffix: LiteralString, params: tuple[str, ...]
    ) -> Statement:
        """:meth:`identified` for a plugin that takes no password (``AS`` its string, if it has one), or a
        certificate-only account (an empty string, set as a hash: no expiry, no password policy)."""
        plugin, name = known(self.plugin), SQL(self.plugin)
        if self.certificate_only:
            empty: LiteralString = (
                " {account} IDENTIFIED WITH {plugin} AS ''"
                if self.flavour == "mysql"
                else " {account} IDENTIFIED VIA {plugin} USING ''"
            )
            return Statement(verb + empty + suffix, *params, account=who, plugin=name)
        if plugin.auth_string:
            return Statement(
                verb + " {account} IDENTIFIED WITH {plugin} AS {auth}" + suffix,
                *params,
                account=who,
                plugin=name,
                auth=quote_string(plugin.auth_string),
            )
        template = verb + " {account} IDENTIFIED WITH {plugin}" + suffix
        return Statement(template, *params, account=who, plugin=name)


def certificate_only(flavour: Flavour) -> Method:
    """The method of an account whose only credential is a client certificate (its ``REQUIRE``): the
    flavour's built-in plugin, an empty authentication string."""
    return Method(CERTIFICATE_ONLY_PLUGINS[flavour], flavour, certificate_only=True)


def effective(method: Method | None, server: ServerInfo) -> Method | None:
    """The method an ``IDENTIFIED`` clause of ``method`` amounts to on ``server``: ``method``, or without
    one the server's default where the operator knows its hash (MariaDB's ``mysql_native_password``)."""
    if method is None and server.native_by_default:
        return Method(password_hashes.NATIVE, server.flavour)
    return method


def unavailable(name: str, server: ServerInfo, active: frozenset[str]) -> str | None:
    """Why the server cannot use plugin ``name`` (None when it is among the ``active`` plugins)."""
    if name in active:
        return None
    plugin = known(name)
    if plugin.flavour is not None and plugin.flavour != server.flavour:
        why = f"a {'MySQL' if plugin.flavour == 'mysql' else 'MariaDB'} plugin"
    else:
        why = plugin.note or "not loaded"
    loaded = ", ".join(sorted(active)) or "none"
    return f"{server} has no active authentication plugin {name} ({why}); its active ones: {loaded}"


async def active_plugins(db: Database) -> frozenset[str]:
    """The names of the server's active authentication plugins."""
    rows = await db.fetch(
        Statement(
            "SELECT PLUGIN_NAME FROM information_schema.PLUGINS"
            " WHERE PLUGIN_TYPE = 'AUTHENTICATION' AND PLUGIN_STATUS = 'ACTIVE'"
        )
    )
    return frozenset(str(name) for (name,) in rows)


async def read_plugin(db: Database, server: ServerInfo, user: str, host: str) -> str | None:
    """The account's plugin; None when the account does not exist."""
    with checked_input():
        statement = Statement(
            "SELECT {plugin} FROM {accounts} u WHERE u.User = %s AND u.Host = %s",
            validate_user(user),
            validate_host(host).lower(),
            plugin=catalog.plugin(server, "u"),
            accounts=catalog.accounts_table(server),
        )
    rows = await db.fetch(statement)
    return str(rows[0][0]) if rows else None


def method_statement(
    verb: LiteralString, user: str, host: str, password: str | SecretStr | None, method: Method
) -> Statement:
    """``CREATE USER`` / ``ALTER USER`` of ``'user'@'host'`` with ``method`` (everything checked first)."""
    with checked_input():
        return method.identified(verb, account(user, host), password)
