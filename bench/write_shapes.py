"""The API server's CPU per new user for each shape of the same two writes: the floor's and the operator's.

``python -m bench.write_shapes [--n 500] [--rounds 12]`` (``DBUSER_OPERATOR_TESTBIN`` set) starts a local
API server (no audit log, as the convergence bench), installs the CRDs and, per round and shape, creates
``--n`` DatabaseUsers in a fresh namespace (not measured), then sends each one the two writes a new user
costs, ``--concurrency`` at a time: the finalizer (a JSON Patch) and the Ready status (a merge patch of the
``/status`` subresource), with two watches of the namespace's DatabaseUsers open, as the operator's
informer and the harness's Ready watch are. It measures kube-apiserver's and etcd's CPU (``/proc``) over
the writes and the second after them (the objects stay: a local API server has no namespace controller).
The shapes differ in one thing at a time:

- ``floor``: what ``bench.floor`` sends (a bare ``add``; a status of one condition).
- ``guard``: the floor's writes conditional on the ``resourceVersion`` read, as the operator's are (a
  ``test`` operation first; ``metadata.resourceVersion`` in the merge patch).
- ``status``: the floor's writes with the operator's status (its two conditions, user, host, hosts, the
  applied Secret, the operator version) and finalizer name.
- ``manager``: the floor's writes with the operator's ``fieldManager``.
- ``operator``: all three, as the operator sends them.
- ``no-cel``: the floor's writes to a copy of the CRD without its CEL rules; ``no-cel-root``, ``-spec``,
  ``-privileges`` and ``-other`` without some of them (:data:`CEL_LEFT_OUT`).

Shapes take turns within a round, in an order that reverses every round; it prints the median µs of API
server (and etcd) CPU per user of each shape, and its ratio to the floor's over each pair of rounds (the
API server's cost per write grows as the objects pile up: the pairs cancel that drift), their median.
Benchmark code, not a product path: it answers which part of the operator's writes the API server pays
for (bench/README.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from bench.common import cpu_seconds, database_user, list_and_watch, ready_status, server_pids
from bench.fleet import parallel
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import Binaries, connect_cluster, install_crds
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.resources import NAMESPACES, Resource

REPO = Path(__file__).resolve().parent.parent
CRD_FILE = "mysql.dbuser-operator.dev_databaseusers.yaml"
CEL_LEFT_OUT: dict[str, Callable[[tuple[str, ...]], bool]] = {
    "no-cel": lambda path: True,
    "no-cel-root": lambda path: path == (),
    "no-cel-spec": lambda path: path == ("spec",),
    "no-cel-privileges": lambda path: path[:2] == ("spec", "privileges"),
    "no-cel-other": lambda path: len(path) > 1 and path[:2] != ("spec", "privileges"),
}
"""Shapes that write the floor's way to a copy of the DatabaseUser CRD in a group of its own, some of its CEL
rules (``x-kubernetes-validations``) left out: those at the schema paths (property names from the root) the
predicate holds for. What those rules cost every write shows."""
SHAPES = ("floor", "guard", "status", "manager", "operator", *CEL_LEFT_OUT)
FLOOR_FINALIZER = "bench.dbuser-operator.dev/floor"
OPERATOR_FINALIZER = "mysql.dbuser-operator.dev/account-default"
OPERATOR_MANAGER = "dbuser-operator"


def operator_status(obj: dict[str, Any]) -> dict[str, Any]:
    """The status the operator writes for a new user of the benchmark's shape (read from a live one)."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    generation = obj["metadata"].get("generation")
    user = obj["spec"]["user"]

    def condition(kind: str, status: str, reason: str, message: str) -> dict[str, Any]:
        return {
            "lastTransitionTime": now,
            "message": message,
            "observedGeneration": generation,
            "reason": reason,
            "status": status,
            "type": kind,
        }

    return {
        "appliedSecret": {
            "name": obj["spec"]["password"]["name"],
            "resourceVersion": "227",
            "uid": "f724a635-ebb6-46d2-9f90-76f7352b2992",
        },
        "conditions": [
            condition("Progressing", "False", "Settled", "no work pending"),
            condition("Ready", "True", "AccountReady", f"account '{user}'@'%' matches the spec"),
        ],
        "host": "%",
        "hosts": ["%"],
        "observedGeneration": generation,
        "operatorVersion": "0.1.0.dev0",
        "user": user,
    }


def resource_of(shape: str) -> Resource:
    """The resource ``shape`` writes to."""
    if shape in CEL_LEFT_OUT:
        return Resource(f"{shape}.bench.dbuser-operator.dev", "v1alpha1", "databaseusers", "DatabaseUser")
    return DATABASE_USERS


