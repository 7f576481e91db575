"""The pod certificate signer at N requests: how long a PodCertificateRequest waits to be issued, and what
the operator holds per bound ServiceAccount.

``python -m bench --scenarios pod-certificates --n 1000`` (or ``python -m bench.pod_certificates --n 1000``)

A real API server (Node,RBAC and NodeRestriction, as the test suite's) and a local MySQL server; the
operator runs as a process (``python -m dbuser_operator --workload-signing-ca …``). N ServiceAccounts, each
bound by a DatabaseUser (Paused: the signer's cost alone, no account work) and with one pod bound to a Node;
then, as that node's kubelet does (``system:node:<name>``, a fresh P-256 key and an empty PKCS#10 request
each), 100 requests one at a time (each waited for: the latency without a queue), then N at once, created
``--create-concurrency`` at a time (the latency of a burst, and the operator's CPU per request). Latency is
from the moment the create call returned to the moment a watch saw the request Issued (client clocks, one
process). Memory is
the operator's RSS (median of quiet samples) before anything, after the N bound ServiceAccounts, and after
the N requests were issued: the slope per bound ServiceAccount. Benchmark code, not a product path.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from bench import processes
from bench.common import TARGET, TARGET_LABEL, MySQLAddress, api_client
from bench.memory import quiet_rss
from bench.scenarios import percentile
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import Binaries, LocalMySQLServer, connect_cluster, install_crds, provide_mysql
from dbuser_operator.envtest.pki import CertificateAuthority
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.errors import ApiError
from dbuser_operator.runtime.resources import NAMESPACES, Resource
from dbuser_operator.workload.identity import SIGNER_NAME
from dbuser_operator.workload.requests import POD_CERTIFICATE_REQUESTS, PODS, SERVICE_ACCOUNTS, decision

REPO = Path(__file__).resolve().parent.parent
NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
NAMESPACE = "pod-certificates"
NODE = "bench-node"
PACED = 100  # requests made one at a time, each waited for, before the burst of N


def say(message: str) -> None:
    print(f"[bench {datetime.now().strftime('%H:%M:%S')}] {message}", flush=True)


async def parallel(count: int, work: Callable[[int], Awaitable[None]], width: int) -> None:
    """``work(0 … count-1)``, ``width`` at a time."""
    indexes = iter(range(count))

    async def worker() -> None:
        for index in indexes:
            await work(index)

    await asyncio.gather(*(worker() for _ in range(width)))


async def retried(call: Callable[[], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
    """A node's request, again while the API server's node authorizer has not seen the new pod yet."""
    for _ in range(200):
        try:
            return await call()
        except ApiError as error:
            if error.status not in (403, 404, 500):
                raise
            await asyncio.sleep(0.05)
    return await call()


def stub_request() -> str:
    """What the kubelet sends: an empty PKCS#10 request signed with a fresh P-256 key."""
    key = ec.generate_private_key(ec.SECP256R1())
    request = x509.CertificateSigningRequestBuilder().subject_name(x509.Name([])).sign(key, hashes.SHA256())
    return base64.b64encode(request.public_bytes(serialization.Encoding.DER)).decode()


class IssuedWatch:
    """A watch on the namespace's requests: when each was first seen Issued (monotonic clock)."""

    def __init__(self, kube: KubeClient) -> None:
        self.kube = kube
        self.issued: dict[str, float] = {}
        self.denied: dict[str, str] = {}
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        listed = await self.kube.list(POD_CERTIFICATE_REQUESTS, NAMESPACE)
        self._task = asyncio.create_task(self._run(listed["metadata"]["resourceVersion"]))

    async def _run(self, version: str) -> None:
        while True:
            response = await self.kube.watch(
                POD_CERTIFICATE_REQUESTS, NAMESPACE, resource_version=version, timeout_seconds=600
            )
            async with response:
                async for line in response.content:
                    event = json.loads(line)
                    obj = event.get("object") or {}
                    version = obj.get("metadata", {}).get("resourceVersion", version)
                    outcome = decision(obj) if event.get("type") == "MODIFIED" else None
                    name = obj.get("metadata", {}).get("name", "")
                    if outcome == "Issued":
                        self.issued.setdefault(name, time.monotonic())
                    elif outcome is not None:
                        self.denied[name] = str(obj["status"]["conditions"][0].get("reason"))

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


