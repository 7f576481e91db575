"""``python -m dbuser_operator.local``: the operator end to end on a local environment.

Starts a real kube-apiserver + etcd (unless ``KUBECONFIG`` names a cluster) and a MySQL server (unless
``MYSQL_URL`` names one), installs the CRDs, runs the operator against them, applies the samples (their
MySQLServer and its admin Secret pointed at that server), and shows ``kubectl get`` of both kinds and
``kubectl describe dbu`` once the samples are Ready. Then it runs until Ctrl-C, saying how to reach both
servers (commands to paste into another shell, valid while it runs); ``--check`` stops right after the samples
were shown Ready, and prints no such command (its folder, kubeconfig included, is removed as it exits).
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from dbuser_operator import app
from dbuser_operator.envtest import (
    Binaries,
    KubeCluster,
    LocalMySQLServer,
    MySQLServer,
    connect_cluster,
    install_crds,
    provide_mysql,
)
from dbuser_operator.envtest.admission import install_finalizer_policy
from dbuser_operator.mysql.session.server import ServerInfo
from dbuser_operator.mysql.session.tls import SSLMode
from dbuser_operator.runtime.logging import configure_logging
from dbuser_operator.settings import Settings

SAMPLE = "app"
SERVER_KIND = "MySQLServer"
EVENTS_LIMIT = 60.0  # seconds the first screen waits for the sample's Events (they follow its status)
RUNNING = "running; Ctrl-C stops everything (and removes its folder)"
CHECK_DONE = "--check: done; the environment stops now (without --check it runs on, and says how to reach it)"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m dbuser_operator.local", description=__doc__)
    parser.add_argument("--workdir", type=Path, help="state and logs (default: a new temporary folder)")
    parser.add_argument("--crds", type=Path, default=Path("crds"), help="CRD folder (default: crds)")
    parser.add_argument(
        "--samples", type=Path, default=Path("config/samples"), help="kustomize folder to apply"
    )
    parser.add_argument("--namespace", default="default", help="namespace for the samples (default: default)")
    parser.add_argument("--check", action="store_true", help="stop once the sample is Ready")
    return parser


def write_private(path: Path, text: str) -> Path:
    """Write ``text`` to ``path``, readable by the owner only from the first byte (mode 0600)."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(descriptor, "w") as file:
        os.fchmod(file.fileno(), 0o600)  # an existing file keeps its mode through O_CREAT: narrow it first
        file.write(text)
    return path


def _write_mysql_options(path: Path, server: MySQLServer) -> Path:
    """A client option file, so that the admin password appears in no command line or output."""
    tls = f"ssl-ca={server.ca_file}\n" if server.ca_file is not None else ""  # the local server's CA
    return write_private(
        path,
        f"[client]\nhost={server.host}\nport={server.port}\nuser={server.user}\npassword={server.password}\n"
        + tls,
    )


def point_samples_at(
    samples: Sequence[dict[str, Any]], server: MySQLServer, ca_pem: str | None
) -> list[dict[str, Any]]:
    """The sample objects with each MySQLServer, and the Secret of its credentials, naming ``server``: its
    host, port and admin account, and (``ca_pem``) the CA to verify its certificate with. The samples name
    a server of a cluster (mysql-reporting.databases.svc) that a local run cannot reach."""
    documents = copy.deepcopy(list(samples))  # the caller's objects stay as they are
    servers = [doc for doc in documents if doc.get("kind") == SERVER_KIND]
    admin: dict[str, dict[str, str]] = {}  # Secret name -> the keys to write
    for doc in servers:
        spec = doc["spec"]
        spec.update(host=server.host, port=server.port)
        credentials = spec["credentials"]
        admin.setdefault(credentials["user"]["name"], {})[credentials["user"]["key"]] = server.user
        secret = credentials["password"]["name"]
        admin.setdefault(secret, {})[credentials["password"]["key"]] = server.password
        if ca_pem is not None:
            admin[secret]["ca.crt"] = ca_pem
            spec["tls"] = {"mode": "VERIFY_IDENTITY", "ca": {"name": secret, "key": "ca.crt"}}
    for doc in documents:
        keys = admin.get(doc["metadata"]["name"]) if doc.get("kind") == "Secret" else None
        if keys is not None:
            doc.pop("data", None)
            doc["stringData"] = keys
    return documents


def client_command(product: str, which: Callable[[str], str | None] = shutil.which) -> str:
    """The command-line client for a server of ``product`` ("mysql" or "mariadb"): its own when installed,
    else the other one that is (MariaDB's client speaks to MySQL and the reverse), else its own."""
    preferred = ["mariadb", "mysql"] if product == "mariadb" else ["mysql", "mariadb"]
    return next((name for name in preferred if which(name) is not None), preferred[0])


def _server_info(server: MySQLServer) -> ServerInfo:
    """The server's flavour and version, as it says (SELECT VERSION())."""
    with server.connect() as connection, connection.cursor() as cursor:
        cursor.execute("SELECT VERSION()")
        row = cursor.fetchone()
    return ServerInfo.parse(str(row[0]) if row else "")


