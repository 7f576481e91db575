"""Filling the control plane of :mod:`bench.list_growth` with a converged fleet's objects.

``seed`` creates users through the API server (as the bench seeds its fleet, plus the status a settled
operator writes and the connection Secrets it makes); ``inject`` writes further users straight into etcd as
copies of those: the stored bytes of a seeded user of the same server and shape with its names, uids and
passwords swapped for strings of the same length (so the Secrets' protobuf stays valid). Creating 100 000
users through the API server takes about an hour on the shared 2-core machine; the copies take two
minutes. Restart the API server after an injection: its watch cache is filled from etcd again.
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from bench.common import TARGET, TARGET_LABEL, MySQLAddress, secret
from bench.fleet import Fleet, create, parallel
from bench.json_parse import REPO, status
from dbuser_operator.api.v1alpha1.meta import GROUP
from dbuser_operator.controllers.kit.resources import (
    CLUSTER_MYSQL_SERVERS,
    DATABASE_ROLES,
    DATABASE_USERS,
    MYSQL_SERVERS,
)
from dbuser_operator.envtest import install_crds
from dbuser_operator.envtest.kube import KubeCluster
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.errors import Conflict
from dbuser_operator.runtime.resources import NAMESPACES, SECRETS

RUN = "f82fe0"  # the fleet's run tag (names only)
SERVERS = 10
FINALIZER = f"{GROUP}/account-{TARGET}"


def fleet(n: int) -> Fleet:
    """The bench's layout of ``n`` users over ten servers (none started: only names are taken)."""
    servers = tuple(MySQLAddress("127.0.0.1", 3306 + k, "root", "", f"s{k}") for k in range(SERVERS))
    return Fleet(run=RUN, servers=servers, size=n)


# --- seed --------------------------------------------------------------------------------------------------


