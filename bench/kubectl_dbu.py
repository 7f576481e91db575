"""How long a ``kubectl dbu`` call takes as a whole process: ``--help``, and ``status`` of a namespace with
one DatabaseUser against a local API server (started here from the test binaries, or ``KUBECONFIG``'s);
and, for the floor, the real ``kubectl get databaseusers`` of that namespace (a Go binary: no start-up).

    .venv/bin/python -m bench.kubectl_dbu [--runs 15] [--python PATH]

``--python``: the interpreter whose ``dbuser_operator`` is measured (another checkout's venv, for a before
and after). Prints min, median and max wall and CPU seconds (user + system) of each command. Compiled
bytecode goes to a temporary ``PYTHONPYCACHEPREFIX`` (written by the run not counted), as an installed
package has it, whatever ``PYTHONDONTWRITEBYTECODE`` says."""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dbuser_operator.envtest import Binaries, connect_cluster, install_crds
from dbuser_operator.kubectl_dbu.names import DATABASE_USERS
from dbuser_operator.runtime.client import KubeClient, api_client
from dbuser_operator.runtime.resources import NAMESPACES

REPO = Path(__file__).resolve().parent.parent
NAMESPACE = "bench-kdbu"


def seconds(command: list[str], env: dict[str, str], runs: int) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of ``runs`` runs of ``command`` (after one not counted); fails if one fails."""
    walls, cpus = [], []
    for run in range(runs + 1):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(command, env=env, check=True, capture_output=True, timeout=120)  # noqa: S603
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if run:
            walls.append(wall)
            cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return walls, cpus


def figures(values: list[float]) -> str:
    """min, median, max."""
    return f"{min(values):.3f} {statistics.median(values):.3f} {max(values):.3f}"


async def prepare(kubeconfig: Path) -> None:
    """The CRDs, the namespace and one DatabaseUser."""
    from kubernetes_asyncio import client, config  # noqa: PLC0415

    configuration = client.Configuration()
    await config.load_kube_config(str(kubeconfig), client_configuration=configuration, persist_config=False)
    async with api_client(configuration) as api:
        await install_crds(api, REPO / "crds")
        kube = KubeClient(api)
        await kube.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
        user = {
            "apiVersion": DATABASE_USERS.api_version,
            "kind": DATABASE_USERS.kind,
            "metadata": {"name": "app"},
            "spec": {"password": {"name": "app-pw", "key": "password"}},
        }
        await kube.create(DATABASE_USERS, user, NAMESPACE)


def main() -> None:
    """Start the API server, prepare it, time the commands."""
    arguments = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    arguments.add_argument("--runs", type=int, default=15)
    arguments.add_argument("--python", default=sys.executable)
    args = arguments.parse_args()
    testbin = (
        os.environ.get("DBUSER_OPERATOR_TESTBIN")
        or subprocess.run(  # noqa: S603 - the project's own script
            [str(REPO / "hack" / "testbin.sh"), "--dir"], capture_output=True, text=True, check=True
        ).stdout.strip()
    )
    with tempfile.TemporaryDirectory(prefix="bench-kdbu-") as workdir:
        binaries = Binaries.from_environment(Path(testbin))
        cluster = connect_cluster(binaries, Path(workdir), audit=False)
        try:
            asyncio.run(prepare(cluster.kubeconfig))
            env = {
                **os.environ,
                "KUBECONFIG": str(cluster.kubeconfig),
                "PYTHONPYCACHEPREFIX": f"{workdir}/pyc",
            }
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            print(f"{'seconds (min median max)':<24} {'wall':<20} cpu", flush=True)
            plugin = [args.python, "-m", "dbuser_operator.kubectl_dbu"]
            for label, extra in (
                ("--help", ["--help"]),
                ("status -n NS (one user)", ["status", "-n", NAMESPACE]),
            ):
                walls, cpus = seconds([*plugin, *extra], env, args.runs)
                print(f"{label:<24} {figures(walls):<20} {figures(cpus)}  ({args.runs} runs)", flush=True)
            kubectl = [str(binaries.path("kubectl")), "get", "databaseusers", "-n", NAMESPACE]
            walls, cpus = seconds(kubectl, env, args.runs)
            print(f"{'kubectl get (the floor)':<24} {figures(walls):<20} {figures(cpus)}  ({args.runs} runs)")
        finally:
            if cluster.control_plane is not None:
                cluster.control_plane.stop()


if __name__ == "__main__":
    main()