def cel_copies(workdir: Path, shapes: Iterable[str]) -> list[Path]:
    """The DatabaseUser CRD with some CEL rules left out, one copy per shape of :data:`CEL_LEFT_OUT` in
    ``shapes`` (files in ``workdir``)."""
    paths = []
    for shape in shapes:
        if shape not in CEL_LEFT_OUT:
            continue
        left_out, resource = CEL_LEFT_OUT[shape], resource_of(shape)
        crd = yaml.safe_load((REPO / "crds" / CRD_FILE).read_text())
        for version in crd["spec"]["versions"]:
            _strip(version["schema"]["openAPIV3Schema"], (), left_out)
        crd["spec"]["group"] = resource.group
        crd["metadata"]["name"] = f"{resource.plural}.{resource.group}"
        path = workdir / f"{shape}-crd.yaml"
        path.write_text(yaml.safe_dump(crd))
        paths.append(path)
    return paths


def _strip(
    schema: dict[str, Any], path: tuple[str, ...], left_out: Callable[[tuple[str, ...]], bool]
) -> None:
    """Leave out the CEL rules of ``schema`` (at ``path``) and below where ``left_out`` says so."""
    if left_out(path):
        schema.pop("x-kubernetes-validations", None)
    for name, child in (schema.get("properties") or {}).items():
        _strip(child, (*path, name), left_out)
    if isinstance(schema.get("items"), dict):
        _strip(schema["items"], path, left_out)  # a list's items: the list's path


class Shape:
    """The two writes of one shape."""

    def __init__(self, kube: KubeClient, namespace: str, name: str) -> None:
        self.kube, self.namespace = kube, namespace
        self.resource = resource_of(name)
        self.guarded = name in {"guard", "operator"}
        self.operator_status = name in {"status", "operator"}
        self.manager = OPERATOR_MANAGER if name in {"manager", "operator"} else None
        self.written: dict[str, Any] = {}  # the last object as the status write returned it

    async def new_user(self, obj: dict[str, Any]) -> None:
        obj = await self.finalizer(obj)
        self.written = await self.status(obj)

    async def finalizer(self, obj: dict[str, Any]) -> dict[str, Any]:
        finalizer = OPERATOR_FINALIZER if self.operator_status else FLOOR_FINALIZER
        operations = [{"op": "add", "path": "/metadata/finalizers", "value": [finalizer]}]
        if self.guarded:
            version = obj["metadata"]["resourceVersion"]
            operations.insert(0, {"op": "test", "path": "/metadata/resourceVersion", "value": version})
        return await self._patch(obj, operations, PatchType.JSON)

    async def status(self, obj: dict[str, Any]) -> dict[str, Any]:
        if self.operator_status:
            status = operator_status(obj)
        else:
            user = obj["spec"]["user"]
            status = ready_status(obj["metadata"].get("generation"), f"account '{user}'@'%' is ready")
        patch: dict[str, Any] = {"status": status}
        if self.guarded:
            patch["metadata"] = {"resourceVersion": obj["metadata"]["resourceVersion"]}
        return await self._patch(obj, patch, PatchType.MERGE, subresource="status")

    async def _patch(
        self, obj: dict[str, Any], body: Any, kind: PatchType, subresource: str | None = None
    ) -> dict[str, Any]:
        name = obj["metadata"]["name"]
        return await self.kube.patch(
            self.resource,
            name,
            body,
            kind,
            namespace=self.namespace,
            subresource=subresource,
            field_manager=self.manager,
        )


async def one_run(
    kube: KubeClient,
    pids: dict[str, int],
    shape: str,
    n: int,
    *,
    concurrency: int,
    run: int,
    creator: str | None,
) -> dict[str, float]:
    """API server and etcd CPU µs per user for ``n`` new users written in ``shape``, and the size of the last
    object written (JSON bytes, of its managed fields, their entries)."""
    namespace = f"shapes-{run}-{shape}"
    await kube.create(NAMESPACES, {"metadata": {"name": namespace}})
    resource = resource_of(shape)
    objects = [database_user(f"u{index}", f"u{index}", f"s{index}") for index in range(n)]
    for obj in objects:
        obj["apiVersion"] = resource.api_version
    created: list[dict[str, Any]] = []

    async def create(obj: dict[str, Any]) -> None:
        query = [("fieldManager", creator)] if creator else []
        path = resource.path(namespace)
        created.append(await kube.request("POST", path, query=query, body=obj))

    await parallel(len(objects), lambda index: create(objects[index]), 32)
    watches = [
        asyncio.create_task(list_and_watch(kube, resource, namespace, lambda kind, obj: None))
        for _ in range(2)
    ]
    try:
        await asyncio.sleep(2.0)  # the watches listed; the creates' echoes sent
        before = cpu_seconds(pids)
        writer = Shape(kube, namespace, shape)
        await parallel(len(created), lambda index: writer.new_user(created[index]), concurrency)
        await asyncio.sleep(1.0)  # the last writes' watch events sent
        after = cpu_seconds(pids)
    finally:
        for watch in watches:
            watch.cancel()
        await asyncio.gather(*watches, return_exceptions=True)
    found = {name: (after[name] - before[name]) / n * 1e6 for name in after}
    metadata = writer.written["metadata"]
    found["object_bytes"] = len(json.dumps(writer.written, separators=(",", ":")))
    found["managed_fields_bytes"] = len(json.dumps(metadata.get("managedFields"), separators=(",", ":")))
    found["managers"] = len(metadata.get("managedFields") or [])
    return found


