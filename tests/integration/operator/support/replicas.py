"""Operator replicas as real processes, each with its own MySQL admin account and API identity.

So that every statement and every API write can be attributed: MySQL's general log (``log_output=TABLE``,
switched on for the test) names the account of each statement, and the API server's audit log names the
client-certificate user of each write.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from kubernetes_asyncio import client

from dbuser_operator.envtest import KubeCluster, MySQLServer
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.resources import LEASES
from tests.conftest import REPO
from tests.integration.operator.support.instances import Instances
from tests.integration.operator.support.wait import eventually
from tests.support.fault_proxy import FaultProxy

LEASE_FLAGS = (  # short timings, so that a takeover takes seconds
    "--leader-election-lease-duration=4",
    "--leader-election-renew-deadline=3",
    "--leader-election-retry-period=1",
)


@dataclass
class Replica:
    """One operator process: its identity (Lease holder), MySQL account and API user."""

    identity: str
    mysql_user: str
    kube_user: str
    log: Path
    process: subprocess.Popen[bytes] | None = None

    def pause(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL: the process ends where it is, nothing flushed or released."""
        assert self.process is not None
        self.process.kill()
        self.process.wait()

    async def exit_code(self, limit: float = 30) -> int:
        """Wait for the process to end by itself; its exit code."""
        process = self.process
        assert process is not None
        await eventually(
            lambda: process.poll() is not None, limit=limit, message=f"{self.identity} did not exit"
        )
        code = process.poll()
        assert code is not None
        return code

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGCONT)
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@dataclass
class Failover:
    """Two replicas of one operator instance (target, Lease, bookkeeping schema) in ``namespace``."""

    kube: KubeCluster
    mysql: MySQLServer
    namespace: str
    workdir: Path
    suffix: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    replicas: dict[str, Replica] = field(default_factory=dict)
    lease_flags: tuple[str, ...] = LEASE_FLAGS  # () for the defaults (15 s lease, 10 s renew, 2 s retry)
    _passwords: dict[str, str] = field(default_factory=dict)

    @property
    def admin_passwords(self) -> list[str]:
        """The replicas' MySQL passwords (for the leak check)."""
        return list(self._passwords.values())

    @property
    def target(self) -> str:
        return f"fo-{self.suffix}"

    @property
    def lease(self) -> str:
        return f"fo-{self.suffix}"

    @property
    def schema(self) -> str:
        return f"fo_{self.suffix}"

    async def prepare(self, api: client.ApiClient, *names: str) -> None:
        """MySQL accounts, kubeconfigs and RBAC (the operator's own ClusterRole rules) for ``names``."""
        for name in names:
            replica = Replica(
                identity=f"{name}-{self.suffix}",
                mysql_user=f"fo{name}_{self.suffix}",
                kube_user=f"fencing-{name}-{self.suffix}",
                log=self.workdir / f"replica-{name}.log",
            )
            password = secrets.token_urlsafe(18)
            with self.mysql.connect() as connection, connection.cursor() as cursor:
                cursor.execute(f"CREATE USER '{replica.mysql_user}'@'%%' IDENTIFIED BY %s", (password,))
                cursor.execute(f"GRANT ALL ON *.* TO '{replica.mysql_user}'@'%' WITH GRANT OPTION")
            self._passwords[name] = password
            await self.kube.mint_kubeconfig(replica.kube_user, [], self.workdir / f"{name}.kubeconfig")
            self.replicas[name] = replica
        rbac = client.RbacAuthorizationV1Api(api)
        rules = yaml.safe_load((REPO / "config" / "rbac" / "role.yaml").read_text())["rules"]
        subjects = [
            client.RbacV1Subject(api_group="rbac.authorization.k8s.io", kind="User", name=r.kube_user)
            for r in self.replicas.values()
        ]
        role_name = f"fencing-{self.suffix}"
        await rbac.create_cluster_role(
            client.V1ClusterRole(metadata=client.V1ObjectMeta(name=role_name), rules=rules),
            _request_timeout=30,
        )
        await rbac.create_cluster_role_binding(
            client.V1ClusterRoleBinding(
                metadata=client.V1ObjectMeta(name=role_name),
                role_ref=client.V1RoleRef(
                    api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=role_name
                ),
                subjects=subjects,
            ),
            _request_timeout=30,
        )
        leases = yaml.safe_load((REPO / "config" / "rbac" / "leader_election_role.yaml").read_text())["rules"]
        await rbac.create_namespaced_role(
            self.namespace,
            client.V1Role(metadata=client.V1ObjectMeta(name=role_name), rules=leases),
            _request_timeout=30,
        )
        await rbac.create_namespaced_role_binding(
            self.namespace,
            client.V1RoleBinding(
                metadata=client.V1ObjectMeta(name=role_name),
                role_ref=client.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="Role", name=role_name),
                subjects=subjects,
            ),
            _request_timeout=30,
        )

    def start(self, name: str, *, mysql_port: int | None = None, kubeconfig: Path | None = None) -> Replica:
        """Start replica ``name`` (optionally through proxies to MySQL and the API server)."""
        replica = self.replicas[name]
        argv = [
            sys.executable,
            "-m",
            "dbuser_operator",
            f"--kubeconfig={kubeconfig or self.workdir / f'{name}.kubeconfig'}",
            f"--mysql-host={self.mysql.host}",
            f"--mysql-port={mysql_port or self.mysql.port}",
            f"--mysql-user={replica.mysql_user}",
            "--mysql-connect-timeout=2",
            # Plain text: the fault proxy reads the statements off the wire (TLS would hide them from it).
            "--mysql-ssl-mode=DISABLED",
            f"--target={self.target}",
            f"--namespaces={self.namespace}",
            f"--ownership-schema={self.schema}",
            "--resync-period=2",
            "--max-concurrent-reconciles=4",
            "--leader-elect",
            f"--leader-election-id={self.lease}",
            f"--leader-election-namespace={self.namespace}",
            f"--leader-election-identity={replica.identity}",
            *self.lease_flags,
            "--metrics-bind-address=127.0.0.1:0",
            "--health-probe-bind-address=127.0.0.1:0",
            "--shutdown-timeout=5",
            "--log-format=json",
            "--log-level=debug",
        ]
        env = {**os.environ, "DBUSER_OPERATOR_MYSQL_PASSWORD": self._passwords[name]}
        env["PYTHONPATH"] = os.pathsep.join([str(REPO / "operator"), env.get("PYTHONPATH", "")])
        with replica.log.open("ab") as log:
            replica.process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
        return replica

    def stop_all(self) -> None:
        for replica in self.replicas.values():
            replica.stop()

    async def tear_down(self, api: client.ApiClient, instances: Instances) -> None:
        """Stop the replicas, drop their MySQL accounts and RBAC, and hand what they managed to an instance
        of the test's that cleans it up when the test ends."""
        self.stop_all()
        with self.mysql.connect() as connection, connection.cursor() as cursor:
            for replica in self.replicas.values():
                cursor.execute(f"DROP USER IF EXISTS '{replica.mysql_user}'@'%'")
        rbac, role_name = client.RbacAuthorizationV1Api(api), f"fencing-{self.suffix}"
        for delete in (rbac.delete_cluster_role_binding, rbac.delete_cluster_role):
            with contextlib.suppress(client.ApiException):
                await delete(role_name, _request_timeout=30)
        await instances.take_over(self.target, self.schema, [self.namespace])

    async def holder(self, kube: KubeClient) -> str:
        try:
            lease = await kube.get(LEASES, self.lease, self.namespace)
        except client.ApiException as error:
            if error.status == 404:
                return ""
            raise
        return str(lease["spec"].get("holderIdentity") or "")

    async def wait_for_holder(self, kube: KubeClient, replica: Replica, limit: float = 60) -> float:
        """Wait until ``replica`` holds the Lease; the seconds it took."""
        start = time.monotonic()

        async def holds() -> bool:
            return await self.holder(kube) == replica.identity

        await eventually(holds, limit=limit, message=f"{replica.identity} never took the Lease")
        return time.monotonic() - start

    # --- attribution -------------------------------------------------------------------------------

    def statements(self, replica: Replica) -> list[tuple[datetime, str, str]]:
        """What the general log recorded for the replica's MySQL account: (time, command, text)."""
        with self.mysql.connect() as connection, connection.cursor() as cursor:
            cursor.execute(
                "SELECT event_time, command_type, CONVERT(argument USING utf8mb4) FROM mysql.general_log"
                " WHERE user_host LIKE %s ORDER BY event_time",
                (f"{replica.mysql_user}[%",),
            )
            return [(row[0], str(row[1]), str(row[2])) for row in cursor.fetchall()]

    def api_writes(self, replica: Replica) -> list[dict[str, Any]]:
        """The audit log's completed writes by the replica's API user."""
        assert self.kube.control_plane is not None, "the API server's audit log needs the local control plane"
        writes = []
        for line in self.kube.control_plane.audit_log.read_text().splitlines():
            event = json.loads(line)
            if event.get("stage") == "ResponseComplete" and event["user"]["username"] == replica.kube_user:
                writes.append(event)
        return writes


