"""A MySQL outage, seen from the resources it blocks: an operator whose default server and a MySQLServer are
reached through loopback proxies that stall (accept, then answer nothing) or refuse, while DatabaseUsers are
created and a password rotated.

What is promised: within :data:`REPORTED` seconds every blocked resource says so (Ready=False, naming the
server and the cause; a rotated user does not stay Ready=True), the MySQLServer says Ready=False and
``mysql_server_up`` is 0, while ``/readyz`` stays ready; within :data:`CONVERGED` seconds of the network's
return, every pending change is applied (a real login with the new password).

Both times are measured from the product's own records, the Ready conditions' ``lastTransitionTime``, to
the fault or the network's return (this process's clock: the operator runs on this event loop), and allow
the event loop's lag measured over the window (:class:`~tests.support.slowness.LoopLag`): the time the
operator could not run because the machine was busy. The waits themselves are polling limits
(:data:`PATIENCE`): they fail only when a state never comes.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from dbuser_operator.controllers.kit.resources import DATABASE_USERS, MYSQL_SERVERS
from dbuser_operator.controllers.servers.liveness import server_label
from dbuser_operator.envtest import LocalMySQLServer, MySQLServer
from dbuser_operator.envtest.ports import free_port
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.metrics import REGISTRY
from dbuser_operator.runtime.resources import SECRETS
from tests.integration.operator.support.builders import database_user, server_object, server_spec, unique
from tests.integration.operator.support.instances import Instances
from tests.integration.operator.support.kube import admin_secrets, create_secret, ready
from tests.integration.operator.support.mysql import can_log_in, mysql_query
from tests.integration.operator.support.operator import (
    PasswordLedger,
    RunningOperator,
    stopped_within,
)
from tests.integration.operator.support.wait import eventually
from tests.support.fault_proxy import FaultProxy
from tests.support.slowness import LoopLag

pytestmark = pytest.mark.integration

REPORTED = 10.0  # seconds from the fault to Ready=False on the blocked resources and the server resource
CONVERGED = 8.0  # seconds from the network's return to every pending change applied (a loaded 2-core box)
PATIENCE = 120.0  # a polling limit, no promise: how long a wait looks before it says "never"
TARGET = "outage"


async def stall(proxy: FaultProxy) -> None:
    proxy.cut()


async def refuse(proxy: FaultProxy) -> None:
    await proxy.refuse()


FAULTS: dict[str, Callable[[FaultProxy], Awaitable[None]]] = {"stall": stall, "refuse": refuse}


@contextlib.asynccontextmanager
async def proxied_operator(
    instances: Instances, kube: KubeClient, mysql: MySQLServer, **overrides: Any
) -> AsyncIterator[tuple[RunningOperator, FaultProxy, FaultProxy]]:
    """An operator (its own target; ``overrides`` to its settings) whose default server is reached through
    one proxy; a second proxy for a MySQLServer. The operator cleans up and stops with the test, while the
    proxies still run (healed first)."""
    async with (
        FaultProxy(mysql.host, mysql.port, mysql=False) as default,
        FaultProxy(mysql.host, mysql.port, mysql=False) as other,
    ):
        instance = await instances.start(
            target=TARGET,
            mysql_host="127.0.0.1",
            mysql_port=default.port,
            resync_period=0,
            health_probe_bind_address=f"127.0.0.1:{free_port()}",
            **overrides,
        )
        try:
            yield instance, default, other
        finally:
            await default.heal()  # a test that failed mid-outage: its resources can still be cleaned up
            await other.heal()
            await instances.clean_up(kube)
            instance.stop.set()
            await stopped_within(60, [instance.task])


@pytest.fixture
async def proxied(
    instances: Instances, kube_client: KubeClient, mysql: MySQLServer
) -> AsyncIterator[tuple[RunningOperator, FaultProxy, FaultProxy]]:
    """:func:`proxied_operator` with the default probe period."""
    async with proxied_operator(instances, kube_client, mysql) as proxied:
        yield proxied


@pytest.fixture
async def rarely_probed(
    instances: Instances, kube_client: KubeClient, mysql: MySQLServer
) -> AsyncIterator[tuple[RunningOperator, FaultProxy, FaultProxy]]:
    """:func:`proxied_operator` whose liveness probes a server that answers once an hour: an outage of
    a few seconds is not seen by it unless someone else reports it."""
    async with proxied_operator(instances, kube_client, mysql, server_probe_period=3600.0) as proxied:
        yield proxied


async def until(what: str, limit: float, check: Callable[[], Awaitable[bool | str]]) -> None:
    """Poll ``check`` until it returns True (anything else says what it saw)."""

    async def held() -> bool:
        seen = await check()
        assert seen is True, f"saw {seen!r}"
        return True

    await eventually(held, limit=limit, interval=0.1, message=what)


async def user(kube: KubeClient, namespace: str, passwords: PasswordLedger, **spec: Any) -> tuple[str, str]:
    name, password = unique("out"), passwords.new()
    await create_secret(kube, namespace, f"{name}-pw", {"password": password})
    await kube.create(DATABASE_USERS, database_user(name, f"{name}-pw", target=TARGET, **spec), namespace)
    return name, password


async def rotate(kube: KubeClient, namespace: str, name: str, passwords: PasswordLedger) -> str:
    password = passwords.new()
    patch = {"data": {"password": base64.b64encode(password.encode()).decode()}}
    await kube.patch(SECRETS, f"{name}-pw", patch, PatchType.MERGE, namespace=namespace)
    return password


async def is_ready(kube: KubeClient, namespace: str, name: str) -> bool:
    return (ready(await kube.get(DATABASE_USERS, name, namespace)) or {}).get("status") == "True"


async def blocked(kube: KubeClient, namespace: str, name: str, *words: str) -> str | bool:
    """True once Ready=False names all ``words``; else the condition (for the failure message)."""
    condition = ready(await kube.get(DATABASE_USERS, name, namespace)) or {}
    message = condition.get("message", "")
    return (condition.get("status") == "False" and all(w in message for w in words)) or str(condition)


@pytest.mark.parametrize("fault", FAULTS)
async def test_an_outage_of_the_default_server_is_reported_and_converges_when_it_ends(
    proxied: tuple[RunningOperator, FaultProxy, FaultProxy],
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
    fault: str,
) -> None:
    operator, proxy, _ = proxied
    rotated, _ = await user(kube_client, namespace, passwords)
    await until("the first user Ready", 60, lambda: is_ready(kube_client, namespace, rotated))

    async with LoopLag() as lag:
        await FAULTS[fault](proxy)
        faulted = datetime.now(UTC)
        created, created_password = await user(kube_client, namespace, passwords)
        new_password = await rotate(kube_client, namespace, rotated, passwords)
        where = f"the default server (127.0.0.1:{proxy.port})"
        await all_reported(
            kube_client, namespace, [created, rotated], where, since=faulted, lag=lag, fault=fault
        )
    assert await readyz(operator) == 200  # restarting the operator would not bring MySQL back

    logins = {created: created_password, rotated: new_password}
    await healed_and_converged(proxy, kube_client, namespace, mysql, logins, fault)


async def test_a_server_back_without_the_bookkeeping_schema_gets_it_again(
    instances: Instances,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    """The server comes back from an outage without the operator's bookkeeping schema (restored from a
    backup made before it, or another server behind the name): the operator asks the server anew and
    makes the schema again, so a new user converges; it does not go on as if the schema were there."""
    schema, first = f"dbu_back_{secrets.token_hex(3)}", ""
    try:
        async with proxied_operator(instances, kube_client, mysql, ownership_schema=schema) as proxied:
            _, proxy, _ = proxied
            first, _ = await user(kube_client, namespace, passwords)
            await until("the first user Ready", 60, lambda: is_ready(kube_client, namespace, first))
            await refuse(proxy)
            await until("the outage confirmed", PATIENCE, lambda: metric_is(server_label(""), 0))
            mysql_query(mysql, f"DROP DATABASE `{schema}`")
            await proxy.heal()
            await until("the return confirmed", PATIENCE, lambda: metric_is(server_label(""), 1))
            created, password = await user(kube_client, namespace, passwords)
            await until("the new user Ready", 60, lambda: is_ready(kube_client, namespace, created))
            assert can_log_in(mysql, created, password)
            rows = mysql_query(mysql, f"SELECT name FROM `{schema}`.accounts WHERE user = %s", created)
            assert rows == [(created,)]
    finally:
        mysql_query(mysql, f"DROP DATABASE IF EXISTS `{schema}`")
        if first:  # its row went with the schema: not the operator's to drop any more
            mysql_query(mysql, f"DROP USER IF EXISTS '{first}'@'%'")  # no parameters: a plain %


def transition(obj: dict[str, Any]) -> datetime:
    """When the Ready condition took its status: the product's record (whole seconds, rounded down)."""
    return datetime.fromisoformat((ready(obj) or {})["lastTransitionTime"])