async def rss(operator: processes.Implementation) -> float:
    """The operator's RSS in MiB once it is quiet (bench.memory's reading: the median of 5)."""
    return (await quiet_rss(operator, samples=5))["rss_mib"]


async def measure(
    admin: KubeClient,
    node: KubeClient,
    node_uid: str,
    operator: processes.Implementation,
    *,
    n: int,
    width: int,
) -> dict[str, Any]:
    """The scenario at ``n``: bound ServiceAccounts, pods, then requests; latencies and memory."""
    rss_idle = await rss(operator)

    async def bind(index: int) -> None:
        name = f"sa-{index}"
        account = await admin.create(SERVICE_ACCOUNTS, {"metadata": {"name": name}}, NAMESPACE)
        accounts[index] = account["metadata"]["uid"]
        user = {
            "apiVersion": DATABASE_USERS.api_version,
            "kind": "DatabaseUser",
            "metadata": {"name": f"db-{index}", "labels": {TARGET_LABEL: TARGET}},
            "spec": {
                "authentication": {"workload": {"serviceAccountName": name}},
                "managementPolicy": "Paused",
            },
        }
        await admin.create(DATABASE_USERS, user, NAMESPACE)
        volume = {
            "podCertificate": {
                "signerName": SIGNER_NAME,
                "keyType": "ECDSAP256",
                "credentialBundlePath": "c.pem",
            }
        }
        pod = {
            "metadata": {"name": f"pod-{index}"},
            "spec": {
                "nodeName": NODE,
                "serviceAccountName": name,
                "containers": [{"name": "app", "image": "registry.invalid/app:1"}],
                "volumes": [{"name": "mysql-client", "projected": {"sources": [volume]}}],
            },
        }
        pods[index] = (await admin.create(PODS, pod, NAMESPACE))["metadata"]["uid"]

    accounts: dict[int, str] = {}
    pods: dict[int, str] = {}
    started = time.monotonic()
    await parallel(n, bind, width)
    say(f"{n} bound ServiceAccounts with a pod each in {time.monotonic() - started:.1f} s")
    rss_bound = await rss(operator)

    watch = IssuedWatch(admin)
    await watch.start()
    created: dict[str, float] = {}

    async def request(index: int) -> None:
        body = {
            "metadata": {
                "generateName": "req-",
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "Pod", "name": f"pod-{index}", "uid": pods[index]}
                ],
            },
            "spec": {
                "signerName": SIGNER_NAME,
                "podName": f"pod-{index}",
                "podUID": pods[index],
                "serviceAccountName": f"sa-{index}",
                "serviceAccountUID": accounts[index],
                "nodeName": NODE,
                "nodeUID": node_uid,
                "maxExpirationSeconds": 86400,
                "stubPKCS10Request": stub_request(),
            },
        }
        made = await retried(lambda: node.create(POD_CERTIFICATE_REQUESTS, body, NAMESPACE))
        created[made["metadata"]["name"]] = time.monotonic()

    paced = min(PACED, n)  # one at a time first: the latency without a queue (a second request per pod)
    for index in range(paced):
        await request(index)
    while len(watch.issued) + len(watch.denied) < paced:  # noqa: ASYNC110 - a poll of the watch's tally
        await asyncio.sleep(0.01)
    alone = [watch.issued[name] - at for name, at in created.items() if name in watch.issued]
    created.clear()
    watch.issued.clear()
    cpu_before = operator.sample().cpu_seconds
    started = time.monotonic()
    await parallel(n, request, width)
    creating = time.monotonic() - started
    while len(watch.issued) + len(watch.denied) < n and time.monotonic() - started < 600:  # noqa: ASYNC110
        await asyncio.sleep(0.1)  # a poll of the watch's tally: bench code
    total = time.monotonic() - started
    cpu = operator.sample().cpu_seconds - cpu_before
    await watch.stop()
    latencies = [watch.issued[name] - at for name, at in created.items() if name in watch.issued]
    rss_issued = await rss(operator)
    return {
        "n": n,
        "issued": len(latencies),
        "denied": dict(sorted(watch.denied.items())[:5]),
        "create_seconds": round(creating, 2),
        "all_issued_seconds": round(total, 2),
        "latency_p50_ms": round(percentile(latencies, 0.5) * 1000, 1),
        "latency_p99_ms": round(percentile(latencies, 0.99) * 1000, 1),
        "latency_max_ms": round(max(latencies, default=0.0) * 1000, 1),
        "one_at_a_time": len(alone),
        "alone_p50_ms": round(percentile(alone, 0.5) * 1000, 1),
        "alone_p99_ms": round(percentile(alone, 0.99) * 1000, 1),
        "operator_cpu_ms_per_request": round(cpu * 1000 / n, 2),
        "rss_idle_mib": round(rss_idle, 1),
        "rss_bound_mib": round(rss_bound, 1),
        "rss_issued_mib": round(rss_issued, 1),
        "kib_per_bound_service_account": round((rss_bound - rss_idle) * 1024 / n, 2),
        "kib_per_bound_service_account_with_request": round((rss_issued - rss_idle) * 1024 / n, 2),
    }


