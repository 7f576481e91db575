"""The Database kind end to end: real API server, real MySQL/MariaDB. Creation, character set convergence,
Retain (the default) and Delete, adoption refused and allowed, reserved names, a crash between the
bookkeeping row and CREATE DATABASE, hostile names refused at admission, and another resource's database
never dropped."""

from __future__ import annotations

import asyncio
import functools
from typing import Any

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from dbuser_operator.api.v1alpha1 import ADOPT_ANNOTATION
from dbuser_operator.api.v1alpha1.mysqlserver import CLUSTER_KIND
from dbuser_operator.controllers.kit.resources import DATABASES
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.mysql.bookkeeping import ownership
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.metrics import REGISTRY
from tests.integration.operator.servers import test_server_policy
from tests.integration.operator.servers.test_server_policy import Tenancy
from tests.integration.operator.support.builders import database, unique
from tests.integration.operator.support.kube import database_gone, ready, wait_db, wait_for_event
from tests.integration.operator.support.mysql import mysql_query
from tests.integration.operator.support.operator import RunningOperator, StartOperator
from tests.integration.operator.support.wait import becomes

pytestmark = pytest.mark.integration

shared_tenancy = test_server_policy.tenancy  # the policy tests' fixture, under this name here
HOSTILE_NAMES = ["a`b", "a'b", "a b", "ｄｂ", "x" * 65, "*", "a.b", "a/b", "a\\b", ""]  # noqa: RUF001
HOSTILE_CHARSETS = ["utf8mb4; DROP DATABASE x", "utf8mb4`", "latin1 COLLATE x", "ｌａｔｉｎ1", "x" * 65]  # noqa: RUF001


def db_name(prefix: str) -> str:
    """A name both a database and a Kubernetes object may have ('-' rather than '_')."""
    return unique(prefix)


def schema_of(mysql: MySQLServer, name: str) -> tuple[str, str] | None:
    rows = mysql_query(
        mysql,
        "SELECT DEFAULT_CHARACTER_SET_NAME, DEFAULT_COLLATION_NAME FROM information_schema.SCHEMATA"
        " WHERE SCHEMA_NAME = %s",
        name,
    )
    return (str(rows[0][0]), str(rows[0][1])) if rows else None


def owner_row(mysql: MySQLServer, schema: str, name: str) -> tuple[Any, ...] | None:
    """The bookkeeping row of database ``name`` (None also when there is no bookkeeping table yet)."""
    tables = "SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s AND TABLE_NAME = 'databases'"
    if not mysql_query(mysql, tables, schema):
        return None
    rows = mysql_query(
        mysql, f"SELECT owner_uid, namespace, resource FROM `{schema}`.`databases` WHERE name = %s", name
    )
    return tuple(rows[0]) if rows else None


