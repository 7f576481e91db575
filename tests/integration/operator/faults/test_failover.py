"""Fenced leadership under faults: two real replicas, a real API server (audited) and MySQL (general log).

The old leader is paused (SIGSTOP) past its lease, or its network is cut, while the other replica takes
over and passwords are rotated and resources created and deleted; then it resumes. Nothing it had in
flight may land after its successor's first write: no MySQL statement and no API write from its accounts
(attributed through the general log and the audit log), every account on its current password (checked
by logging in), every bookkeeping row in place, and the old replica exits non-zero. A loopback proxy holds
the old leader's MySQL write in flight (sent after its fence check, before the server saw it) to close
the check-then-write window: the held statement must fail, not land.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pytest

from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.mysql.session.probe import PROBE_STATEMENT
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.lease import EPOCH_ANNOTATION
from dbuser_operator.runtime.resources import LEASES, SECRETS
from tests.integration.operator.support.builders import database_user
from tests.integration.operator.support.kube import create_secret, wait_for_ready, wait_until_gone
from tests.integration.operator.support.mysql import account_exists, can_log_in, wait_for_login
from tests.integration.operator.support.operator import PasswordLedger
from tests.integration.operator.support.replicas import (
    Failover,
    Replica,
    audit_time,
    first,
    lease_write,
    succeeded,
)
from tests.integration.operator.support.wait import eventually
from tests.support.fault_proxy import FaultProxy
from tests.support.kube import admin_configuration, server_address

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@dataclass
class Workload:
    """DatabaseUsers of one instance, each with its own Secret, and the password each should have now."""

    kube: KubeClient
    failover: Failover
    passwords: PasswordLedger
    current: dict[str, str] = field(default_factory=dict)
    deleted: set[str] = field(default_factory=set)

    async def create(self, name: str) -> None:
        password = self.passwords.new()
        await create_secret(self.kube, self.failover.namespace, name, {"password": password})
        body = database_user(name, name, target=self.failover.target)
        await self.kube.create(DATABASE_USERS, body, self.failover.namespace)
        self.current[name] = password

    async def rotate(self, name: str) -> None:
        password = self.passwords.new()
        patch = {"stringData": {"password": password}}
        await self.kube.patch(SECRETS, name, patch, PatchType.MERGE, namespace=self.failover.namespace)
        self.current[name] = password

    async def delete(self, name: str) -> None:
        await self.kube.delete(DATABASE_USERS, name, self.failover.namespace)
        del self.current[name]
        self.deleted.add(name)

    async def converged(self, mysql: MySQLServer, limit: float = 90) -> None:
        """Every live resource Ready, its account logs in with its current password; the deleted gone."""
        for name in self.deleted:
            await wait_until_gone(self.kube, self.failover.namespace, name, limit=limit)
        for name, password in self.current.items():
            await wait_for_ready(self.kube, self.failover.namespace, name, limit=limit)
            message = f"{name} never logged in with its current password"
            await wait_for_login(mysql, name, password, limit=limit, interval=0.1, message=message)

    async def assert_consistent(self, mysql: MySQLServer) -> None:
        """Accounts on their current passwords, the deleted gone, one bookkeeping row per live resource."""
        for name, password in self.current.items():
            assert can_log_in(mysql, name, password), f"{name} is not on its current password"
        for name in self.deleted:
            assert not account_exists(mysql, name), f"{name} was deleted but its account is back"
        uids = {
            name: (await self.kube.get(DATABASE_USERS, name, self.failover.namespace))["metadata"]["uid"]
            for name in self.current
        }
        with mysql.connect() as connection, connection.cursor() as cursor:
            cursor.execute(f"SELECT user, host, owner_uid FROM `{self.failover.schema}`.accounts")
            rows = {str(user): (str(host), str(uid)) for user, host, uid in cursor.fetchall()}
        assert rows == {name: ("%", uid) for name, uid in uids.items()}


async def start_pair(
    failover: Failover, kube_client: KubeClient, **a_options: Any
) -> tuple[Replica, Replica]:
    """Replica a first (it leads), then b (the standby)."""
    a = failover.start("a", **a_options)
    await failover.wait_for_holder(kube_client, a)
    b = failover.start("b")
    return a, b


async def assert_nothing_after_takeover(
    failover: Failover, kube: KubeClient, old: Replica, new: Replica
) -> None:
    """No statement of ``old`` that reaches the data after ``new``'s first; no API write of ``old`` after
    ``new`` took the Lease.

    Two statements of a resumed old leader may still arrive, and neither reads or changes anything of
    the data (docs/high-availability.md, limits): a connection it opens tries to register under its epoch
    and is refused (the statement inserts nothing: the epoch row is the new leader's); and the health
    probe's ``SELECT 1``, on the probe's own connection, when the process was paused between the probe's
    fence check and its send (the answer is never acted on: the process exits on the lost lease)."""
    statements = failover.statements(old)
    assert statements, "the old leader never wrote to MySQL: the test proves nothing"
    new_first = first(when for when, command, _ in failover.statements(new) if command == "Query")
    registration = f"INSERT INTO `{failover.schema}`.`leader_sessions`"
    late = [
        (when, command, " ".join(text.split()[:3]))  # the verb and the account: never a password
        for when, command, text in statements
        if when >= new_first
        and command != "Quit"
        and not text.startswith(registration)
        and text.strip() != PROBE_STATEMENT
    ]
    assert late == [], f"the old leader's statements after the new leader's first: {late}"
    with failover.mysql.connect() as connection, connection.cursor() as cursor:
        cursor.execute(
            f"SELECT COUNT(*) FROM `{failover.schema}`.leader_sessions WHERE user_name = %s",
            (old.mysql_user,),
        )
        assert cursor.fetchone() == (0,), "a session of the old leader was registered after the takeover"

    if failover.kube.control_plane is None:  # an existing cluster has no audit log we can read
        await assert_no_late_events(failover, kube, old)
        return
    takeover = first(audit_time(e) for e in failover.api_writes(new) if lease_write(e) and succeeded(e))
    old_writes = failover.api_writes(old)
    assert any(not lease_write(e) for e in old_writes), (
        "the old leader never wrote to the API: proves nothing"
    )
    late_writes = [e for e in old_writes if audit_time(e) >= takeover]
    # A write whose bytes were leaving when the process paused can still arrive: the preconditions
    # (resourceVersion of status and finalizer patches, of the Lease) must then refuse it. An Event create
    # has none: one already on its way lands (docs/high-availability.md, limits).
    landed = [
        (e["verb"], e["objectRef"].get("resource"), e["responseStatus"]["code"])
        for e in late_writes
        if succeeded(e) and not (e["verb"] == "create" and e["objectRef"].get("resource") == "events")
    ]
    assert landed == [], f"the old leader's API writes that landed after the takeover: {landed}"
    # (a 504 is a request whose client went away, the old leader exiting: refused too, never applied late,
    # since its precondition could no longer hold)


async def assert_no_late_events(failover: Failover, kube: KubeClient, old: Replica) -> None:
    """Without an audit log: no Event the old replica signed is dated after the new leader acquired."""
    lease = await kube.get(LEASES, failover.lease, failover.namespace)
    acquired = datetime.fromisoformat(lease["spec"]["acquireTime"].replace("Z", "+00:00"))
    events = await kube.request("GET", f"/api/v1/namespaces/{failover.namespace}/events")
    signed = [e for e in events["items"] if (e.get("source") or {}).get("host") == old.identity]
    assert signed, "the old leader never recorded an Event: proves nothing"
    late = [
        e["reason"]
        for e in signed
        if datetime.fromisoformat(e["lastTimestamp"].replace("Z", "+00:00")) > acquired + timedelta(seconds=1)
    ]
    assert late == [], f"Events of the old leader after the takeover: {late}"


async def test_a_paused_leader_writes_nothing_after_its_successor_took_over(
    failover: Failover, kube_client: KubeClient, mysql: MySQLServer, passwords: PasswordLedger
) -> None:
    work = Workload(kube_client, failover, passwords)
    names = [f"fo{i}-{failover.suffix}" for i in range(12)]
    for name in names:
        await work.create(name)
    a, b = await start_pair(failover, kube_client)
    await work.converged(mysql)

    # Rotate everything and pause the leader while it works on the rotations.
    for name in names:
        await work.rotate(name)
    await asyncio.sleep(0.15)
    a.pause()
    await failover.wait_for_holder(kube_client, b)

    # While it is paused: rotate again, create and delete.
    for name in names[:6]:
        await work.rotate(name)
    for name in names[6:9]:
        await work.delete(name)
    for i in range(12, 15):
        await work.create(f"fo{i}-{failover.suffix}")
    await work.converged(mysql)

    a.resume()
    assert await a.exit_code() == 1
    await asyncio.sleep(1.0)  # anything the old leader still had would have landed by now
    await work.assert_consistent(mysql)
    await assert_nothing_after_takeover(failover, kube_client, a, b)


async def _held_write_scenario(
    failover: Failover,
    kube_client: KubeClient,
    mysql: MySQLServer,
    passwords: PasswordLedger,
    *,
    cut_network: bool,
) -> None:
    """The old leader's write is in flight (held by a proxy) when it loses the lease; then released."""
    work = Workload(kube_client, failover, passwords)
    names = [f"fh{i}-{failover.suffix}" for i in range(6)]
    for name in names:
        await work.create(name)
    host, port = server_address(await admin_configuration(failover.kube))
    async with FaultProxy(mysql.host, mysql.port) as to_mysql, FaultProxy(host, port, mysql=False) as to_api:
        kubeconfig = failover.workdir / "a-via-proxy.kubeconfig"
        text = (failover.workdir / "a.kubeconfig").read_text()
        kubeconfig.write_text(text.replace(f"{host}:{port}", f"127.0.0.1:{to_api.port}"))
        a, b = await start_pair(failover, kube_client, mysql_port=to_mysql.port, kubeconfig=kubeconfig)
        await work.converged(mysql)

        to_mysql.hold_writes()
        for name in names:
            await work.rotate(name)
        await eventually(
            lambda: to_mysql.held_writes, interval=0.01, message="the leader sent no write to hold"
        )
        if cut_network:
            to_api.cut()  # it can no longer renew: its fence closes, it exits by itself
        else:
            a.pause()
        await failover.wait_for_holder(kube_client, b)
        await work.converged(mysql)  # the new leader applied the rotations (killing the old sessions first)
        await to_mysql.release()  # the old leader's writes, sent before it lost the lease, arrive now
        if not cut_network:
            a.resume()
        assert await a.exit_code() == 1
        await asyncio.sleep(1.0)
    await work.assert_consistent(mysql)
    await assert_nothing_after_takeover(failover, kube_client, a, b)


async def test_a_write_held_in_flight_past_the_takeover_fails_instead_of_landing(
    failover: Failover, kube_client: KubeClient, mysql: MySQLServer, passwords: PasswordLedger
) -> None:
    await _held_write_scenario(failover, kube_client, mysql, passwords, cut_network=False)


async def test_a_leader_cut_off_from_the_network_writes_nothing_after_its_successor(
    failover: Failover, kube_client: KubeClient, mysql: MySQLServer, passwords: PasswordLedger
) -> None:
    await _held_write_scenario(failover, kube_client, mysql, passwords, cut_network=True)


async def test_a_reinstall_on_a_new_lease_leads_without_hand_work(
    failover: Failover, kube_client: KubeClient, mysql: MySQLServer, passwords: PasswordLedger
) -> None:
    """After a takeover (``leaseTransitions`` 1) the Lease is recreated, as a reinstall does: the next
    replica must lead, not stop at the epoch its predecessors left in MySQL."""
    work = Workload(kube_client, failover, passwords)
    await work.create(f"ri0-{failover.suffix}")
    a, b = await start_pair(failover, kube_client)
    await work.converged(mysql)
    a.stop()  # released: b takes over as the Lease's second term
    await failover.wait_for_holder(kube_client, b)
    await work.rotate(f"ri0-{failover.suffix}")
    await work.converged(mysql)
    lease = await kube_client.get(LEASES, failover.lease, failover.namespace)
    assert lease["spec"]["leaseTransitions"] > 0
    b.stop()
    await kube_client.delete(LEASES, failover.lease, failover.namespace)  # a reinstall starts a new Lease

    again = failover.start("a")
    await failover.wait_for_holder(kube_client, again)
    await work.create(f"ri1-{failover.suffix}")
    await work.rotate(f"ri0-{failover.suffix}")
    await work.converged(mysql)
    assert again.process is not None
    assert again.process.poll() is None, "the new leader exited"
    await work.assert_consistent(mysql)
    # Its epoch is above the old Lease's terms', recorded on the new Lease before MySQL took it.
    lease = await kube_client.get(LEASES, failover.lease, failover.namespace)
    epoch = int(lease["metadata"]["annotations"][EPOCH_ANNOTATION])
    with mysql.connect() as connection, connection.cursor() as cursor:
        cursor.execute(f"SELECT epoch, holder FROM `{failover.schema}`.leader_epoch")
        [(stored, holder)] = cursor.fetchall()
    assert (stored, str(holder).split()[0]) == (epoch, again.identity)
    assert epoch > 1


async def test_a_paused_leader_of_a_deleted_lease_writes_nothing_after_the_new_leases_leader(
    failover: Failover, kube_client: KubeClient, mysql: MySQLServer, passwords: PasswordLedger
) -> None:
    """The Lease is deleted under a paused leader and a new replica creates it: the new Lease starts at
    epoch 0, the old leader holds 0 in MySQL. The new leader takes a higher epoch and fences it all the
    same."""
    work = Workload(kube_client, failover, passwords)
    names = [f"fd{i}-{failover.suffix}" for i in range(8)]
    for name in names:
        await work.create(name)
    a = failover.start("a")
    await failover.wait_for_holder(kube_client, a)
    await work.converged(mysql)

    for name in names:
        await work.rotate(name)
    await asyncio.sleep(0.15)
    a.pause()
    await kube_client.delete(LEASES, failover.lease, failover.namespace)
    b = failover.start("b")
    await failover.wait_for_holder(kube_client, b)

    for name in names[:4]:
        await work.rotate(name)
    for name in names[4:6]:
        await work.delete(name)
    await work.create(f"fd8-{failover.suffix}")
    await work.converged(mysql)

    a.resume()
    assert await a.exit_code() == 1
    await asyncio.sleep(1.0)  # anything the old leader still had would have landed by now
    await work.assert_consistent(mysql)
    await assert_nothing_after_takeover(failover, kube_client, a, b)
    assert b.process is not None
    assert b.process.poll() is None, "the new leader exited"
