"""``python -m dbuser_operator.envtest``: bring the local environment up and say how to reach it.

Starts a real kube-apiserver + etcd (unless ``KUBECONFIG`` is set) and a MySQL server (unless
``MYSQL_URL`` is set), installs CRDs, prints a kubeconfig path and a MySQL client command, and runs
until interrupted. ``--check`` verifies both servers answer and exits instead.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import tempfile
from collections.abc import Sequence
from pathlib import Path

from kubernetes_asyncio import client

from dbuser_operator.envtest.binaries import Binaries
from dbuser_operator.envtest.crds import install_crds
from dbuser_operator.envtest.kube import KubeCluster, connect_cluster
from dbuser_operator.envtest.mysql import LocalMySQLServer, MySQLServer, provide_mysql


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m dbuser_operator.envtest", description=__doc__)
    parser.add_argument("--workdir", type=Path, help="state and logs (default: a new temporary folder)")
    parser.add_argument(
        "--crds", type=Path, action="append", default=[], help="CRD file or folder to install"
    )
    parser.add_argument("--check", action="store_true", help="verify both servers answer, then stop")
    return parser


def _write_mysql_options(path: Path, server: MySQLServer) -> Path:
    """A client option file, so the password appears in no command line or output."""
    path.write_text(
        f"[client]\nhost={server.host}\nport={server.port}\nuser={server.user}\npassword={server.password}\n"
    )
    path.chmod(0o600)
    return path


async def _verify(cluster: KubeCluster, server: MySQLServer) -> str:
    async with cluster.api_client() as api:
        version = await client.VersionApi(api).get_code(_request_timeout=10)
    with server.connect() as connection, connection.cursor() as cursor:
        cursor.execute("SELECT VERSION()")
        (mysql_version,) = cursor.fetchone()
    return f"Kubernetes {version.git_version}, MySQL-compatible server {mysql_version}"


async def _install(cluster: KubeCluster, paths: Sequence[Path]) -> list[str]:
    existing = [path for path in paths if path.exists()]
    if not existing:
        return []
    async with cluster.api_client() as api:
        return await install_crds(api, *existing)


def _wait_for_interrupt() -> None:
    stop = asyncio.Event()

    async def wait() -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        await stop.wait()

    asyncio.run(wait())


def main(argv: Sequence[str] | None = None) -> int:
    """Bring the environment up; returns the exit code."""
    arguments = _parser().parse_args(argv)
    workdir = arguments.workdir or Path(tempfile.mkdtemp(prefix="dbuser-operator-local-"))
    workdir.mkdir(parents=True, exist_ok=True)
    testbin = os.environ.get("DBUSER_OPERATOR_TESTBIN")
    binaries = Binaries.from_environment(*([Path(testbin)] if testbin else []))
    print(f"starting the local environment in {workdir} ...", flush=True)
    cluster = connect_cluster(binaries, workdir / "kube")
    try:
        with provide_mysql(workdir / "mysql") as provided:
            server = provided.admin if isinstance(provided, LocalMySQLServer) else provided
            options = _write_mysql_options(workdir / "mysql-client.cnf", server)
            crds = asyncio.run(_install(cluster, arguments.crds))
            print(asyncio.run(_verify(cluster, server)))
            print(f"CRDs installed: {', '.join(crds) or 'none yet'}")
            print(f"export KUBECONFIG={cluster.kubeconfig}")
            print(f"export PATH={binaries.path('kubectl').parent}:$PATH    # the pinned kubectl and helm")
            print(f"mariadb --defaults-file={options}    # MySQL admin ({server.origin} server)")
            if not arguments.check:
                print("running; Ctrl-C stops everything", flush=True)
                _wait_for_interrupt()
    finally:
        if cluster.control_plane is not None:
            cluster.control_plane.stop()
    if arguments.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