async def test_create_change_charset_retain_and_delete(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, mysql: MySQLServer
) -> None:
    schema = operator.settings.ownership_schema
    kept, dropped = db_name("dbkeep").replace("-", "_"), db_name("dbdrop")
    await kube_client.create(
        DATABASES, database(kept.replace("_", "-"), name=kept, characterSet="latin1"), namespace
    )
    obj = await wait_db(kube_client, namespace, kept.replace("_", "-"))
    assert schema_of(mysql, kept) == ("latin1", obj["status"]["collation"])
    assert obj["status"]["name"] == kept
    assert obj["status"]["characterSet"] == "latin1"
    row = owner_row(mysql, schema, kept)
    assert row == (obj["metadata"]["uid"], namespace, kept.replace("_", "-"))
    await wait_for_event(kube_client, namespace, kept.replace("_", "-"), "DatabaseCreated")

    # A character set and collation change is converged with ALTER DATABASE and read back.
    patch = {"spec": {"characterSet": "utf8mb4", "collation": "utf8mb4_bin"}}
    await kube_client.patch(DATABASES, kept.replace("_", "-"), patch, PatchType.MERGE, namespace=namespace)
    wanted = ("utf8mb4", "utf8mb4_bin")
    await becomes(lambda: schema_of(mysql, kept), wanted, limit=60, interval=0.1, message="never altered")
    await wait_db(kube_client, namespace, kept.replace("_", "-"))

    async def collation() -> Any:
        obj = await kube_client.get(DATABASES, kept.replace("_", "-"), namespace)
        return obj["status"].get("collation")

    await becomes(collation, "utf8mb4_bin", interval=0.1, message="status.collation never read back")
    await wait_for_event(kube_client, namespace, kept.replace("_", "-"), "CharacterSetChanged")

    # spec.name is immutable.
    with pytest.raises(ApiException) as refused:
        await kube_client.patch(
            DATABASES,
            kept.replace("_", "-"),
            {"spec": {"name": "other"}},
            PatchType.MERGE,
            namespace=namespace,
        )
    assert refused.value.status == 422
    assert "spec.name is immutable" in str(refused.value.body)

    # Retain (the default): the database and its data stay; the row goes.
    mysql_query(mysql, f"CREATE TABLE `{kept}`.t (a INT)")
    mysql_query(mysql, f"INSERT INTO `{kept}`.t VALUES (7)")
    await kube_client.delete(DATABASES, kept.replace("_", "-"), namespace)
    await database_gone(kube_client, namespace, kept.replace("_", "-"))
    assert mysql_query(mysql, f"SELECT a FROM `{kept}`.t") == [(7,)]
    assert owner_row(mysql, schema, kept) is None
    await wait_for_event(kube_client, namespace, kept.replace("_", "-"), "Retained")
    mysql_query(mysql, f"DROP DATABASE `{kept}`")

    # Delete, when asked: dropped.
    await kube_client.create(DATABASES, database(dropped, deletionPolicy="Delete"), namespace)
    await wait_db(kube_client, namespace, dropped)
    assert schema_of(mysql, dropped) is not None
    await kube_client.delete(DATABASES, dropped, namespace)
    await database_gone(kube_client, namespace, dropped)
    assert schema_of(mysql, dropped) is None
    assert owner_row(mysql, schema, dropped) is None
    await wait_for_event(kube_client, namespace, dropped, "DatabaseDropped")


async def test_existing_database_refused_never_dropped_adopted_on_request(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, mysql: MySQLServer
) -> None:
    schema = operator.settings.ownership_schema
    name = db_name("dbhand")
    mysql_query(mysql, f"CREATE DATABASE `{name}` CHARACTER SET latin1")
    mysql_query(mysql, f"CREATE TABLE `{name}`.t (a INT)")
    await kube_client.create(
        DATABASES, database(name, deletionPolicy="Delete", characterSet="utf8mb4"), namespace
    )
    obj = await wait_db(kube_client, namespace, name, "False", "DatabaseExists")
    assert ADOPT_ANNOTATION in ready(obj)["message"]  # type: ignore[index]
    assert schema_of(mysql, name) == ("latin1", schema_of(mysql, name)[1])  # type: ignore[index]
    assert owner_row(mysql, schema, name) is None
    # Deleted with Delete, never having owned it: the database stays.
    await kube_client.delete(DATABASES, name, namespace)
    await database_gone(kube_client, namespace, name)
    assert schema_of(mysql, name) is not None
    assert mysql_query(mysql, f"SELECT COUNT(*) FROM `{name}`.t") == [(0,)]

    # With the adopt annotation (no server policy): adopted, converged.
    body = database(name, deletionPolicy="Delete", characterSet="utf8mb4")
    body["metadata"]["annotations"] = {ADOPT_ANNOTATION: "true"}
    await kube_client.create(DATABASES, body, namespace)
    obj = await wait_db(kube_client, namespace, name)
    assert schema_of(mysql, name)[0] == "utf8mb4"  # type: ignore[index]
    assert owner_row(mysql, schema, name) == (obj["metadata"]["uid"], namespace, name)
    await wait_for_event(kube_client, namespace, name, "DatabaseAdopted")

    # A second resource naming the same database, even with the annotation: refused, and its deletion
    # with Delete drops nothing.
    thief = database(unique("thief"), name=name, deletionPolicy="Delete")
    thief["metadata"]["annotations"] = {ADOPT_ANNOTATION: "true"}
    await kube_client.create(DATABASES, thief, namespace)
    found = await wait_db(kube_client, namespace, thief["metadata"]["name"], "False", "DatabaseClaimed")
    assert f"{namespace}/{name}" in ready(found)["message"]  # type: ignore[index]
    await kube_client.delete(DATABASES, thief["metadata"]["name"], namespace)
    await database_gone(kube_client, namespace, thief["metadata"]["name"])
    assert schema_of(mysql, name) is not None
    assert owner_row(mysql, schema, name) == (obj["metadata"]["uid"], namespace, name)

    await kube_client.delete(DATABASES, name, namespace)
    await database_gone(kube_client, namespace, name)
    assert schema_of(mysql, name) is None