class Local:
    """One local run: the environment, the operator, the samples."""

    def __init__(
        self, arguments: argparse.Namespace, cluster: KubeCluster, server: MySQLServer, kubectl: Path
    ):
        self.arguments = arguments
        self.cluster = cluster
        self.server = server
        self.kubectl_binary = kubectl
        self.workdir: Path = arguments.workdir
        self.info = _server_info(server)

    def kubectl(self, *args: str, stdin: str | None = None) -> str:
        result = subprocess.run(  # noqa: S603 - the pinned kubectl
            [str(self.kubectl_binary), *args],
            env={**os.environ, "KUBECONFIG": str(self.cluster.kubeconfig)},
            input=stdin,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        return result.stdout

    async def run(self) -> None:
        async with self.cluster.api_client() as api:
            await install_crds(api, self.arguments.crds)
            if self.cluster.is_local:  # as `helm install` does; not in a cluster of yours
                defaults = Settings.model_fields
                label, target = defaults["target_label"].default, defaults["target"].default
                await install_finalizer_policy(api, "dbuser-operator-finalizer", label, target)
        _write_mysql_options(self.workdir / "mysql-client.cnf", self.server)
        password_file = write_private(self.workdir / "mysql-admin-password", self.server.password)
        settings = Settings(
            kubeconfig=self.cluster.kubeconfig,
            mysql_host=self.server.host,
            mysql_port=self.server.port,
            mysql_user=self.server.user,
            mysql_password_file=password_file,
            mysql_tls_ca=self.server.ca_file,
            # The local server's certificate names 127.0.0.1; a server given by MYSQL_URL: PREFERRED.
            mysql_ssl_mode=SSLMode.VERIFY_IDENTITY if self.server.ca_file is not None else None,
            metrics_bind_address="127.0.0.1:0",
            health_probe_bind_address="127.0.0.1:0",
            log_format="console",
        )
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        operator = asyncio.create_task(app.run(settings, stop))
        try:
            namespace = self.arguments.namespace
            print(self._apply_samples(namespace), flush=True)
            await self._wait_ready(namespace, operator)
            await self._wait_for_events(namespace)
            for kind in ("dbu", "mysqlservers"):
                print(f"$ kubectl get {kind}", flush=True)
                print(self.kubectl("get", kind, "-n", namespace), flush=True)
            print(f"$ kubectl describe dbu {SAMPLE}", flush=True)
            print(self.kubectl("describe", "dbu", SAMPLE, "-n", namespace), flush=True)
            if self.arguments.check:
                print(CHECK_DONE, flush=True)
            else:
                self._say_how_to_reach()
                print(RUNNING, flush=True)
                await stop.wait()
        finally:
            stop.set()
            await operator

    def _apply_samples(self, namespace: str) -> str:
        """Apply the samples, their MySQLServer pointed at the local server; kubectl's report."""
        documents = [
            doc for doc in yaml.safe_load_all(self.kubectl("kustomize", str(self.arguments.samples))) if doc
        ]
        ca_pem = self.server.ca_file.read_text() if self.server.ca_file is not None else None
        rendered = yaml.safe_dump_all(point_samples_at(documents, self.server, ca_pem), sort_keys=False)
        return self.kubectl("apply", "-n", namespace, "-f", "-", stdin=rendered)

    async def _wait_ready(self, namespace: str, operator: asyncio.Task[None]) -> None:
        """Until every sample DatabaseUser and MySQLServer is Ready."""
        query = '{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{","}{end}'
        for _ in range(600):
            if operator.done():
                operator.result()  # the operator failed: show why
            states = self.kubectl("get", "dbu,mysqlservers", "-n", namespace, "-o", f"jsonpath={query}")
            if states and all(state == "True" for state in states.split(",")[:-1]):  # one "," each
                return
            await asyncio.sleep(0.1)
        raise TimeoutError(f"the samples in {namespace} did not become Ready within 60 s")

    async def _wait_for_events(self, namespace: str) -> None:
        """Events are written in the background, after the status: wait (a minute at most, a busy machine
        is slow) for the sample's ``AccountCreated`` to show in ``kubectl describe``."""
        selector = f"involvedObject.name={SAMPLE},reason=AccountCreated"
        deadline = asyncio.get_running_loop().time() + EVENTS_LIMIT
        while asyncio.get_running_loop().time() < deadline:
            if self.kubectl("get", "events", "-n", namespace, "--field-selector", selector, "-o", "name"):
                return
            await asyncio.sleep(0.2)

    def _say_how_to_reach(self) -> None:
        """Commands to paste into another shell while this runs (its folder goes when it stops)."""
        print("in another shell, while this runs:")
        print(f"export KUBECONFIG={self.cluster.kubeconfig}")
        print(f"export PATH={self.kubectl_binary.parent}:$PATH    # the pinned kubectl and helm")
        options = self.workdir / "mysql-client.cnf"
        client = client_command(self.info.flavour)
        print(f"{client} --defaults-file={options}    # {self.info} admin ({self.server.origin} server)")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the local environment end to end; returns the exit code."""
    arguments = _parser().parse_args(argv)
    temporary = arguments.workdir is None
    arguments.workdir = arguments.workdir or Path(tempfile.mkdtemp(prefix="dbuser-operator-local-"))
    arguments.workdir.mkdir(parents=True, exist_ok=True)
    configure_logging("console", "info")
    testbin = os.environ.get("DBUSER_OPERATOR_TESTBIN")
    binaries = Binaries.from_environment(*([Path(testbin)] if testbin else []))
    print(f"starting the local environment in {arguments.workdir} ...", flush=True)
    cluster = connect_cluster(binaries, arguments.workdir / "kube")
    try:
        with provide_mysql(arguments.workdir / "mysql") as provided:
            server = provided.admin if isinstance(provided, LocalMySQLServer) else provided
            asyncio.run(Local(arguments, cluster, server, binaries.path("kubectl")).run())
    finally:
        if cluster.control_plane is not None:
            cluster.control_plane.stop()
    if temporary:
        shutil.rmtree(arguments.workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
