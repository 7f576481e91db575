"""Workload identity in the operator's tests: a DatabaseUser bound to a ServiceAccount, and the account's
columns as the server keeps them (``mysql.user`` on MySQL, ``mysql.global_priv``'s JSON on MariaDB)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from dbuser_operator.envtest import MySQLServer
from tests.integration.operator.support.builders import database_user
from tests.integration.operator.support.mysql import is_mariadb, mysql_query

SSL_TYPES = {0: "", 1: "ANY", 2: "X509", 3: "SPECIFIED"}  # MariaDB's global_priv numbers ssl_type
PAGE = Path(__file__).resolve().parents[4] / "docs" / "workload-identity.md"


def documented_example(name: str, server_ca: Path) -> str:
    """The connection example marked ``<!-- example: NAME -->`` in docs/workload-identity.md, as code to run
    (the server's CA where it is here): the page's own code, so that it cannot drift from what is tested."""
    found = re.search(rf"<!-- example: {name} -->\n```\w+\n(.*?)```", PAGE.read_text(), re.DOTALL)
    assert found is not None, f"the page has an example marked {name}"
    return found.group(1).replace("/etc/mysql-ca/ca.crt", str(server_ca))


def workload_user(
    name: str, service_account: str = "app", target: str | None = None, **spec: Any
) -> dict[str, Any]:
    """A DatabaseUser bound to ``service_account`` of its namespace: no password."""
    obj = database_user(name, "", target=target, **spec)
    del obj["spec"]["password"]
    obj["spec"]["authentication"] = {"workload": {"serviceAccountName": service_account}}
    return obj


def account_columns(mysql: MySQLServer, user: str, host: str = "%") -> dict[str, str] | None:
    """plugin, authentication_string, ssl_type, x509_issuer, x509_subject and ssl_cipher of the account, from
    the server's own table (MariaDB: the JSON of mysql.global_priv, which mysql.user is a view of)."""
    if is_mariadb(mysql):
        rows = mysql_query(
            mysql, "SELECT Priv FROM mysql.global_priv WHERE User = %s AND Host = %s", user, host
        )
        if not rows:
            return None
        priv = json.loads(rows[0][0])
        found = {key: str(priv.get(key, "")) for key in ("plugin", "authentication_string")}
        found["ssl_type"] = SSL_TYPES[int(priv.get("ssl_type", 0))]
        return found | {key: str(priv.get(key, "")) for key in ("x509_issuer", "x509_subject", "ssl_cipher")}
    rows = mysql_query(
        mysql,
        "SELECT plugin, authentication_string, ssl_type, x509_issuer, x509_subject, ssl_cipher"
        " FROM mysql.user WHERE User = %s AND Host = %s",
        user,
        host,
    )
    if not rows:
        return None
    names = ("plugin", "authentication_string", "ssl_type", "x509_issuer", "x509_subject", "ssl_cipher")
    return {
        key: value.decode() if isinstance(value, bytes) else str(value)
        for key, value in zip(names, rows[0], strict=True)
    }