async def measure(arguments: argparse.Namespace, workdir: Path) -> dict[str, list[dict[str, float]]]:
    """Every round of ``arguments.shapes``, by shape."""
    n, rounds, concurrency, creator = arguments.n, arguments.rounds, arguments.concurrency, arguments.creator
    shapes: tuple[str, ...] = arguments.shapes
    testbin = os.environ.get("DBUSER_OPERATOR_TESTBIN")
    cluster = connect_cluster(
        Binaries.from_environment(*([Path(testbin)] if testbin else [])), workdir, audit=False
    )
    try:
        pids = {name: pid for name, pid in server_pids(workdir).items() if name in {"kube-apiserver", "etcd"}}
        async with cluster.api_client() as api:
            await install_crds(api, REPO / "crds", *cel_copies(workdir, shapes))
            kube = KubeClient(api)
            found: dict[str, list[dict[str, float]]] = {shape: [] for shape in shapes}
            for turn in range(rounds):
                order = shapes if turn % 2 == 0 else tuple(reversed(shapes))
                for shape in order:
                    found[shape].append(
                        await one_run(
                            kube, pids, shape, n, concurrency=concurrency, run=turn, creator=creator
                        )
                    )
                    print(f"round {turn + 1} {shape}: {json.dumps(found[shape][-1])}", flush=True)
            return found
    finally:
        if cluster.control_plane is not None:
            cluster.control_plane.stop()


def paired_ratios(found: dict[str, list[dict[str, float]]], shape: str) -> list[float]:
    """``shape``'s API server CPU ÷ the floor's, per pair of rounds (one in each order: a drift of the API
    server's cost over the run weighs on both alike)."""
    runs, floor = found[shape], found["floor"]
    return [
        (runs[i]["kube-apiserver"] + runs[i + 1]["kube-apiserver"])
        / (floor[i]["kube-apiserver"] + floor[i + 1]["kube-apiserver"])
        for i in range(0, len(runs) - 1, 2)
    ]


def _shapes(text: str) -> tuple[str, ...]:
    chosen = tuple(part.strip() for part in text.split(",") if part.strip())
    if "floor" not in chosen or not set(chosen) <= set(SHAPES):
        raise argparse.ArgumentTypeError(f"choose from {','.join(SHAPES)}, floor among them")
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.write_shapes", description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=500, help="new users per shape and round (500)")
    parser.add_argument("--rounds", type=int, default=12, help="rounds (12; even: pairs of rounds)")
    parser.add_argument(
        "--concurrency", type=int, default=16, help="users written at once (16: the operator's reconciles)"
    )
    parser.add_argument(
        "--shapes",
        type=_shapes,
        default=SHAPES,
        help=f"comma-separated, floor among them (default: all of {','.join(SHAPES)})",
    )
    parser.add_argument(
        "--creator",
        metavar="FIELD_MANAGER",
        help="the creates' fieldManager (default: none, the client's own, which bench.floor shares; "
        "kubectl create sends kubectl-create)",
    )
    parser.add_argument("--out", type=Path, help="also write the rounds and medians here (JSON)")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-shapes-") as workdir:
        found = asyncio.run(measure(arguments, Path(workdir)))
    medians = {
        shape: {name: statistics.median(run[name] for run in runs) for name in runs[0]}
        for shape, runs in found.items()
    }
    ratios = {shape: paired_ratios(found, shape) for shape in found}
    print(
        f"API server CPU µs per new user (etcd's), median of {arguments.rounds} rounds of {arguments.n}; "
        "÷ floor: the median over pairs of rounds (one each way) of the pair's mean ÷ the floor's:"
    )
    for shape, median in medians.items():
        ratio = statistics.median(ratios[shape])
        print(
            f"  {shape:9} {median['kube-apiserver']:8.0f} ({median['etcd']:6.0f})  ÷ floor {ratio:.3f}  "
            f"object {median['object_bytes']:.0f} B, managed fields {median['managed_fields_bytes']:.0f} B "
            f"in {median['managers']:.0f} entries"
        )
    if arguments.out is not None:
        arguments.out.write_text(
            json.dumps(
                {
                    "n": arguments.n,
                    "creator": arguments.creator,
                    "rounds": found,
                    "medians": medians,
                    "ratios_to_floor": ratios,
                },
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
