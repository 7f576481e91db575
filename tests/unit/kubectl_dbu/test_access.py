"""``kubectl dbu access``: the report as text, and the server it names."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

import pytest

from dbuser_operator.controllers.kit.resources import CLUSTER_MYSQL_SERVERS, MYSQL_SERVERS
from dbuser_operator.kubectl_dbu import access
from dbuser_operator.kubectl_dbu.cli import parser
from dbuser_operator.kubectl_dbu.errors import CommandError
from dbuser_operator.kubectl_dbu.kube import Api
from dbuser_operator.runtime.resources import Resource

NOW = datetime(2026, 11, 29, tzinfo=UTC)
REPORT = {
    "accounts": 3,
    "roles": 1,
    "managed": 1,
    "unmanaged": 2,
    "drifted": 1,
    "orphaned": 0,
    "truncated": True,
    "entries": [
        {
            "user": "app",
            "host": "%",
            "state": "Drifted",
            "owner": "team/app",
            "plugin": "caching_sha2_password",
            "passwordChanged": "2026-11-19T00:00:00Z",
            "databases": ["shop"],
            "drift": ["INSERT ON `shop`.*"],
        },
        {"user": "dba", "host": "%", "state": "Unmanaged", "globalPrivileges": ["SUPER"], "tls": "X509"},
        {"user": "audit", "host": "%", "state": "Unmanaged", "role": True},
    ],
}


def test_the_report_prints_counts_and_a_line_per_account() -> None:
    text = access.render("MySQLServer", "team/main", REPORT, NOW)
    lines = text.splitlines()
    assert lines[0] == (
        "MySQLServer team/main: 3 accounts (1 roles): 1 managed, 2 unmanaged, 1 drifted, 0 orphaned"
    )
    assert lines[1].split()[:3] == ["STATE", "ACCOUNT", "OWNER"]
    app = lines[2].split()
    assert app[:6] == ["Drifted", "app@%", "team/app", "caching_sha2_password", "10d", "-"]
    assert app[-1] == "`shop`.*"  # the drift column: INSERT ON `shop`.*
    assert lines[3].split()[:2] == ["Unmanaged", "dba@%"]
    assert "SUPER" in lines[3]
    assert lines[4].startswith("Unmanaged role")
    assert "truncated" in lines[-1]


def test_a_server_without_a_report_says_so() -> None:
    assert "no access report yet" in access.render("ClusterMySQLServer", "shared", None, NOW)


class Kube:
    def __init__(self) -> None:
        self.asked: list[tuple[str, str, str | None]] = []

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        self.asked.append((resource.kind, name, namespace))
        return {"status": {"access": REPORT}}


async def test_the_server_is_a_mysqlserver_of_the_namespace_or_a_named_kind() -> None:
    kube = Kube()
    await access.run(cast(Api, kube), "team", "main")
    await access.run(cast(Api, kube), "team", "clustermysqlserver/shared")
    await access.run(cast(Api, kube), "team", "MySQLServer/main")
    assert kube.asked == [
        ("MySQLServer", "main", "team"),
        ("ClusterMySQLServer", "shared", None),
        ("MySQLServer", "main", "team"),
    ]
    with pytest.raises(CommandError):
        await access.run(cast(Api, kube), "team", "secret/main")


def test_the_command_is_on_the_command_line() -> None:
    args = parser().parse_args(["access", "clustermysqlserver/shared"])
    assert (args.command, args.server) == ("access", "clustermysqlserver/shared")


def test_the_server_kinds_are_the_apis() -> None:
    assert access.MYSQL_SERVERS == MYSQL_SERVERS
    assert access.CLUSTER_MYSQL_SERVERS == CLUSTER_MYSQL_SERVERS
