"""Rotation is the kubelet's refresh: a new key, a new PodCertificateRequest, a new certificate swapped into
the pod's volume at once (the kubelet writes the credential bundle atomically). The account does not change,
so nothing is written to MySQL and no login fails: 8 clients reconnecting every 10 ms through 5 refreshes
prove it, with the server's general log as the witness for the operator's side."""

from __future__ import annotations

import contextlib
import datetime
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pymysql
import pytest

from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.controllers.servers.liveness import DEFAULT_SERVER_LABEL, SERVER_UP
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.envtest.pki import CertificateAuthority
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.metrics import REGISTRY
from tests.integration.operator.support.kube import delete_all_users, wait_for_ready
from tests.integration.operator.support.kubelet import Credentials, Kubelet, key_pem
from tests.integration.operator.support.replicas import GeneralLog
from tests.integration.operator.support.wait import eventually
from tests.integration.operator.workload.conftest import StartSigner
from tests.integration.operator.workload.support import (
    bound_user,
    check_issued,
)

pytestmark = pytest.mark.integration

CLIENTS = 8
REFRESHES = 5
PAUSE = 0.01  # seconds between two connections of one client


def write_bundle(path: Path, credentials: Credentials) -> None:
    """Swap the pod's credential bundle (the key, then the chain: a podCertificate volume's
    credentialBundlePath) at once, as the kubelet's atomic writer does: a reader sees the old or the new."""
    staged = path.with_suffix(".new")
    staged.write_bytes(key_pem(credentials.key) + credentials.chain_pem.encode())
    staged.chmod(0o600)
    os.replace(staged, path)


@dataclass
class Clients:
    """Threads that log in with the bundle again and again, each login a new connection."""

    mysql: MySQLServer
    user: str
    bundle: Path
    logins: int = 0
    failures: list[str] = field(default_factory=list)
    by_client: dict[int, int] = field(default_factory=dict)  # logins of each client
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self, number: int) -> None:
        """Log in again and again; every failure is counted, none ends the thread."""
        assert self.mysql.ca_file is not None
        own = self.bundle.with_name(f"client-{number}.pem")  # what this client read, once per login
        while not self.stop.is_set():
            try:
                # One read of the bundle per login: a client that loads the file twice (the certificate,
                # then the key) may straddle a refresh and pair a key with the other certificate.
                own.write_bytes(self.bundle.read_bytes())
                connection = pymysql.connect(
                    host=self.mysql.host,
                    port=self.mysql.port,
                    user=self.user,
                    password="",
                    connect_timeout=5,
                    ssl_ca=str(self.mysql.ca_file),
                    ssl_verify_identity=True,
                    ssl_cert=str(own),  # the key is in the same file
                )
                with connection.cursor() as cursor:
                    cursor.execute("SELECT 1")
                connection.close()
            except Exception as error:  # every failed login counts, whatever it raised
                with self.lock:
                    self.failures.append(repr(error))
            else:
                with self.lock:
                    self.logins += 1
                    self.by_client[number] = self.by_client.get(number, 0) + 1
            time.sleep(PAUSE)


@contextlib.contextmanager
def running(clients: Clients) -> Iterator[Clients]:
    """The clients' threads, stopped and joined at the end."""
    threads = [threading.Thread(target=clients.run, args=(n,), name=f"client {n}") for n in range(CLIENTS)]
    for thread in threads:
        thread.start()
    try:
        yield clients
    finally:
        clients.stop.set()
        for thread in threads:
            thread.join(timeout=30)


def server_now(mysql: MySQLServer) -> tuple[datetime.datetime, int]:
    """The server's clock (microseconds) and the marking connection's id, to leave its own lines out."""
    with mysql.connect() as connection, connection.cursor() as cursor:
        cursor.execute("SELECT NOW(6), CONNECTION_ID()")
        now, thread = cursor.fetchone()
    return now, int(thread)


def logged_between(
    mysql: MySQLServer, start: datetime.datetime, end: datetime.datetime, markers: set[int]
) -> list[tuple[str, str, str]]:
    """(account, command, text) of every general-log line the server wrote between ``start`` and
    ``end`` (its clock), but the marking connections'."""
    with mysql.connect() as connection, connection.cursor() as cursor:
        cursor.execute(
            "SELECT thread_id, user_host, command_type, CONVERT(argument USING utf8mb4)"
            " FROM mysql.general_log WHERE event_time > %s AND event_time < %s ORDER BY event_time",
            (start, end),
        )
        rows = cursor.fetchall()
    return [
        (str(user), str(command), str(text)) for thread, user, command, text in rows if thread not in markers
    ]


def server_up() -> float | None:
    return REGISTRY.get_sample_value("dbuser_operator_mysql_server_up", {"server": DEFAULT_SERVER_LABEL})


async def busy(clients: Clients) -> None:
    """Until the clients have logged in twice each (about) with the bundle as it is now."""
    before = clients.logins
    await eventually(lambda: clients.logins >= before + 2 * CLIENTS, message="the clients log in")


async def test_five_refreshes_under_eight_busy_clients_fail_no_login_and_write_nothing(
    start_signer: StartSigner,
    kube_client: KubeClient,
    mysql: MySQLServer,
    namespace: str,
    node: Kubelet,
    signing_ca: CertificateAuthority,
    tmp_path: Path,
) -> None:
    """The pod's bundle is swapped 5 times (new key, new request, new certificate each time) while 8
    clients reconnect with it every 10 ms: every login works, each certificate is used, and the operator
    sends nothing to MySQL meanwhile (no periodic work is on here: no drift check, and the server's first
    liveness probe is awaited before, the next is an hour away; the DatabaseUser that makes the account and
    binds the ServiceAccount is Ready before the refreshes start)."""
    SERVER_UP.labels(DEFAULT_SERVER_LABEL).set(0)  # set by this operator's first probe of the server in use
    await start_signer(resync_period=0.0, server_probe_period=3600.0)
    account = "app-db"
    try:
        await kube_client.create(DATABASE_USERS, bound_user(account, "app"), namespace)
        await wait_for_ready(kube_client, namespace, account)
        await eventually(lambda: server_up() == 1, message="the server's first probe")
        pod = await node.pod(namespace, "app-0", "app")
        bundle = tmp_path / "credentials.pem"
        first = await node.request(pod)
        check_issued(await node.decided(namespace, first), first, signing_ca, namespace, "app")
        write_bundle(bundle, first)
        with GeneralLog(mysql), running(Clients(mysql, account, bundle)) as clients:
            start, marker = server_now(mysql)
            serials = {first.leaf.serial_number}
            for _ in range(REFRESHES):
                await busy(clients)
                fresh = await node.request(pod)
                check_issued(await node.decided(namespace, fresh), fresh, signing_ca, namespace, "app")
                write_bundle(bundle, fresh)
                serials.add(fresh.leaf.serial_number)
            await busy(clients)
            end, closing = server_now(mysql)
            lines = logged_between(mysql, start, end, {marker, closing})
        assert clients.failures == []
        assert sorted(clients.by_client) == list(range(CLIENTS))  # every client logged in
        assert len(serials) == 1 + REFRESHES
        client = f"[{account}] @"  # user_host: "wl_x[wl_x] @ …", or "[wl_x] @ …" on a Connect line
        logins = [line for line in lines if line[1] == "Connect" and client in line[0]]
        assert len(logins) >= (REFRESHES + 1) * 2 * CLIENTS
        others = [line for line in lines if client not in line[0]]
        assert others == [], (
            f"statements of other connections (the operator's) during the refreshes: {others}"
        )
    finally:
        await delete_all_users(kube_client, namespace)