async def all_reported(
    kube: KubeClient,
    namespace: str,
    names: list[str],
    server: str,
    *,
    since: datetime,
    lag: LoopLag,
    fault: str,
) -> None:
    """Each of ``names`` says Ready=False naming ``server``, its transition recorded within :data:`REPORTED`
    seconds of ``since`` (and the lag measured meanwhile)."""
    for name in names:
        await until(
            f"{name} reported blocked", PATIENCE, functools.partial(blocked, kube, namespace, name, server)
        )
    for name in names:
        reported = (transition(await kube.get(DATABASE_USERS, name, namespace)) - since).total_seconds()
        print(f"{fault}: {name} Ready=False recorded {reported:.1f} s after the fault ({lag})")
        assert reported <= REPORTED + lag.total, f"{name} reported {reported:.1f} s after the fault ({lag})"


async def all_converged(
    kube: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    logins: dict[str, str],
    *,
    since: datetime,
    lag: LoopLag,
    fault: str,
) -> None:
    """Every pending change applied (Ready, and a real login), each user's Ready=True recorded within
    :data:`CONVERGED` seconds of ``since`` (and the lag measured meanwhile)."""
    await until("every pending change applied", PATIENCE, lambda: all_applied(kube, namespace, mysql, logins))
    for name in logins:
        converged = (transition(await kube.get(DATABASE_USERS, name, namespace)) - since).total_seconds()
        print(f"{fault}: {name} Ready=True recorded {converged:.1f} s after the network returned ({lag})")
        assert converged <= CONVERGED + lag.total, f"{name} converged {converged:.1f} s later ({lag})"


