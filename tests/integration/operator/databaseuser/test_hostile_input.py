"""Hostile input, table-driven: every field a user controls, every trick in the book.

Each case is either rejected by the API server's validation, or ends Ready=False with a reason, or (for
values that are legitimately valid, such as the host wildcard) Ready=True for exactly the account named.
No case changes any other account. Passwords with any printable character log in.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import string
from typing import Any

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from dbuser_operator.api.v1alpha1 import (
    COLUMN_NAME_PATTERN,
    DNS_SUBDOMAIN_PATTERN,
    HOST_PATTERN,
    OBJECT_NAME_PATTERN,
    PRIVILEGES,
    SECRET_KEY_PATTERN,
    TLS_CIPHER_MAX_LENGTH,
    TLS_CIPHER_PATTERN,
    TLS_NAME_MAX_LENGTH,
    TLS_NAME_PATTERN,
    USER_PATTERN,
)
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.resources import SECRETS
from tests.integration.operator.support.builders import database_user, unique
from tests.integration.operator.support.kube import create_secret, ready, wait_for_ready, wait_until_gone
from tests.integration.operator.support.mysql import (
    account_exists,
    can_log_in,
    mysql_accounts,
    mysql_query,
    wait_for_login,
)
from tests.integration.operator.support.operator import PasswordLedger, RunningOperator
from tests.integration.operator.support.wait import eventually

pytestmark = pytest.mark.integration

TRICKS = [
    "a'b",
    'a"b',
    "a`b",
    "a\\b",
    "a;b",
    "a--b",
    "a/*b*/",
    "a#b",
    "a b",
    "a\nb",
    "a\tb",
    "a\x00b",
    "a\x1bb",
    "ｒｏｏｔ",  # fullwidth look-alike  # noqa: RUF001
    "rооt",  # Cyrillic o  # noqa: RUF001
    "x" * 33,
    "x" * 300,
    "",
    "-leading-dash",
    "' OR '1'='1",
    "a%b",
    "a_b",
]

# Privilege names with SQL in them, names of the right shape that are no privilege (or not here), and
# spellings the servers would accept but the API does not.
PRIVILEGE_TRICKS = [
    "SELECT ON *.* TO ROOT",
    "SELECT, INSERT",
    "SELECT ON MYSQL",
    "ALL PRIVILEGES",
    "USAGE",
    "GRANT OPTION",
    "PROXY",
    "DROP TABLE",
    "BACKUP_ADMIN",
    "SLAVE MONITOR",
    "SUPER",
    "select",
    "SELECT\nINSERT",
    "SELECT  INSERT",
    "A" * 33,
]


def place(field: str, value: str) -> dict[str, Any]:
    """A DatabaseUser with ``value`` in ``field`` (and sane values elsewhere)."""
    grant: dict[str, Any] = {"privileges": ["SELECT"], "database": "hostiledb"}
    body = database_user("victim", "pw", user="hostile", privileges=[grant])
    spec = body["spec"]
    if field == "user":
        spec["user"] = value
    elif field == "host":
        spec["host"] = value
    elif field == "hosts":
        spec["hosts"] = ["localhost", value]
    elif field == "database":
        grant["database"] = value
    elif field == "table":
        grant["table"] = value
    elif field == "privilege":
        grant["privileges"] = [value]
    elif field == "column":
        grant.update(table="t", columns=[value])
    elif field == "routine":
        grant.update(privileges=["EXECUTE"], routine={"type": "PROCEDURE", "name": value})
    elif field == "secret name":
        spec["password"]["name"] = value
    elif field == "secret key":
        spec["password"]["key"] = value
    elif field in {"tls subject", "tls issuer"}:  # after "/CN=": the values admitted reach ALTER USER
        spec["tls"] = {field.split()[1]: f"/CN={value}"}
    elif field == "tls cipher":
        spec["tls"] = {"cipher": value}
    return body


# The documented charset of each field: values inside it (wildcards, underscores, dashes) are legitimate.
DOCUMENTED = {
    "user": USER_PATTERN,
    "host": HOST_PATTERN,
    "hosts": HOST_PATTERN,
    "database": OBJECT_NAME_PATTERN,
    "table": OBJECT_NAME_PATTERN,
    "column": COLUMN_NAME_PATTERN,
    "routine": COLUMN_NAME_PATTERN,
    "secret name": DNS_SUBDOMAIN_PATTERN,
    "secret key": SECRET_KEY_PATTERN,
}


def legitimate(field: str, value: str) -> bool:
    if field == "privilege":
        return value in PRIVILEGES
    if field in {"tls subject", "tls issuer"}:
        name = f"/CN={value}"
        return re.fullmatch(TLS_NAME_PATTERN, name) is not None and len(name) <= TLS_NAME_MAX_LENGTH
    if field == "tls cipher":
        return re.fullmatch(TLS_CIPHER_PATTERN, value) is not None and len(value) <= TLS_CIPHER_MAX_LENGTH
    return re.fullmatch(DOCUMENTED[field], value) is not None and len(value) <= 255


async def outcome(kube: KubeClient, namespace: str, body: dict[str, Any]) -> str:
    """'rejected', or the Ready condition's status and reason once the operator has decided."""
    try:
        await kube.create(DATABASE_USERS, body, namespace)
    except ApiException as error:
        if error.status not in (400, 422):
            raise
        return "rejected"

    async def decided() -> str:
        condition = ready(await kube.get(DATABASE_USERS, "victim", namespace))
        assert condition is not None, "no Ready condition yet"
        return f"{condition['status']}:{condition['reason']}"

    try:
        return await eventually(decided, message=f"no decision for {body['spec']}")
    finally:
        await kube.delete(DATABASE_USERS, "victim", namespace)
        await wait_until_gone(kube, namespace, "victim")


