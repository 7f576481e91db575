"""Operator instances owned by the test that starts them (issue 36: a test owns the operator it asserts on).

The ``operator`` fixture's instance has a target and a bookkeeping schema of its own: :func:`own_target`
tells the builders (``database_user`` and the rest label their resources with it), :func:`own_schema` the
tests that read the bookkeeping tables. No other test's operator serves its resources or counts its rows
(as orphans, say), and it serves and counts no other test's. When the test (or module) that started them
ends, its instances are cleaned up and stopped, and what they leave behind fails the test:

1. every resource of their targets is deleted while an instance of that target still runs, so that its
   finalizer runs (accounts, roles and databases dropped or released as their policy says); a target whose
   instance the test stopped, or whose resources are still there after a while (the test took its RBAC
   away, say), gets an instance of the same settings again, as the admin, to clean up;
2. the instances are stopped (a shutdown that hangs fails the test, naming where it waits);
3. no resource of those targets may remain (its finalizer would hold its namespace forever), and no row
   of their bookkeeping schemas may still name one of those resources (an account, role or database
   owned by nobody any more); a schema of the test's own is then dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dbuser_operator import app
from dbuser_operator.controllers.kit.resources import (
    CLUSTER_MYSQL_SERVERS,
    DATABASE_ROLES,
    DATABASE_USERS,
    DATABASES,
    MYSQL_SERVERS,
)
from dbuser_operator.envtest import KubeCluster, MySQLServer
from dbuser_operator.mysql.bookkeeping.ownership import DEFAULT_SCHEMA
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.errors import NotFound, Unavailable
from dbuser_operator.runtime.resources import Resource
from dbuser_operator.settings import Settings
from tests.integration.operator.support.operator import (
    SHUTDOWN_LIMIT,
    TARGET,
    RunningOperator,
    operator_settings,
    stopped_within,
)
from tests.integration.operator.support.wait import eventually

TARGET_LABEL = "dbuser-operator.dev/target"
# Deleted first, then the server resources they use.
CLEANED = (DATABASE_USERS, DATABASE_ROLES, DATABASES, MYSQL_SERVERS, CLUSTER_MYSQL_SERVERS)
BOOKKEEPING_TABLES = ("accounts", "roles", "databases")
CLEANUP_LIMIT = 120.0  # seconds the finalizers of a test's resources get to run (a poll limit)
ON_THEIR_OWN = 30.0  # seconds the test's own instances get, before one as the admin takes over

_own = (TARGET, DEFAULT_SCHEMA)
SERVED: set[str] = set()  # every target an instance started here served: the session's final check


def own_target() -> str:
    """The target of the running test's own operator (the ``operator`` fixture), ``e2e`` outside one."""
    return _own[0]


def own_schema() -> str:
    """The bookkeeping schema of the running test's own operator, the default schema outside one."""
    return _own[1]


def new_target(prefix: str = "t") -> str:
    """A target no other test uses (at most 63 characters, a label value)."""
    return f"{prefix}-{secrets.token_hex(4)}"