async def all_applied(kube: KubeClient, namespace: str, mysql: MySQLServer, logins: dict[str, str]) -> bool:
    for name, password in logins.items():
        if not await is_ready(kube, namespace, name) or not can_log_in(mysql, name, password):
            return False
    return True


async def healed_and_converged(
    proxy: FaultProxy,
    kube: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    logins: dict[str, str],
    fault: str,
) -> None:
    """The network back through ``proxy``: every pending change applied, each within :data:`CONVERGED`
    seconds of the return (and the lag measured meanwhile)."""
    async with LoopLag() as lag:
        await proxy.heal()
        healed = datetime.now(UTC)
        await all_converged(kube, namespace, mysql, logins, since=healed, lag=lag, fault=fault)


async def readyz(operator: RunningOperator) -> int:
    """The operator's ``/readyz`` answer."""
    url = f"http://{operator.settings.health_probe_bind_address}/readyz"
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return response.status


def server_up(key: str) -> float | None:
    return REGISTRY.get_sample_value("dbuser_operator_mysql_server_up", {"server": key})


async def metric_is(key: str, value: float) -> bool | str:
    """Whether ``mysql_server_up`` of server ``key`` is ``value`` (else what it is)."""
    found = server_up(key)
    return found == value or f"mysql_server_up={found}"


async def mysqlserver_on(
    kube: KubeClient, namespace: str, mysql: MySQLServer, through: FaultProxy | None = None
) -> str:
    """A MySQLServer of this module's target reaching ``mysql`` (``through`` a proxy); its name."""
    server = unique("srv")
    await admin_secrets(kube, namespace, mysql, f"{server}-admin")
    spec = server_spec(mysql, f"{server}-admin", f"dbu_{server[-6:]}")
    if through is not None:
        spec.update(host="127.0.0.1", port=through.port)
    body = server_object("MySQLServer", server, spec)
    body["metadata"]["labels"]["dbuser-operator.dev/target"] = TARGET
    await kube.create(MYSQL_SERVERS, body, namespace)
    return server