async def test_crash_between_row_and_create_leaks_nothing(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, mysql: MySQLServer
) -> None:
    """The row is written before CREATE DATABASE: a pass that dies in between leaves our row and no
    database. Simulated by writing the row by hand for a Paused resource, then letting it run."""
    schema = operator.settings.ownership_schema
    name = db_name("dbcrash")
    await kube_client.create(
        DATABASES, database(name, managementPolicy="Paused", deletionPolicy="Delete"), namespace
    )
    obj = await wait_db(kube_client, namespace, name, "Unknown", "Paused")
    assert schema_of(mysql, name) is None
    mysql_query(mysql, f"CREATE DATABASE IF NOT EXISTS `{schema}`")
    mysql_query(mysql, ownership.DATABASES.create.format(table=f"`{schema}`.`databases`"))
    mysql_query(
        mysql,
        f"INSERT INTO `{schema}`.`databases` (name, owner_uid, namespace, resource) VALUES (%s, %s, %s, %s)",
        name,
        obj["metadata"]["uid"],
        namespace,
        name,
    )
    await kube_client.patch(
        DATABASES, name, {"spec": {"managementPolicy": "Manage"}}, PatchType.MERGE, namespace=namespace
    )
    await wait_db(kube_client, namespace, name, "True", "DatabaseReady")
    assert schema_of(mysql, name) is not None
    await kube_client.delete(DATABASES, name, namespace)
    await database_gone(kube_client, namespace, name)
    assert schema_of(mysql, name) is None
    assert owner_row(mysql, schema, name) is None

    # A row of another (gone) resource and no database: not ours, nothing created.
    other = db_name("dbstale")
    mysql_query(
        mysql,
        f"INSERT INTO `{schema}`.`databases` (name, owner_uid, namespace, resource) VALUES (%s, %s, %s, %s)",
        other,
        "00000000-dead-beef-0000-000000000000",
        namespace,
        "gone",
    )
    await kube_client.create(DATABASES, database(other, deletionPolicy="Delete"), namespace)
    await wait_db(kube_client, namespace, other, "False", "DatabaseClaimed")
    assert schema_of(mysql, other) is None
    await kube_client.delete(DATABASES, other, namespace)
    await database_gone(kube_client, namespace, other)
    assert owner_row(mysql, schema, other)[0] == "00000000-dead-beef-0000-000000000000"  # type: ignore[index]
    mysql_query(mysql, f"DELETE FROM `{schema}`.`databases` WHERE name = %s", other)


