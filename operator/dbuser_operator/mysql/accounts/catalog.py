"""Where the server keeps its accounts: ``mysql.user`` on MySQL, ``mysql.global_priv`` on MariaDB.

MariaDB's ``mysql.user`` is a view over ``mysql.global_priv`` that decodes the JSON column ``Priv`` into
some fifty columns; a statement that opens it costs the server about 0.3 ms (10.11, measured), several
times a primary-key read of the table underneath. The statements the reconcile sends for every account —
does it exist, what is its authentication string — read ``global_priv`` directly on MariaDB, with the
view's own expression, so that the results (and the fingerprints made of them) are the same.
"""

from __future__ import annotations

from dbuser_operator.mysql.identifiers import SQL
from dbuser_operator.mysql.session.server import ServerInfo


def accounts_table(server: ServerInfo) -> SQL:
    """The table with one row per account, keyed by ``User`` and ``Host`` (hosts in lower case)."""
    return SQL("mysql.global_priv" if server.flavour == "mariadb" else "mysql.user")


def authentication_string(server: ServerInfo, alias: str) -> SQL:
    """The account's authentication string, from :func:`accounts_table` aliased ``alias``.

    ``alias`` is one of the caller's constant aliases (a letter), never input.
    """
    if not alias.isidentifier():
        raise ValueError(f"not an alias: {alias!r}")
    if server.flavour == "mariadb":
        return SQL(f"IFNULL(JSON_VALUE({alias}.Priv, '$.authentication_string'), '')")
    return SQL(f"{alias}.authentication_string")


def plugin(server: ServerInfo, alias: str) -> SQL:
    """The account's authentication plugin, from :func:`accounts_table` aliased ``alias`` (a constant)."""
    if not alias.isidentifier():
        raise ValueError(f"not an alias: {alias!r}")
    if server.flavour == "mariadb":
        return SQL(f"IFNULL(JSON_VALUE({alias}.Priv, '$.plugin'), '')")
    return SQL(f"{alias}.plugin")


_MARIADB_LIMITS = ("max_questions", "max_updates", "max_connections")  # MariaDB's unsigned limits


def options_columns(server: ServerInfo, alias: str) -> SQL:
    """The account's limits and TLS requirement, the columns of :data:`.limits.COLUMNS` in their order, from
    :func:`accounts_table` aliased ``alias`` (a constant): on MariaDB with the view's own expressions."""
    if not alias.isidentifier():
        raise ValueError(f"not an alias: {alias!r}")
    if server.flavour != "mariadb":
        return SQL(
            f"{alias}.max_user_connections, {alias}.max_questions, {alias}.max_updates,"
            f" {alias}.max_connections, {alias}.ssl_type, {alias}.x509_issuer, {alias}.x509_subject,"
            f" {alias}.ssl_cipher"
        )
    number = "CAST(IFNULL(JSON_VALUE({a}.Priv, '$.{key}'), 0) AS {sign})"
    text = "IFNULL(JSON_VALUE({a}.Priv, '$.{key}'), '')"
    columns = [
        number.format(a=alias, key="max_user_connections", sign="SIGNED"),
        *(number.format(a=alias, key=key, sign="UNSIGNED") for key in _MARIADB_LIMITS),
        f"ELT(IFNULL(JSON_VALUE({alias}.Priv, '$.ssl_type'), 0) + 1, '', 'ANY', 'X509', 'SPECIFIED')",
        *(text.format(a=alias, key=key) for key in ("x509_issuer", "x509_subject", "ssl_cipher")),
    ]
    return SQL(", ".join(columns))