def connection_secret(layout: Fleet, index: int, owner_uid: str) -> dict[str, Any]:
    """The connection Secret the operator writes for user ``index`` (its keys, labels, annotations)."""
    name = layout.name(index)
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": f"conn-{name}",
            "labels": {"app.kubernetes.io/managed-by": "dbuser-operator"},
            "annotations": {f"{GROUP}/credential-version": "1"},
            "ownerReferences": [
                {
                    "apiVersion": DATABASE_USERS.api_version,
                    "kind": "DatabaseUser",
                    "name": name,
                    "uid": owner_uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "stringData": {
            "host": f"mysql-{layout.server_of(index)}.example",
            "port": "3306",
            "username": layout.user(index),
            "password": layout.password(index),
            "database": "bench",
            "uri": f"mysql://{layout.user(index)}:{layout.password(index)}@mysql.example:3306/bench",
        },
    }


async def seed(kube: KubeClient, start: int, n: int, width: int) -> None:
    """Users ``start`` … ``n - 1`` (and, from 0, the namespaces, server resources, Secrets and roles)."""
    layout = fleet(n)
    if start == 0:
        for namespace in [*layout.all_namespaces(), layout.admin_namespace]:
            with contextlib.suppress(Conflict):
                await kube.create(NAMESPACES, {"metadata": {"name": namespace}})
        for server in range(SERVERS):
            namespace = layout.server_namespace(server)
            with contextlib.suppress(Conflict):
                await kube.create(SECRETS, layout.admin_secret(server), namespace)
            resource = CLUSTER_MYSQL_SERVERS if layout.is_cluster(server) else MYSQL_SERVERS
            where = None if layout.is_cluster(server) else namespace
            obj = layout.server_resource(server)
            obj["metadata"].setdefault("labels", {})[TARGET_LABEL] = TARGET
            with contextlib.suppress(Conflict):
                await kube.create(resource, obj, where)
    for namespace, server in fleet(n).roles():
        with contextlib.suppress(Conflict):
            await kube.create(DATABASE_ROLES, layout.role(namespace, server), namespace)
    started, done = time.monotonic(), 0

    async def one(offset: int) -> None:
        nonlocal done
        index = start + offset
        namespace, name = layout.namespace_of(index), layout.name(index)
        await create(kube, SECRETS, secret(f"pw-{name}", layout.password(index)), namespace)
        body = layout.database_user(index)
        body["metadata"]["finalizers"] = [FINALIZER]
        obj = await kube.create(DATABASE_USERS, body, namespace)
        await kube.patch(
            DATABASE_USERS,
            name,
            {"status": status(obj, index)},
            PatchType.MERGE,
            namespace=namespace,
            subresource="status",
            field_manager="dbuser-operator",
        )
        if layout.has_connection_secret(index):
            conn = connection_secret(layout, index, obj["metadata"]["uid"])
            await create(kube, SECRETS, conn, namespace)
        done += 1
        if done % 5000 == 0:
            print(f"{start + done} users ({time.monotonic() - started:.0f} s)", flush=True)

    await parallel(n - start, one, width)


async def seed_main(workdir: Path, start: int, n: int, width: int) -> None:
    async with KubeCluster(kubeconfig=workdir / "admin.kubeconfig").api_client() as api:
        await install_crds(api, REPO / "crds")
        await seed(KubeClient(api, timeout=120), start, n, width)


# --- inject ------------------------------------------------------------------------------------------------

TXN_OPS = 128  # etcd's default --max-txn-ops
USERS_PREFIX = f"/registry/{DATABASE_USERS.group}/{DATABASE_USERS.plural}"


def etcd_url(pids: dict[str, int]) -> str:
    """The etcd URL the API server was started with."""
    argv = Path(f"/proc/{pids['apiserver']}/cmdline").read_bytes().split(b"\0")
    return next(a.decode().split("=", 1)[1] for a in argv if a.startswith(b"--etcd-servers="))


def etcd_call(url: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(url + path, data=json.dumps(body).encode())  # noqa: S310 - loopback
    with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310 - loopback
        answer: dict[str, Any] = json.load(response)
        return answer


def etcd_get(url: str, key: str) -> bytes:
    found = etcd_call(url, "/v3/kv/range", {"key": base64.b64encode(key.encode()).decode()})
    return base64.b64decode(found["kvs"][0]["value"])


class Templates:
    """The stored bytes of objects the API server made (users 0 …), rewritten for other users: every
    string that differs between two users of one server and shape has the same length in both (names,
    namespaces, uids, user names; the passwords made so), so the Secrets' protobuf stays valid."""

    def __init__(self, url: str, layout: Fleet, template_range: int) -> None:
        self.url, self.layout = url, layout
        self.users: dict[tuple[int, str], tuple[int, bytes]] = {}
        self.secrets: dict[str, tuple[int, bytes]] = {}
        for index in range(template_range):
            shape = (layout.server_of(index), self.shape(index))
            if shape in self.users:
                continue
            namespace, name = layout.namespace_of(index), layout.name(index)
            self.users[shape] = (index, etcd_get(url, f"{USERS_PREFIX}/{namespace}/{name}"))
            if "password" not in self.secrets:
                self.secrets["password"] = (index, etcd_get(url, f"/registry/secrets/{namespace}/pw-{name}"))
            if shape[1] == "conn" and "conn" not in self.secrets:
                self.secrets["conn"] = (index, etcd_get(url, f"/registry/secrets/{namespace}/conn-{name}"))

    def shape(self, index: int) -> str:
        if self.layout.has_connection_secret(index):
            return "conn"
        return "role" if self.layout.has_role(index) else "plain"

    def objects(self, index: int) -> list[tuple[str, bytes]]:
        """(key, stored bytes) of user ``index``'s DatabaseUser and Secrets."""
        layout = self.layout
        namespace, name = layout.namespace_of(index), layout.name(index)
        uid = str(uuid.uuid4()).encode()
        template, user = self.users[(layout.server_of(index), self.shape(index))]
        found = [(f"{USERS_PREFIX}/{namespace}/{name}", self.rewrite(user, template, index, uid))]
        template, stored = self.secrets["password"]
        found.append(
            (f"/registry/secrets/{namespace}/pw-{name}", self.rewrite(stored, template, index, None))
        )
        if self.shape(index) == "conn":
            template, stored = self.secrets["conn"]
            conn = self.rewrite(stored, template, index, None, owner=uid)
            found.append((f"/registry/secrets/{namespace}/conn-{name}", conn))
        return found

    def rewrite(
        self, stored: bytes, template: int, index: int, uid: bytes | None, owner: bytes = b""
    ) -> bytes:
        layout = self.layout
        pairs = [
            (layout.namespace_of(template), layout.namespace_of(index)),
            (layout.name(template), layout.name(index)),
            (layout.user(template), layout.user(index)),
            (f"mysql-{layout.server_of(template)}.", f"mysql-{layout.server_of(index)}."),
            (f"-{template:012d}", f"-{index:012d}"),
        ]
        for old, new in pairs:
            stored = stored.replace(old.encode(), new[: len(old)].encode())
        stored = _PASSWORD.sub(lambda m: _password(index, len(m[0])), stored)
        uids = re.findall(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", stored)
        for found in dict.fromkeys(uids):
            if found.startswith(b"6806bfd6-"):
                continue  # the status's appliedSecret uid (rewritten above)
            if owner and found != uids[0]:
                stored = stored.replace(found, owner)  # the connection Secret's owner: the new user
            else:
                stored = stored.replace(found, uid or str(uuid.uuid4()).encode())
        return stored


_PASSWORD = re.compile(rb"pw-" + RUN.encode() + rb"-[0-9]+-[0-9a-f]{16}")


def _password(index: int, length: int) -> bytes:
    """A password of ``length`` characters for user ``index`` (the protobuf's lengths stay)."""
    return (f"pw-{index:06d}-" + "x" * length)[:length].encode()


def inject(workdir: Path, start: int, n: int, template_range: int) -> None:
    """Users ``start`` … ``n - 1`` written to etcd directly, as copies of the API server's own."""
    pids = json.loads((workdir / "pids.json").read_text())
    url = etcd_url(pids)
    templates = Templates(url, fleet(n), template_range)
    started, batch = time.monotonic(), []
    for index in range(start, n):
        batch += templates.objects(index)
        if len(batch) >= TXN_OPS - 3 or index == n - 1:
            puts = [
                {
                    "requestPut": {
                        "key": base64.b64encode(k.encode()).decode(),
                        "value": base64.b64encode(v).decode(),
                    }
                }
                for k, v in batch
            ]
            etcd_call(url, "/v3/kv/txn", {"success": puts})
            batch = []
        if (index + 1) % 10000 == 0:
            print(f"{index + 1} users ({time.monotonic() - started:.0f} s)", flush=True)