@dataclass
class Instances:
    """The operator instances of one test (or module) and what they are checked for when it ends."""

    kube: KubeCluster
    mysql: MySQLServer
    log_dir: Path
    started: list[RunningOperator] = field(default_factory=list)
    temporary_schemas: set[str] = field(default_factory=set)  # dropped once checked
    owners: set[tuple[str, str]] = field(default_factory=set)  # every resource of theirs seen: checked

    async def start(self, **overrides: Any) -> RunningOperator:
        """Start an instance: ``operator_settings`` with ``overrides``."""
        return await self._launch(operator_settings(self.kube, self.mysql, self.log_dir, **overrides))

    async def _launch(self, settings: Settings) -> RunningOperator:
        SERVED.add(settings.target)
        stop = asyncio.Event()
        task = asyncio.create_task(app.run(settings, stop), name=f"operator {settings.target}")
        instance = RunningOperator(settings, self.log_dir / "operator.log", task, stop)
        self.started.append(instance)
        await asyncio.sleep(0)
        return instance

    def _running(self) -> set[str]:
        return {i.settings.target for i in self.started if not i.task.done() and not i.stop.is_set()}

    async def clean_up(self, kube: KubeClient, limit: float = CLEANUP_LIMIT) -> bool:
        """Delete every resource of the running instances' targets and wait until they are gone (False if
        some are left after ``limit`` seconds): for a fixture that must stop its instance, or take its
        server away, before the test ends."""
        targets = self._running()
        self.owners |= {key for resource in CLEANED for key in await _listed(kube, resource, targets)}
        return await _delete_resources(kube, targets, limit)

    async def _clean_up_as_admin(self, kube: KubeClient) -> None:
        """Targets with resources left (the test stopped its instance, or took its RBAC away): their
        instances stop, and one of the same settings, as the admin, runs again to clean them up."""
        last = {instance.settings.target: instance.settings for instance in self.started}
        for target, settings in last.items():
            if not await _resources_of(kube, {target}):
                continue
            stopping = [i for i in self.started if i.settings.target == target]
            for instance in stopping:
                instance.stop.set()
            await stopped_within(SHUTDOWN_LIMIT, [instance.task for instance in stopping])
            await self._launch(settings.model_copy(update={"kubeconfig": self.kube.kubeconfig}))
            await _delete_resources(kube, {target}, CLEANUP_LIMIT)

    async def finish(self, kube: KubeClient) -> None:
        """Clean up, stop, then fail on whatever the instances left behind (see the module docstring)."""
        targets = {instance.settings.target for instance in self.started}
        schemas = {instance.settings.ownership_schema for instance in self.started}
        self.owners |= {key for resource in CLEANED for key in await _listed(kube, resource, targets)}
        owners = self.owners
        try:
            cleaned = await self.clean_up(kube, limit=ON_THEIR_OWN)
            if not cleaned or targets - self._running():  # left, or an instance the test stopped itself
                await self._clean_up_as_admin(kube)
        finally:
            for instance in self.started:
                instance.stop.set()
            await stopped_within(SHUTDOWN_LIMIT, [instance.task for instance in self.started])
        left = await _resources_of(kube, targets)
        assert not left, f"the test left resources with finalizers behind: {left}"
        rows = await asyncio.to_thread(_owned_rows, self.mysql, schemas, owners)
        await asyncio.to_thread(_drop_schemas, self.mysql, self.temporary_schemas)
        assert not rows, f"the test left owned accounts, roles or databases behind: {rows}"

    async def take_over(self, target: str, schema: str, namespaces: list[str]) -> RunningOperator:
        """An instance, as the admin, for the target and bookkeeping schema of operator processes this test
        ran (replicas, a killed process), started once they have stopped: the test's end cleans up what
        they left through it, as its own, and drops the schema."""
        self.temporary_schemas.add(schema)
        return await self.start(target=target, ownership_schema=schema, namespaces=namespaces)

    async def start_own(self, **overrides: Any) -> RunningOperator:
        """The test's own operator: a new target and a schema of its own (dropped at the end), which
        :func:`own_target` and :func:`own_schema` tell until :func:`forget_own`."""
        global _own  # noqa: PLW0603 - one test runs at a time: its operator's target and schema
        target = new_target()
        schema = "dbuser_" + target.replace("-", "_")
        self.temporary_schemas.add(schema)
        _own = (target, schema)
        return await self.start(target=target, ownership_schema=schema, **overrides)


def forget_own() -> None:
    """After the test: :func:`own_target` and :func:`own_schema` are the defaults again."""
    global _own  # noqa: PLW0603
    _own = (TARGET, DEFAULT_SCHEMA)


async def _delete_resources(kube: KubeClient, targets: set[str], limit: float) -> bool:
    """Delete every resource of ``targets`` and wait until they are gone (their finalizers ran); a Paused
    one is set to Manage first (its deletion waits for that). False if some are left after ``limit``."""
    manage = {"spec": {"managementPolicy": "Manage"}}
    for resource in CLEANED:
        for item in await _items(kube, resource, targets):
            namespace, name = item["metadata"].get("namespace"), item["metadata"]["name"]
            with contextlib.suppress(NotFound):
                if (item.get("spec") or {}).get("managementPolicy") == "Paused":
                    await kube.patch(resource, name, manage, PatchType.MERGE, namespace=namespace)
                await kube.delete(resource, name, namespace)

    async def none_left() -> bool:
        return not await _resources_of(kube, targets)

    try:
        await eventually(none_left, limit=limit, interval=0.2)
    except AssertionError:
        return False
    return True