async def unreachable(kube: KubeClient, namespace: str, server: str) -> bool:
    """Whether the MySQLServer says Ready=False, Unreachable."""
    condition = ready(await kube.get(MYSQL_SERVERS, server, namespace)) or {}
    return condition.get("status") == "False" and condition.get("reason") == "Unreachable"


@pytest.mark.parametrize("fault", FAULTS)
async def test_an_outage_of_a_mysqlserver_is_reported_on_it_and_its_users_and_converges(
    proxied: tuple[RunningOperator, FaultProxy, FaultProxy],
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
    fault: str,
) -> None:
    _, _, proxy = proxied
    server = await mysqlserver_on(kube_client, namespace, mysql, proxy)
    ref = {"serverRef": {"name": server}}
    rotated, _ = await user(kube_client, namespace, passwords, **ref)
    await until("the first user Ready", 60, lambda: is_ready(kube_client, namespace, rotated))
    key = f"MySQLServer/{namespace}/{server}"
    await until("mysql_server_up 1", 30, lambda: metric_is(key, 1))

    server_down = functools.partial(unreachable, kube_client, namespace, server)
    async with LoopLag() as lag:
        await FAULTS[fault](proxy)
        faulted = datetime.now(UTC)
        created, created_password = await user(kube_client, namespace, passwords, **ref)
        new_password = await rotate(kube_client, namespace, rotated, passwords)
        await until("the MySQLServer Ready=False", PATIENCE, server_down)
        down = (transition(await kube_client.get(MYSQL_SERVERS, server, namespace)) - faulted).total_seconds()
        print(f"{fault}: MySQLServer Ready=False recorded {down:.1f} s after the fault ({lag})")
        assert down <= REPORTED + lag.total, f"the MySQLServer reported {down:.1f} s after the fault ({lag})"
        await until("mysql_server_up 0", PATIENCE, lambda: metric_is(key, 0))  # a gauge keeps no time
        named = f"MySQLServer {namespace}/{server}"
        await all_reported(
            kube_client, namespace, [created, rotated], named, since=faulted, lag=lag, fault=fault
        )

    logins = {created: created_password, rotated: new_password}
    await healed_and_converged(proxy, kube_client, namespace, mysql, logins, fault)
    assert server_up(key) == 1  # the server answered again before its users could converge


@pytest.fixture(scope="module")
def frozen_mysql(envtest_workdir: Path) -> Iterator[LocalMySQLServer]:
    """A server of the session's flavour of its own, for this module to freeze (SIGSTOP)."""
    server = LocalMySQLServer(envtest_workdir / "outage-mysql")
    server.start()
    yield server
    server.process.resume()
    server.stop()


async def test_a_frozen_server_is_reported_and_its_neighbour_goes_on(
    proxied: tuple[RunningOperator, FaultProxy, FaultProxy],
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    frozen_mysql: LocalMySQLServer,
    passwords: PasswordLedger,
) -> None:
    """Two MySQLServers, one frozen (SIGSTOP: its sockets stay open, nothing answers) for a while: its
    users and itself say so within REPORTED seconds, the other server's users converge meanwhile, and the
    frozen one's converge within CONVERGED seconds of SIGCONT."""
    healthy = await mysqlserver_on(kube_client, namespace, mysql)
    frozen = await mysqlserver_on(kube_client, namespace, frozen_mysql.admin)
    rotated, _ = await user(kube_client, namespace, passwords, serverRef={"name": frozen})
    await until("the first user Ready", 60, lambda: is_ready(kube_client, namespace, rotated))

    frozen_mysql.process.pause()
    try:
        async with LoopLag() as lag:
            faulted = datetime.now(UTC)
            created, created_password = await user(
                kube_client, namespace, passwords, serverRef={"name": frozen}
            )
            new_password = await rotate(kube_client, namespace, rotated, passwords)
            neighbour, neighbour_password = await user(
                kube_client, namespace, passwords, serverRef={"name": healthy}
            )
            named = f"MySQLServer {namespace}/{frozen}"
            await all_reported(
                kube_client, namespace, [created, rotated], named, since=faulted, lag=lag, fault="SIGSTOP"
            )
        key = f"MySQLServer/{namespace}/{frozen}"
        await until("mysql_server_up 0", PATIENCE, lambda: metric_is(key, 0))
        await until("the neighbour Ready", PATIENCE, lambda: is_ready(kube_client, namespace, neighbour))
        assert can_log_in(mysql, neighbour, neighbour_password)
    finally:
        frozen_mysql.process.resume()
        resumed = datetime.now(UTC)
    logins = {created: created_password, rotated: new_password}
    async with LoopLag() as lag:
        await all_converged(
            kube_client, namespace, frozen_mysql.admin, logins, since=resumed, lag=lag, fault="SIGSTOP"
        )