async def test_reserved_and_hostile_names(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, mysql: MySQLServer
) -> None:
    schema = operator.settings.ownership_schema
    # The bookkeeping schema exists before it is named (the operator creates it at its first claim).
    mysql_query(mysql, f"CREATE DATABASE IF NOT EXISTS `{schema}`")
    for reserved in ("mysql", "sys", "information_schema", "performance_schema", "MySQL", schema):
        body = database(unique("rsv"), name=reserved, deletionPolicy="Delete")
        body["metadata"]["annotations"] = {ADOPT_ANNOTATION: "true"}
        await kube_client.create(DATABASES, body, namespace)
        await wait_db(kube_client, namespace, body["metadata"]["name"], "False", "ReservedDatabase")
        await kube_client.delete(DATABASES, body["metadata"]["name"], namespace)
        await database_gone(kube_client, namespace, body["metadata"]["name"])
        assert schema_of(mysql, "mysql") is not None
    assert schema_of(mysql, schema) is not None

    for hostile in HOSTILE_NAMES:
        with pytest.raises(ApiException) as refused:
            await kube_client.create(DATABASES, database(unique("hostile"), name=hostile), namespace)
        assert refused.value.status == 422, hostile
    for hostile in HOSTILE_CHARSETS:
        for field in ("characterSet", "collation"):
            with pytest.raises(ApiException) as refused:
                await kube_client.create(
                    DATABASES, database(unique("hostile"), **{field: hostile}), namespace
                )
            assert refused.value.status == 422, (field, hostile)
    # metadata.name as the database name must be one.
    with pytest.raises(ApiException) as refused:
        await kube_client.create(DATABASES, database("a.b"), namespace)
    assert refused.value.status == 422
    assert "set spec.name" in str(refused.value.body)

    # A well-formed but unknown character set: reported, nothing created.
    name = db_name("dbbadcs")
    await kube_client.create(DATABASES, database(name, characterSet="nosuchcharset"), namespace)
    await wait_db(kube_client, namespace, name, "False", "CharacterSetInvalid")
    assert schema_of(mysql, name) is None
    await kube_client.delete(DATABASES, name, namespace)
    await database_gone(kube_client, namespace, name)
    assert owner_row(mysql, schema, name) is None


def tenant_database(env: Tenancy, resource: str, **spec: Any) -> dict[str, Any]:
    obj = database(resource, **spec)
    obj["metadata"]["labels"] = {"dbuser-operator.dev/target": env.target}
    obj["spec"]["serverRef"] = {"kind": CLUSTER_KIND, "name": env.server}
    return obj


