"""``kubectl dbu access``: who can reach what on a server, from its server resource's ``status.access``.

Reads one object with the caller's own RBAC (whoever may get the server resource may read its report), and
prints the counts and one line per account listed: state, account, owner, plugin, password age, TLS, global
privileges, databases, roles and drift. The report holds no password or hash; this prints what it holds.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from dbuser_operator.kubectl_dbu.errors import CommandError
from dbuser_operator.kubectl_dbu.kube import Api
from dbuser_operator.kubectl_dbu.names import GROUP, VERSION
from dbuser_operator.kubectl_dbu.table import human_duration, table
from dbuser_operator.runtime.resources import Resource

HEADERS = (
    "STATE",
    "ACCOUNT",
    "OWNER",
    "PLUGIN",
    "PASSWORD AGE",
    "TLS",
    "GLOBAL PRIVILEGES",
    "DATABASES",
    "ROLES",
    "DRIFT",
)
# Spelled here, as names.py spells the plugin's others, so that the command imports no API model.
MYSQL_SERVERS = Resource(GROUP, VERSION, "mysqlservers", "MySQLServer")
CLUSTER_MYSQL_SERVERS = Resource(
    GROUP, VERSION, "clustermysqlservers", "ClusterMySQLServer", namespaced=False
)
KINDS = {"mysqlserver": MYSQL_SERVERS, "clustermysqlserver": CLUSTER_MYSQL_SERVERS}


def _listed(values: list[str] | None) -> str:
    return ",".join(values) if values else "-"


def _age(changed: str | None, now: datetime) -> str:
    if not changed:
        return "-"
    try:
        when = datetime.fromisoformat(changed.replace("Z", "+00:00"))
    except ValueError:
        return "?"
    return human_duration(now - when)


def row(entry: dict[str, Any], now: datetime) -> list[str]:
    """One account's line."""
    account = f"{entry.get('user', '')}@{entry.get('host', '')}"
    tls = entry.get("tls") or "-"
    if entry.get("tlsSubject"):
        tls = f"{tls} {entry['tlsSubject']}"
    return [
        entry.get("state", "?") + (" role" if entry.get("role") else ""),
        account,
        entry.get("owner") or "-",
        entry.get("plugin") or "-",
        _age(entry.get("passwordChanged"), now),
        tls,
        _listed(entry.get("globalPrivileges")),
        _listed(entry.get("databases")),
        _listed(entry.get("roles")),
        _listed(entry.get("drift")),
    ]


def render(kind: str, name: str, report: dict[str, Any] | None, now: datetime) -> str:
    """The report of server ``name`` as text."""
    if not report:
        return f"{kind} {name}: no access report yet (the leader writes one after each drift check)."
    counts = (
        f"{kind} {name}: {report.get('accounts', 0)} accounts ({report.get('roles', 0)} roles): "
        f"{report.get('managed', 0)} managed, {report.get('unmanaged', 0)} unmanaged, "
        f"{report.get('drifted', 0)} drifted, {report.get('orphaned', 0)} orphaned"
    )
    entries = report.get("entries") or []
    lines = [counts, table(HEADERS, [row(entry, now) for entry in entries])]
    if report.get("truncated"):
        lines.append(f"(truncated: {len(entries)} accounts listed, those needing attention first)")
    return "\n".join(lines)


async def run(kube: Api, namespace: str | None, server: str) -> str:
    """The access report of ``server``: NAME (a MySQLServer of ``namespace``) or KIND/NAME
    (``clustermysqlserver/NAME``, ``mysqlserver/NAME``)."""
    kind, _, name = server.rpartition("/")
    resource = KINDS.get(kind.lower() or "mysqlserver")
    if resource is None or not name:
        raise CommandError(f"{server!r}: give NAME, mysqlserver/NAME or clustermysqlserver/NAME")
    cluster = resource is CLUSTER_MYSQL_SERVERS
    obj = await kube.get(resource, name, None if cluster else namespace)
    shown = name if cluster else f"{namespace}/{name}"
    return render(resource.kind, shown, (obj.get("status") or {}).get("access"), datetime.now(UTC))
