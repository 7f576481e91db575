"""The DatabaseUser operator end to end: real API server, real MySQL server, real clients."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from kubernetes_asyncio import client

from dbuser_operator.api.v1alpha1 import RELEASE_ANNOTATION
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import LocalMySQLServer, MySQLServer
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.errors import Invalid
from dbuser_operator.runtime.metrics import REGISTRY
from dbuser_operator.runtime.resources import SECRETS, Resource
from tests.conftest import Runner
from tests.integration.operator.support.builders import database_user, unique
from tests.integration.operator.support.instances import own_schema, own_target
from tests.integration.operator.support.kube import (
    create_secret,
    delete_all_users,
    events_of,
    ready,
    wait_for_ready,
    wait_until_gone,
)
from tests.integration.operator.support.mysql import account_exists, can_log_in, mysql_query, write_statements
from tests.integration.operator.support.operator import PasswordLedger, RunningOperator, StartOperator
from tests.integration.operator.support.wait import eventually

pytestmark = pytest.mark.integration


def api_writes() -> float:
    """Write requests sent by any KubeClient in this process (the operator's and the tests')."""
    return sum(
        REGISTRY.get_sample_value("rest_client_requests_total", {"method": method, "code": code}) or 0
        for method in ("POST", "PUT", "PATCH", "DELETE")
        for code in ("200", "201", "409", "422")
    )


async def test_create_rotate_and_delete(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    app_one = unique("app-one")
    first, second = passwords.new(), passwords.new()
    await create_secret(kube_client, namespace, "app-pw", {"password": first})
    immediate = {"strategy": "Immediate"}  # the old password stops at once (DualPassword: test_rotation.py)
    await kube_client.create(DATABASE_USERS, database_user(app_one, "app-pw", rotation=immediate), namespace)

    obj = await wait_for_ready(kube_client, namespace, app_one)
    assert obj["status"]["observedGeneration"] == obj["metadata"]["generation"]
    assert ready(obj)["observedGeneration"] == obj["metadata"]["generation"]  # type: ignore[index]
    assert obj["status"]["user"] == app_one
    assert obj["status"]["host"] == "%"
    assert obj["status"]["appliedSecret"]["name"] == "app-pw"
    assert obj["metadata"]["finalizers"] == [f"mysql.dbuser-operator.dev/account-{own_target()}"]
    assert can_log_in(mysql, app_one, first)

    # Rotation: the Secret watch applies the new password within moments.
    await kube_client.patch(
        SECRETS, "app-pw", {"stringData": {"password": second}}, PatchType.MERGE, namespace=namespace
    )
    changed = time.monotonic()
    await eventually(
        lambda: can_log_in(mysql, app_one, second),
        limit=60,
        interval=0.01,
        message="the new password never worked",
    )
    latency = time.monotonic() - changed
    print(f"rotation latency (Secret patched -> new password logs in): {latency * 1000:.0f} ms")
    assert not can_log_in(mysql, app_one, first)

    # Deletion: the finalizer holds the resource until the account is dropped.
    await kube_client.delete(DATABASE_USERS, app_one, namespace)
    await wait_until_gone(kube_client, namespace, app_one)
    assert not account_exists(mysql, app_one)
    assert not can_log_in(mysql, app_one, second)


async def test_missing_secret_key_and_empty_password_then_ready(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    late = unique("late")
    await kube_client.create(DATABASE_USERS, database_user(late, "late-pw"), namespace)
    obj = await wait_for_ready(kube_client, namespace, late, "False", "SecretNotFound")
    assert f"Secret {namespace}/late-pw not found" in ready(obj)["message"]  # type: ignore[index]

    await create_secret(kube_client, namespace, "late-pw", {"other": "x"})
    obj = await wait_for_ready(kube_client, namespace, late, "False", "SecretKeyNotFound")
    assert "'password'" in ready(obj)["message"]  # type: ignore[index]

    await kube_client.patch(
        SECRETS, "late-pw", {"stringData": {"password": ""}}, PatchType.MERGE, namespace=namespace
    )
    await wait_for_ready(kube_client, namespace, late, "False", "PasswordEmpty")

    password = passwords.new()
    await kube_client.patch(
        SECRETS, "late-pw", {"stringData": {"password": password}}, PatchType.MERGE, namespace=namespace
    )
    await wait_for_ready(kube_client, namespace, late, "True", "AccountReady")
    assert can_log_in(mysql, late, password)
    await kube_client.delete(DATABASE_USERS, late, namespace)
    await wait_until_gone(kube_client, namespace, late)


async def test_database_down_during_create_then_ready(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    mysql_provider: MySQLServer | LocalMySQLServer,
    passwords: PasswordLedger,
) -> None:
    outage = unique("outage")
    if not isinstance(mysql_provider, LocalMySQLServer):
        pytest.skip("the MySQL server is not ours to stop (MYSQL_URL or a container)")
    password = passwords.new()
    await create_secret(kube_client, namespace, "outage-pw", {"password": password})
    mysql_provider.stop()
    try:
        await kube_client.create(DATABASE_USERS, database_user(outage, "outage-pw"), namespace)
        obj = await wait_for_ready(kube_client, namespace, outage, "False", "DatabaseUnavailable")
        assert f"'{outage}'@'%'" in ready(obj)["message"]  # type: ignore[index]
    finally:
        mysql_provider.start()
    await wait_for_ready(kube_client, namespace, outage, "True", limit=60)
    assert can_log_in(mysql, outage, password)


async def test_no_op_pass_writes_nothing(
    operator: RunningOperator,
    kube_api: client.ApiClient,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    quiet = unique("quiet")
    await create_secret(kube_client, namespace, "quiet-pw", {"password": passwords.new()})
    await kube_client.create(DATABASE_USERS, database_user(quiet, "quiet-pw"), namespace)
    await wait_for_ready(kube_client, namespace, quiet)
    await asyncio.sleep(0.5)  # let the event recorder and echoes settle

    def reconciles() -> float:
        return sum(
            REGISTRY.get_sample_value(
                "controller_runtime_reconcile_total", {"controller": "databaseuser", "result": r}
            )
            or 0
            for r in ("success", "error", "requeue_after")
        )

    async def touched(attempt: int) -> tuple[float, int]:
        """The operator's API writes and the server's SQL writes around one no-op pass."""
        writes_before, sql_before, reconciles_before = api_writes(), write_statements(mysql), reconciles()
        # An annotation change triggers a reconcile; the test writes through its own (uncounted) client.
        await client.CustomObjectsApi(kube_api).patch_namespaced_custom_object(
            DATABASE_USERS.group,
            DATABASE_USERS.version,
            namespace,
            DATABASE_USERS.plural,
            quiet,
            {"metadata": {"annotations": {"touched": str(attempt)}}},
            _content_type="application/merge-patch+json",  # type: ignore[call-arg]
        )
        await eventually(
            lambda: reconciles() != reconciles_before,
            limit=60,
            interval=0.02,
            message="no reconcile happened",
        )
        await asyncio.sleep(0.3)
        return api_writes() - writes_before, write_statements(mysql) - sql_before

    # The counters are the process's and the server's: the session's other operators (other targets) may
    # write in a window now and then. A no-op pass that wrote would write in every one of them.
    seen = [await touched(attempt) for attempt in range(3)]
    assert (0, 0) in seen, f"every no-op pass wrote (API writes, SQL writes): {seen}"


async def test_other_targets_and_unwatched_namespaces_are_untouched(
    operator: RunningOperator,
    start_operator: StartOperator,
    kube_api: client.ApiClient,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    foreign = unique("foreign")
    unwatched = unique("unwatched")
    scoped_ok = unique("scoped-ok")
    core = client.CoreV1Api(kube_api)
    watched = f"{namespace}-w"
    await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=watched)))
    scoped = await start_operator(target="scoped", namespaces=[watched])
    for ns in (namespace, watched):
        await create_secret(kube_client, ns, "pw", {"password": passwords.new()})
    await kube_client.create(DATABASE_USERS, database_user(foreign, "pw", target="someone-else"), namespace)
    await kube_client.create(DATABASE_USERS, database_user(unwatched, "pw", target="scoped"), namespace)
    await kube_client.create(DATABASE_USERS, database_user(scoped_ok, "pw", target="scoped"), watched)

    await wait_for_ready(kube_client, watched, scoped_ok)  # the scoped instance works...
    await asyncio.sleep(1.0)  # ...and has had time to (wrongly) touch the others
    for name in (foreign, unwatched):
        obj = await kube_client.get(DATABASE_USERS, name, namespace)
        assert "status" not in obj
        assert not obj["metadata"].get("finalizers")
        assert not account_exists(mysql, name)
    assert not scoped.task.done()


async def test_kubectl_get_and_describe(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    kubectl: Runner,
    passwords: PasswordLedger,
) -> None:
    shown = unique("shown")
    shown_user = unique("shown_user")
    await create_secret(kube_client, namespace, "shown-pw", {"password": passwords.new()})
    await kube_client.create(DATABASE_USERS, database_user(shown, "shown-pw", user=shown_user), namespace)
    await wait_for_ready(kube_client, namespace, shown)
    table = kubectl("get", "dbu", "-n", namespace).stdout.splitlines()
    assert table[0].split() == ["NAME", "USER", "HOST", "READY", "REASON", "AGE"]
    assert table[1].split()[:5] == [shown, shown_user, "%", "True", "AccountReady"]

    def described_with_event() -> str:  # events are written just after the status
        described = kubectl("describe", "dbu", shown, "-n", namespace).stdout
        assert "AccountCreated" in described, described
        return described

    described = await eventually(described_with_event, interval=0.1, message="the Event in describe")
    assert "Conditions:" in described
    assert "AccountReady" in described
    assert "AccountCreated" in described
    events = json.loads(kubectl("get", "events", "-n", namespace, "-o", "json").stdout)["items"]
    reasons = [e["reason"] for e in events]
    assert reasons.count("AccountCreated") == 1  # one Event for the creation, no separate "ready" one


async def test_an_admin_without_privileges_is_reported(
    start_operator: StartOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
    tmp_path: Path,
) -> None:
    unprivileged = unique("unprivileged")
    weak_password = passwords.new("admin")
    with mysql.connect() as connection, connection.cursor() as cursor:
        cursor.execute("CREATE USER 'weak_admin'@'%%' IDENTIFIED BY %s", (weak_password,))
        cursor.execute("GRANT SELECT ON mysql.* TO 'weak_admin'@'%'")  # may look, may not create users
        cursor.execute("GRANT ALL ON dbuser_operator_weak.* TO 'weak_admin'@'%'")  # its bookkeeping
    try:
        password_file = tmp_path / "weak"
        password_file.write_text(weak_password)
        await start_operator(
            target="weak",
            mysql_user="weak_admin",
            mysql_password_file=password_file,
            ownership_schema="dbuser_operator_weak",
        )
        await create_secret(kube_client, namespace, "pw", {"password": passwords.new()})
        await kube_client.create(DATABASE_USERS, database_user(unprivileged, "pw", target="weak"), namespace)
        obj = await wait_for_ready(kube_client, namespace, unprivileged, "False", "AdminPrivilegeMissing")
        message = ready(obj)["message"]  # type: ignore[index]
        assert f"'{unprivileged}'@'%'" in message
        assert "1227" in message or "CREATE USER" in message  # the server's error code or words
        assert not account_exists(mysql, unprivileged)
        # This admin cannot drop what it would own: the resource lets go when deleted (it owns nothing).
        release = {"metadata": {"annotations": {RELEASE_ANNOTATION: "true"}}}
        await kube_client.patch(DATABASE_USERS, unprivileged, release, PatchType.MERGE, namespace=namespace)
    finally:
        with mysql.connect() as connection, connection.cursor() as cursor:
            cursor.execute("DROP USER IF EXISTS 'weak_admin'@'%'")
            cursor.execute("DROP DATABASE IF EXISTS dbuser_operator_weak")


async def test_a_hundred_users_become_ready(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    """Prints the time for 100 DatabaseUsers (each with its Secret) to become Ready; asserts they all do."""
    count = 100
    bulk = unique("bulk")
    try:
        await hundred_users_ready(kube_client, namespace, mysql, passwords, bulk, count)
    finally:  # their accounts go too: the shared server keeps nothing of this test's (DESIGN.md §7)
        await delete_all_users(kube_client, namespace)
    assert not account_exists(mysql, f"{bulk}-0")


async def hundred_users_ready(
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
    bulk: str,
    count: int,
) -> None:
    writes_before = api_writes()
    started = time.monotonic()
    for n in range(count):
        await create_secret(kube_client, namespace, f"{bulk}-{n}", {"password": passwords.new()})
        await kube_client.create(DATABASE_USERS, database_user(f"{bulk}-{n}", f"{bulk}-{n}"), namespace)
    created = time.monotonic()

    async def all_ready() -> bool:
        listed = await kube_client.list(DATABASE_USERS, namespace)
        done = sum(1 for item in listed["items"] if (ready(item) or {}).get("status") == "True")
        assert done == count, f"{done} of {count} Ready"
        return True

    await eventually(all_ready, limit=120, message=f"{count} DatabaseUsers Ready")
    finished = time.monotonic()
    print(
        f"{count} DatabaseUsers Ready {finished - started:.2f} s after the first create "
        f"({finished - created:.2f} s after the last)"
    )
    assert account_exists(mysql, f"{bulk}-0")
    assert account_exists(mysql, f"{bulk}-{count - 1}")
    await asyncio.sleep(1)  # the last Events
    # The test itself made 2 writes per user (Secret, DatabaseUser) through the same counted client.
    operator_writes = api_writes() - writes_before - 2 * count
    # A figure: on a busy machine, logins that time out add a retry's status writes (the writes per user
    # are guarded by the count bench of tests/integration/test_bench_counts.py, on a run of its own).
    print(f"API writes per created user: {operator_writes / count:.2f}")


CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False)
SPEC_RULES = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/x-kubernetes-validations"


async def test_a_resource_deleted_with_a_spec_that_no_longer_parses_goes_away(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    """A spec the models reject (stored under a looser CRD: its defaultRoles rule taken out for a moment)
    is InvalidSpec; deleted, the resource is let go of: the finalizer off, the account kept (what the spec
    named is unknown), still recorded as owned, and a Warning saying so."""
    name = unique("invalid")
    await create_secret(kube_client, namespace, f"{name}-pw", {"password": passwords.new()})
    await kube_client.create(DATABASE_USERS, database_user(name, f"{name}-pw"), namespace)
    await wait_for_ready(kube_client, namespace, name)
    crd = f"{DATABASE_USERS.plural}.{DATABASE_USERS.group}"
    rule = (await kube_client.get(CRDS, crd))["spec"]["versions"][0]["schema"]["openAPIV3Schema"][
        "properties"
    ]["spec"]["x-kubernetes-validations"][0]
    assert rule["fieldPath"] == ".defaultRoles"
    loosen = [{"op": "remove", "path": f"{SPEC_RULES}/0"}]  # the rule just read (asserted above)
    await kube_client.patch(CRDS, crd, loosen, PatchType.JSON)
    try:
        invalid = {"spec": {"defaultRoles": ["ghost"]}}  # not in roles: the models refuse it

        async def patched() -> bool:  # the API server takes the looser schema a moment later
            try:
                await kube_client.patch(DATABASE_USERS, name, invalid, PatchType.MERGE, namespace=namespace)
            except Invalid as error:
                raise AssertionError(str(error)) from error
            return True

        await eventually(patched, limit=120, interval=0.2, message="the looser CRD was never served")
        await wait_for_ready(kube_client, namespace, name, "False", "InvalidSpec", limit=120)
    finally:
        await kube_client.patch(
            CRDS, crd, [{"op": "add", "path": f"{SPEC_RULES}/0", "value": rule}], PatchType.JSON
        )
    try:
        await kube_client.delete(DATABASE_USERS, name, namespace)
        await wait_until_gone(kube_client, namespace, name, limit=120)

        async def let_go() -> bool:  # Events are sent in the background: the deletion's may land later
            messages = [event["message"] for event in await events_of(kube_client, namespace, name)]
            assert any("let go without dropping anything" in message for message in messages), messages
            return True

        await eventually(let_go, limit=120, interval=0.2, message="no Warning said the resource was let go")
        assert account_exists(mysql, name)  # kept: recorded as owned, an orphan now
        owners = mysql_query(mysql, f"SELECT name FROM {own_schema()}.accounts WHERE user = %s", name)
        assert owners == [(name,)]
    finally:
        mysql_query(mysql, f"DROP USER IF EXISTS '{name}'@'%'")
        mysql_query(mysql, f"DELETE FROM {own_schema()}.accounts WHERE user = %s", name)