async def test_policy_decides_names_and_a_tenant_cannot_take_or_drop_others(shared_tenancy: Tenancy) -> None:
    """As a tenant writing only in its own namespace: names outside the policy's databases patterns are
    refused before any SQL; a database that exists (another tenant's, or made by hand) is neither adopted
    nor dropped; a namespace no entry selects may create nothing."""
    env, ns = shared_tenancy, shared_tenancy.tenant
    kube, mysql = env.kube, env.mysql
    await env.set_policy(databases=["{namespace}_*"])
    created: list[tuple[str, str]] = []
    try:
        # Outside the patterns: PolicyViolation, nothing created, no bookkeeping row.
        outside = unique("billing")
        await kube.create(DATABASES, tenant_database(env, outside, deletionPolicy="Delete"), ns)
        created.append((ns, outside))
        obj = await wait_db(kube, ns, outside, "False", "PolicyViolation")
        assert f"database {outside} is outside {ns}_*" in ready(obj)["message"]  # type: ignore[index]
        assert schema_of(mysql, outside) is None
        # A namespace no entry selects.
        other = f"{env.outsider}_x"
        await kube.create(DATABASES, tenant_database(env, "x", name=other), env.outsider)
        created.append((env.outsider, "x"))
        obj = await wait_db(kube, env.outsider, "x", "False", "PolicyViolation")
        assert "may not use it" in ready(obj)["message"]  # type: ignore[index]
        assert schema_of(mysql, other) is None

        # Inside the patterns: created.
        mine = f"{ns}_app"
        await kube.create(DATABASES, tenant_database(env, "app", name=mine), ns)
        created.append((ns, "app"))
        await wait_db(kube, ns, "app")
        assert schema_of(mysql, mine) is not None
        assert owner_row(mysql, env.schema, mine) is not None

        # A database that exists, within the patterns, adopt annotation, allowAdoption false: refused.
        handmade = f"{ns}_hand"
        mysql_query(mysql, f"CREATE DATABASE `{handmade}`")
        body = tenant_database(env, "hand", name=handmade, deletionPolicy="Delete")
        body["metadata"]["annotations"] = {ADOPT_ANNOTATION: "true"}
        await kube.create(DATABASES, body, ns)
        obj = await wait_db(kube, ns, "hand", "False", "AdoptionNotAllowed")
        assert owner_row(mysql, env.schema, handmade) is None
        await kube.delete(DATABASES, "hand", ns)  # deletionPolicy Delete, never owned: nothing dropped
        await database_gone(kube, ns, "hand")
        assert schema_of(mysql, handmade) is not None

        # Any name, adoption allowed only of its own names: another tenant's database is refused, and the
        # tenant's deletion (Delete) drops nothing of it.
        await env.set_policy(allowAdoption=True, adoptableNames=["{namespace}_*"])
        victim = unique("victim").replace("-", "_")
        mysql_query(mysql, f"CREATE DATABASE `{victim}`")
        mysql_query(mysql, f"CREATE TABLE `{victim}`.t (a INT)")
        body = tenant_database(env, "steal", name=victim, deletionPolicy="Delete")
        body["metadata"]["annotations"] = {ADOPT_ANNOTATION: "true"}
        await kube.create(DATABASES, body, ns)
        # Waited for with the words: the operator's cache may hold the policy before the change a moment
        # longer, which refuses with the same reason ("adopting is not allowed") until the change requeues it.
        words = "not among the adoptable names"
        obj = await wait_db(kube, ns, "steal", "False", "AdoptionNotAllowed", containing=words)
        assert words in ready(obj)["message"]  # type: ignore[index]
        await kube.delete(DATABASES, "steal", ns)
        await database_gone(kube, ns, "steal")
        assert mysql_query(mysql, f"SELECT COUNT(*) FROM `{victim}`.t") == [(0,)]
        assert owner_row(mysql, env.schema, victim) is None
        # ... nor a database another Database owns, even one the tenant could otherwise adopt.
        body = tenant_database(env, "steal2", name=mine, deletionPolicy="Delete")
        body["metadata"]["annotations"] = {ADOPT_ANNOTATION: "true"}
        await kube.create(DATABASES, body, ns)
        await wait_db(kube, ns, "steal2", "False", "DatabaseClaimed")
        await kube.delete(DATABASES, "steal2", ns)
        await database_gone(kube, ns, "steal2")
        assert schema_of(mysql, mine) is not None
        mysql_query(mysql, f"DROP DATABASE `{victim}`")
        # Its own name, adoption allowed: adopted, and then owned (Retain keeps it at deletion).
        body = tenant_database(env, "hand2", name=handmade)
        body["metadata"]["annotations"] = {ADOPT_ANNOTATION: "true"}
        await kube.create(DATABASES, body, ns)
        created.append((ns, "hand2"))
        obj = await wait_db(kube, ns, "hand2")
        assert owner_row(mysql, env.schema, handmade) == (obj["metadata"]["uid"], ns, "hand2")
        await wait_for_event(kube, ns, "hand2", "DatabaseAdopted")
    finally:
        for namespace, name in created:
            await kube.delete(DATABASES, name, namespace)
        for namespace, name in created:
            await database_gone(kube, namespace, name)
    # Retain (the default): the tenant's database stays after its resource is gone.
    assert schema_of(mysql, f"{ns}_app") is not None
    mysql_query(mysql, f"DROP DATABASE `{ns}_app`")
    mysql_query(mysql, f"DROP DATABASE `{ns}_hand`")