def grant_tables(mysql: MySQLServer) -> list[tuple[Any, ...]]:
    """Every privilege row of every account but the one the cases name: nothing else may change."""
    rows: list[tuple[Any, ...]] = []
    for table in ("db", "tables_priv", "columns_priv", "procs_priv"):
        query = f"SELECT * FROM mysql.{table} WHERE User <> 'hostile'"
        rows += [(table, *row) for row in mysql_query(mysql, query)]
    query = "SELECT * FROM information_schema.USER_PRIVILEGES WHERE GRANTEE NOT LIKE %s"
    rows += [("global", *row) for row in mysql_query(mysql, query, "'hostile'@%")]
    return sorted(rows, key=repr)


@pytest.mark.parametrize(
    "field",
    [
        "user",
        "host",
        "hosts",
        "database",
        "table",
        "column",
        "routine",
        "privilege",
        "secret name",
        "secret key",
        "tls subject",
        "tls issuer",
        "tls cipher",
    ],
)
async def test_hostile_values_are_rejected_or_reported_and_touch_no_other_account(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
    field: str,
) -> None:
    await create_secret(kube_client, namespace, "pw", {"password": passwords.new()})
    outcomes: dict[str, str] = {}
    for value in TRICKS + (PRIVILEGE_TRICKS if field == "privilege" else []):
        before, privileges_before = mysql_accounts(mysql), grant_tables(mysql)
        result = await outcome(kube_client, namespace, place(field, value))
        outcomes[value] = result
        after = mysql_accounts(mysql)
        named = {key for key in set(before) ^ set(after)} | {
            key for key in set(before) & set(after) if before[key] != after[key]
        }
        # Only the named account may have come and gone (it is dropped again on deletion).
        allowed = {("hostile", "%"), (value, "%"), ("hostile", value)}
        if field == "hosts":
            allowed.add(("hostile", "localhost"))
        assert named <= allowed, (field, value, named)
        if field not in ("user", "host", "hosts"):  # those name the account itself
            assert grant_tables(mysql) == privileges_before, (field, value)
        if legitimate(field, value):
            assert result in ("rejected", "True:AccountReady") or result.startswith("False:"), (value, result)
        else:
            assert result == "rejected" or result.startswith("False:"), (field, value, result)
    print(f"{field}: " + ", ".join(f"{v!r}→{r}" for v, r in outcomes.items()))


PASSWORDS = [
    string.punctuation,
    "'",
    '"',
    "`",
    "\\",
    "%s",
    "%%",
    "';DROP USER root;--",
    "/*",
    "pass word",
    " leading and trailing ",
    "Grüße-日本語-🔑",
    "tab\tinside",
    "long-" + secrets.token_hex(100),
]


async def test_passwords_with_any_printable_character_log_in(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    printable = unique("printable")
    first = passwords.new()
    await create_secret(kube_client, namespace, "pw", {"password": first})
    await kube_client.create(DATABASE_USERS, database_user(printable, "pw"), namespace)
    await wait_for_login(mysql, printable, first)
    for password in PASSWORDS:
        if len(password) > 8:  # shorter ones are too common to scan the logs for
            passwords.values.add(password)
        patch = {"stringData": {"password": password}}
        await kube_client.patch(SECRETS, "pw", patch, PatchType.MERGE, namespace=namespace)
        message = f"password {password!r} never logged in"
        await wait_for_login(mysql, printable, password, limit=60, interval=0.02, message=message)


async def test_a_password_longer_than_the_server_takes_is_refused_by_its_length(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    """MySQL's caching_sha2_password takes 256 bytes and answers a longer password with error 1396, as it
    does an account that exists: Ready=False PasswordTooLong naming the limit, and no account (never
    AccountExists). MariaDB takes a Secret's whole 64 KiB: the account logs in with it."""
    name = unique("long-pw")
    long = passwords.new("long") + "x" * (64 * 1024)
    await create_secret(kube_client, namespace, "long-pw", {"password": long})
    await kube_client.create(DATABASE_USERS, database_user(name, "long-pw"), namespace)
    if "mariadb" in str(mysql_query(mysql, "SELECT VERSION()")[0][0]).lower():
        await wait_for_ready(kube_client, namespace, name, "True", "AccountReady")
        assert can_log_in(mysql, name, long)
    else:
        obj = await wait_for_ready(kube_client, namespace, name, "False", "PasswordTooLong")
        message = ready(obj)["message"]  # type: ignore[index]
        assert "256 bytes" in message
        assert f"Secret {namespace}/long-pw" in message
        assert long[:20] not in message
        await asyncio.sleep(1)  # retries do not turn it into anything else
        still = ready(await kube_client.get(DATABASE_USERS, name, namespace))
        assert still is not None
        assert still["reason"] == "PasswordTooLong"
        assert not account_exists(mysql, name)
        longest = "é" * 128  # 256 bytes of UTF-8
        passwords.values.add(longest)
        patch = {"stringData": {"password": longest}}
        await kube_client.patch(SECRETS, "long-pw", patch, PatchType.MERGE, namespace=namespace)
        await wait_for_ready(kube_client, namespace, name, "True", "AccountReady")
        # Over TLS: RSA key exchange (a plain connection) cannot carry 256 bytes in a 2048-bit key.
        assert can_log_in(mysql, name, longest, tls=True)
    await kube_client.delete(DATABASE_USERS, name, namespace)
    await wait_until_gone(kube_client, namespace, name)
    assert not account_exists(mysql, name)