async def run(
    kubeconfig: Path, node_kubeconfig: Path, mysql: MySQLAddress, workdir: Path, *, n: int, width: int
) -> dict[str, Any]:
    async with await api_client(kubeconfig) as api, await api_client(node_kubeconfig) as node_api:
        admin, node = KubeClient(api), KubeClient(node_api)
        await install_crds(api, REPO / "crds")
        await admin.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
        node_obj = await admin.create(NODES, {"metadata": {"name": NODE}})
        ca_dir = CertificateAuthority("bench-workload-ca").write_tls(workdir / "workload-ca")
        operator = processes.operator(
            workdir, kubeconfig, mysql, NAMESPACE, concurrency=None, resync_period=300.0, log_name="operator"
        )
        operator.argv.append(f"--workload-signing-ca={ca_dir}")
        await operator.start()
        try:
            await operator.wait_ready()
            return await measure(admin, node, node_obj["metadata"]["uid"], operator, n=n, width=width)
        finally:
            await operator.stop()


def main(argv: Sequence[str] | None = None) -> int:
    arguments = argparse.ArgumentParser(prog="python -m bench.pod_certificates", description=__doc__)
    arguments.add_argument("--n", type=int, default=1000, help="requests (and bound ServiceAccounts): 1000")
    arguments.add_argument("--create-concurrency", type=int, default=32, help="parallel creates (32)")
    arguments.add_argument("--out", type=Path, default=REPO / "bench" / "results", help="where results go")
    parsed = arguments.parse_args(argv)
    return run_scenario(parsed.n, parsed.create_concurrency, parsed.out)


def run_scenario(n: int, width: int, out: Path) -> int:
    """Start the servers, run the scenario, print and write ``pod-certificates.json`` to ``out``."""
    workdir = Path(tempfile.mkdtemp(prefix="dbuser-operator-bench-pcr-"))
    say(f"state and logs in {workdir}")
    testbin = (
        os.environ.get("DBUSER_OPERATOR_TESTBIN")
        or subprocess.run(  # noqa: S603 - our own script
            [str(REPO / "hack" / "testbin.sh"), "--dir"], capture_output=True, text=True, check=True
        ).stdout.strip()
    )
    binaries = Binaries.from_environment(Path(testbin))
    cluster = connect_cluster(binaries, workdir / "kube", audit=False)
    try:
        assert cluster.control_plane is not None, "the node's certificate comes from the local control plane"
        node_kubeconfig = cluster.control_plane.issue_kubeconfig(
            f"system:node:{NODE}", ["system:nodes"], workdir / "node.kubeconfig"
        )
        with provide_mysql(workdir / "mysql", general_log=False) as provided:
            server = provided.admin if isinstance(provided, LocalMySQLServer) else provided
            mysql = MySQLAddress(server.host, server.port, server.user, server.password)
            result = asyncio.run(run(cluster.kubeconfig, node_kubeconfig, mysql, workdir, n=n, width=width))
    finally:
        if cluster.control_plane is not None:
            cluster.control_plane.stop()
    from bench.cli import git_state, machine  # noqa: PLC0415 - the shared report fields

    result = {
        "scenario": "pod-certificates",
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "git": git_state(),
        "machine": machine(),
        **result,
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "pod-certificates.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0 if result["issued"] == n else 1


if __name__ == "__main__":
    raise SystemExit(main())