async def test_observe_reads_and_never_drops_paused_waits(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, mysql: MySQLServer
) -> None:
    schema = operator.settings.ownership_schema
    name = db_name("dbobs")
    mysql_query(mysql, f"CREATE DATABASE `{name}` CHARACTER SET latin1")
    body = database(name, managementPolicy="Observe", deletionPolicy="Delete", characterSet="utf8mb4")
    await kube_client.create(DATABASES, body, namespace)
    obj = await wait_db(kube_client, namespace, name, "False", "Diverged")
    assert obj["status"]["characterSet"] == "latin1"
    assert schema_of(mysql, name)[0] == "latin1"  # type: ignore[index]  # observed, not changed
    assert owner_row(mysql, schema, name) is None  # nothing claimed
    await kube_client.patch(
        DATABASES, name, {"spec": {"characterSet": "latin1"}}, PatchType.MERGE, namespace=namespace
    )
    await wait_db(kube_client, namespace, name, "True", "Observed")
    # Deleted under Observe with deletionPolicy Delete: never dropped.
    await kube_client.delete(DATABASES, name, namespace)
    await database_gone(kube_client, namespace, name)
    assert schema_of(mysql, name) is not None

    # Paused: nothing at all, deletion included, until the release annotation.
    body = database(name, managementPolicy="Paused", deletionPolicy="Delete")
    body["metadata"]["annotations"] = {ADOPT_ANNOTATION: "true"}
    await kube_client.create(DATABASES, body, namespace)
    await wait_db(kube_client, namespace, name, "Unknown", "Paused")
    await asyncio.sleep(1.5)
    assert owner_row(mysql, schema, name) is None
    mysql_query(mysql, f"DROP DATABASE `{name}`")
    await kube_client.delete(DATABASES, name, namespace)
    await database_gone(kube_client, namespace, name)  # no finalizer was ever added while Paused


async def test_a_database_whose_resource_is_gone_is_counted_as_orphaned(
    start_operator: StartOperator, kube_client: KubeClient, namespace: str, mysql: MySQLServer
) -> None:
    """A Database deleted after its finalizer was removed by hand: its row and database stay, the drift
    check counts it in dbuser_operator_server_orphaned_databases (server and namespace), never drops it.
    Under an operator with its own target and bookkeeping schema: the session's operators of other targets
    count every Database of the namespace that they do not serve as their orphan (one schema, one metric)."""
    target, schema = "dborphan", "dbuser_dborphan"
    operator = await start_operator(target=target, ownership_schema=schema, resync_period=1.0)
    name = db_name("dborphan").replace("-", "_")
    resource = name.replace("_", "-")
    labels = {"server": "default", "namespace": namespace}
    metric = "dbuser_operator_server_orphaned_databases"
    body = database(resource, name=name)
    body["metadata"]["labels"] = {"dbuser-operator.dev/target": target}
    await kube_client.create(DATABASES, body, namespace)
    await wait_db(kube_client, namespace, resource)
    await asyncio.sleep(2 * operator.settings.resync_period)  # a check or two with the resource there
    assert not REGISTRY.get_sample_value(metric, labels)

    remove = [{"op": "remove", "path": "/metadata/finalizers"}]
    await kube_client.patch(DATABASES, resource, remove, PatchType.JSON, namespace=namespace)
    await kube_client.delete(DATABASES, resource, namespace)
    await database_gone(kube_client, namespace, resource)
    try:
        count = functools.partial(REGISTRY.get_sample_value, metric, labels)
        await becomes(count, 1, interval=0.2, message=f"{metric} never counted the orphaned database")
        assert schema_of(mysql, name) is not None  # never dropped
        assert owner_row(mysql, schema, name) is not None  # nor forgotten
    finally:
        mysql_query(mysql, f"DROP DATABASE IF EXISTS `{name}`")
        mysql_query(mysql, f"DELETE FROM `{schema}`.`databases` WHERE name = %s", name)