async def _items(kube: KubeClient, resource: Resource, targets: set[str] | None) -> list[dict[str, Any]]:
    """The objects of ``resource`` of ``targets`` (None: of any target, or none)."""
    if targets is not None and not targets:
        return []
    selector = None if targets is None else f"{TARGET_LABEL} in ({','.join(sorted(targets))})"

    async def listed() -> dict[str, Any]:  # again while a CRD a test changed re-initialises its storage
        try:
            answer: dict[str, Any] = await kube.list(resource, label_selector=selector)
        except NotFound:  # the kind's CRD is not installed in this session: nothing of it anywhere
            return {"items": []}
        except Unavailable as error:
            raise AssertionError(f"{resource.kind}: {error}") from error
        return answer

    items: list[dict[str, Any]] = (await eventually(listed, interval=0.5, message=f"list {resource.kind}"))[
        "items"
    ]
    return items


async def _listed(kube: KubeClient, resource: Resource, targets: set[str]) -> list[tuple[str, str]]:
    items = await _items(kube, resource, targets)
    return [(item["metadata"].get("namespace", ""), item["metadata"]["name"]) for item in items]


async def _resources_of(kube: KubeClient, targets: set[str]) -> list[str]:
    return [
        f"{resource.kind} {namespace + '/' if namespace else ''}{name}"
        for resource in CLEANED
        for namespace, name in await _listed(kube, resource, targets)
    ]


def _owned_rows(
    mysql: MySQLServer, schemas: set[str], owners: set[tuple[str, str]]
) -> list[tuple[str, str, str, str]]:
    """Rows of the bookkeeping tables of ``schemas`` that name one of ``owners`` (namespace, name)."""
    rows: list[tuple[str, str, str, str]] = []
    with mysql.connect() as connection, connection.cursor() as cursor:
        for schema in sorted(schemas):
            cursor.execute(  # the bookkeeping tables: those that name an owner's namespace
                "SELECT TABLE_NAME FROM information_schema.COLUMNS"
                " WHERE TABLE_SCHEMA = %s AND COLUMN_NAME = 'namespace'",
                (schema,),
            )
            for (table,) in cursor.fetchall():
                if table not in BOOKKEEPING_TABLES:
                    continue
                owner = "resource" if table == "databases" else "name"
                cursor.execute(f"SELECT namespace, {owner} FROM `{schema}`.`{table}`")
                rows.extend(
                    (schema, table, str(namespace), str(name))
                    for namespace, name in cursor.fetchall()
                    if (namespace, name) in owners
                )
    return rows


def operator_processes() -> list[str]:
    """The processes of the operator this one started, directly or not, still running: their command lines."""
    children: dict[int, list[int]] = {}
    commands: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # gone meanwhile
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
        commands[int(entry.name)] = command.strip()
    found, pending = [], list(children.get(os.getpid(), []))
    while pending:
        pid = pending.pop()
        pending.extend(children.get(pid, []))
        if "dbuser_operator" in commands.get(pid, ""):
            found.append(f"{pid}: {commands[pid][:120]}")
    return found


async def finalized_objects(kube: KubeClient, targets: set[str] | None = None) -> list[str]:
    """Every object of the operator's kinds of ``targets`` (None: of any), anywhere, that still carries its
    finalizers."""
    held = []
    for resource in CLEANED:
        for item in await _items(kube, resource, targets):
            metadata = item["metadata"]
            if any("dbuser-operator.dev" in finalizer for finalizer in metadata.get("finalizers") or []):
                namespace = metadata.get("namespace")
                held.append(f"{resource.kind} {namespace + '/' if namespace else ''}{metadata['name']}")
    return held


def _drop_schemas(mysql: MySQLServer, schemas: set[str]) -> None:
    with mysql.connect() as connection, connection.cursor() as cursor:
        for schema in sorted(schemas):
            cursor.execute(f"DROP DATABASE IF EXISTS `{schema}`")