async def test_an_outage_only_a_health_check_saw_ends_when_the_server_answers_again(
    rarely_probed: tuple[RunningOperator, FaultProxy, FaultProxy],
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    """The MySQLServer's health check (run now: its resource changed) finds the server down while its
    liveness probe, due in an hour, has not: the server's Ready=False holds its users (ServerNotReady).
    The server's return is seen all the same, and its users converge within CONVERGED seconds of it, not at
    the next periodic health check (30 s later)."""
    _, _, proxy = rarely_probed
    server = await mysqlserver_on(kube_client, namespace, mysql, proxy)
    rotated, _ = await user(kube_client, namespace, passwords, serverRef={"name": server})
    await until("the first user Ready", 60, lambda: is_ready(kube_client, namespace, rotated))
    key = f"MySQLServer/{namespace}/{server}"
    await until("mysql_server_up 1", 30, lambda: metric_is(key, 1))

    await proxy.refuse()
    poke = {"metadata": {"annotations": {"test.dbuser-operator.dev/poke": "1"}}}
    await kube_client.patch(MYSQL_SERVERS, server, poke, PatchType.MERGE, namespace=namespace)
    await until(
        "the MySQLServer Ready=False",
        PATIENCE,
        functools.partial(unreachable, kube_client, namespace, server),
    )
    new_password = await rotate(kube_client, namespace, rotated, passwords)
    held = functools.partial(blocked, kube_client, namespace, rotated, f"MySQLServer {namespace}/{server}")
    await until(f"{rotated} held by its server's status", PATIENCE, held)

    logins = {rotated: new_password}
    await healed_and_converged(proxy, kube_client, namespace, mysql, logins, "health check only")


async def test_an_outage_only_a_statement_saw_is_confirmed_at_once_and_ends_when_the_server_answers_again(
    rarely_probed: tuple[RunningOperator, FaultProxy, FaultProxy],
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    """A rotation's statement finds the default server refusing while its liveness probe, due in an hour,
    has not looked: the statement's failure makes the probe look at once, so the outage is confirmed
    (``mysql_server_up`` 0, which the probe alone would set an hour later) and the server's return is
    seen within a second or two: the user converges within CONVERGED seconds of it, not at its backoff."""
    _, proxy, _ = rarely_probed
    rotated, _ = await user(kube_client, namespace, passwords)
    await until("the first user Ready", 60, lambda: is_ready(kube_client, namespace, rotated))
    key = server_label("")
    await until("mysql_server_up 1", 30, lambda: metric_is(key, 1))

    await proxy.refuse()
    new_password = await rotate(kube_client, namespace, rotated, passwords)
    where = f"the default server (127.0.0.1:{proxy.port})"
    await until(
        f"{rotated} reported blocked",
        PATIENCE,
        functools.partial(blocked, kube_client, namespace, rotated, where),
    )
    await until("mysql_server_up 0: the outage confirmed", PATIENCE, lambda: metric_is(key, 0))

    logins = {rotated: new_password}
    await healed_and_converged(proxy, kube_client, namespace, mysql, logins, "statement only")
    assert server_up(key) == 1
