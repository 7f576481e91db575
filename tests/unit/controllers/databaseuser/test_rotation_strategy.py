"""Which servers get DualPassword: MySQL 8.0.21+, MariaDB 10.11+ with mysql_native_password; the reason
when not (the condition message of DualPasswordUnsupported)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dbuser_operator.controllers.databaseuser.steps.rotation import dual_passwords_lacking
from dbuser_operator.mysql import ServerInfo
from dbuser_operator.mysql.accounts.authentication import Method

MARIADB = replace(ServerInfo("mariadb", (11, 8, 3)), native_by_default=True)


@pytest.mark.parametrize(
    ("server", "method"),
    [
        (ServerInfo("mysql", (8, 0, 21)), None),
        (MARIADB, None),
        (MARIADB, Method("mysql_native_password", "mariadb")),
        (replace(ServerInfo("mariadb", (10, 11, 6)), native_by_default=True), None),
    ],
)
def test_supported(server: ServerInfo, method: Method | None) -> None:
    assert dual_passwords_lacking(server, method) == ""


@pytest.mark.parametrize(
    ("server", "method", "said"),
    [
        (ServerInfo("mysql", (8, 0, 20)), None, "MySQL 8.0.20 has none"),
        (replace(ServerInfo("mariadb", (10, 6, 20)), native_by_default=True), None, "MariaDB 10.6.20"),
        (MARIADB, Method("unix_socket", "mariadb"), "not unix_socket"),
        (MARIADB, Method("ed25519", "mariadb"), "second plugin switch"),
        (ServerInfo("mariadb", (11, 8, 3)), None, "old_passwords"),  # its default plugin's hash unknown
    ],
)
def test_lacking_says_why(server: ServerInfo, method: Method | None, said: str) -> None:
    assert said in dual_passwords_lacking(server, method)