def audit_time(event: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(event["stageTimestamp"].replace("Z", "+00:00"))


def lease_write(event: dict[str, Any]) -> bool:
    return bool(event["objectRef"].get("resource") == "leases")


def succeeded(event: dict[str, Any]) -> bool:
    return bool(200 <= int(event.get("responseStatus", {}).get("code", 0)) < 300)


@dataclass(frozen=True)
class LogEntry:
    """One line of the general log: when the server received it, the command (Connect, Query, Quit…) and
    its text (a statement, or a login's account)."""

    time: datetime
    command: str
    text: str


@dataclass
class GeneralLog:
    """MySQL's general log into ``mysql.general_log`` (too) while the test runs; as it was after."""

    mysql: MySQLServer
    _output: str = "FILE"
    _on: str = "0"

    def __enter__(self) -> GeneralLog:
        with self.mysql.connect() as connection, connection.cursor() as cursor:
            cursor.execute("SELECT @@GLOBAL.log_output, @@GLOBAL.general_log")
            output, on = cursor.fetchone()
            self._output, self._on = str(output), str(on)
            cursor.execute("SET GLOBAL log_output = 'TABLE'")
            cursor.execute("SET GLOBAL general_log = 'ON'")
        return self

    def arguments(self) -> list[str]:
        """The text of every statement logged so far (the table's ``argument``)."""
        return [entry.text for entry in self.entries()]

    def entries(self) -> list[LogEntry]:
        """Everything logged so far, in the server's order, with the server's time (microseconds)."""
        with self.mysql.connect() as connection, connection.cursor() as cursor:
            cursor.execute(
                "SELECT event_time, command_type, CONVERT(argument USING utf8mb4) FROM mysql.general_log"
                " ORDER BY event_time"
            )
            return [LogEntry(row[0], str(row[1]), str(row[2])) for row in cursor.fetchall()]

    def times(self, like: str) -> list[datetime]:
        """When the server received each statement whose text matches ``like`` (SQL ``LIKE``), in UTC: the
        server's own record, to the microsecond, for a test that compares a promised time."""
        with self.mysql.connect() as connection, connection.cursor() as cursor:
            cursor.execute(
                "SET time_zone = '+00:00'"
            )  # event_time is a TIMESTAMP: shown in the session's zone
            cursor.execute(
                "SELECT event_time FROM mysql.general_log"
                " WHERE CONVERT(argument USING utf8mb4) LIKE %s ORDER BY event_time",
                (like,),
            )
            return [row[0].replace(tzinfo=UTC) for row in cursor.fetchall()]

    def __exit__(self, *_: object) -> None:
        with self.mysql.connect() as connection, connection.cursor() as cursor:
            cursor.execute("SET GLOBAL general_log = 'OFF'")
            cursor.execute("TRUNCATE TABLE mysql.general_log")  # it holds statements' text
            cursor.execute("SET GLOBAL log_output = %s", (self._output,))
            cursor.execute("SET GLOBAL general_log = %s", ("ON" if self._on in ("1", "ON") else "OFF",))


def first(items: Iterator[datetime] | list[datetime]) -> datetime:
    found = sorted(items)
    assert found, "nothing recorded"
    return found[0]


def _shown(statement: bytes) -> str:
    """A statement's first three words (``ALTER USER 'name'@…``: never a password), and whether it
    discards an old password."""
    shown = b" ".join(statement.split(b" ", 3)[:3]).decode()
    return shown + (" … DISCARD OLD PASSWORD" if statement.rstrip().endswith(b"DISCARD OLD PASSWORD") else "")


async def killed_before(
    replica: Replica,
    proxy: FaultProxy,
    then: Callable[[], Awaitable[object]],
    *,
    after: bytes | None = None,
    only: bytes | None = None,
) -> str:
    """Arm the proxy, do ``then`` (what makes the replica write), and SIGKILL ``replica`` with a write
    unsent: the proxy holds its next write (``after``: the one after a write starting so; ``only``: the next
    starting so), the replica is killed waiting on it, and it never arrives. The held statement's first
    words."""
    proxy.hold_writes(after=after, only=only)
    await then()
    await eventually(lambda: proxy.held_writes, limit=60, interval=0.01, message="no write to hold")
    replica.kill()
    proxy.drop_held()
    return _shown(proxy.held_writes.pop())


async def killed_when_answered(
    replica: Replica, proxy: FaultProxy, then: Callable[[], Awaitable[object]], after: bytes
) -> str:
    """Arm the proxy, do ``then``, and SIGKILL ``replica`` once its next write starting with ``after``
    reached the server and ran, before it read the answer (the proxy keeps it back): the server changed,
    the operator never learned it. The statement's first words."""
    proxy.hold_reply(after=after)
    await then()
    await eventually(lambda: proxy.muted_writes, limit=60, interval=0.01, message=f"no {after.decode()} sent")
    replica.kill()
    proxy.drop_held()
    return _shown(proxy.muted_writes.pop())
