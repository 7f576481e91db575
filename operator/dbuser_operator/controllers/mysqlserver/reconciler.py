"""The MySQLServer and ClusterMySQLServer controller (one code, one controller per kind).

Each pass rebuilds the server's connection if its spec or Secrets changed, runs the health check and writes
status (Ready with a reason naming the cause, flavour, version, capabilities, accounts) only when it
changed; then it looks again after ``check_period`` seconds. A server's finalizer keeps it while
DatabaseUsers or DatabaseRoles name it (their accounts go under their deletion policies first); the release
annotation lets go at once, with a Warning Event, leaving whatever they made in MySQL.
"""

from __future__ import annotations

import contextlib
from typing import Any

import structlog
from prometheus_client import Gauge

from dbuser_operator.api.v1alpha1 import API_VERSION, GROUP, RELEASE_ANNOTATION, Condition
from dbuser_operator.api.v1alpha1.mysqlserver import MySQLServerStatus
from dbuser_operator.controllers.kit.errors import ConditionError
from dbuser_operator.controllers.kit.resources import (
    FIELD_MANAGER,
    SERVER_INDEX,
    describe_server,
)
from dbuser_operator.controllers.kit.scope import Scope
from dbuser_operator.controllers.servers.connection import ServerConfigError
from dbuser_operator.controllers.servers.health import Health, check
from dbuser_operator.controllers.servers.liveness import SERVER_UP
from dbuser_operator.controllers.servers.resolver import ServerResolver
from dbuser_operator.runtime.cache import thaw
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.conditions import set_condition
from dbuser_operator.runtime.controller import Result
from dbuser_operator.runtime.events import EventRecorder
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.metrics import REGISTRY
from dbuser_operator.runtime.objects import add_finalizer, remove_finalizer, update_status
from dbuser_operator.runtime.resources import ObjectKey, Resource

log = structlog.get_logger(__name__)

SERVER_FINALIZER_PREFIX = f"{GROUP}/server-"
WAIT_FOR_DEPENDENTS = 5.0  # seconds between two looks while a deleted server waits for its users

SERVER_POOL_SIZE = Gauge(
    "dbuser_operator_mysql_server_pool_size",
    "Most connections the operator opens to a server resource at once",
    ["server"],
    registry=REGISTRY,
)
SERVER_ACCOUNTS = Gauge(
    "dbuser_operator_mysql_server_accounts",
    "Accounts and roles the operator's bookkeeping records on a server resource",
    ["server"],
    registry=REGISTRY,
)


def server_finalizer(scope: Scope) -> str:
    """``mysql.dbuser-operator.dev/server-<target>``: this instance keeps the server for its resources."""
    return f"{SERVER_FINALIZER_PREFIX}{scope.target}"


class ServerReconciler:
    """Reconciles one kind of server resource: connection, health, status, finalizer."""

    def __init__(  # noqa: PLR0917 - what a server pass needs
        self,
        kube: KubeClient,
        resource: Resource,
        informer: Informer,
        resolver: ServerResolver,
        dependents: list[Informer],
        recorder: EventRecorder,
        scope: Scope,
        check_period: float,
    ) -> None:
        self.kube = kube
        self.resource = resource
        self.informer = informer
        self.resolver = resolver
        self.dependents = dependents  # the DatabaseUser, DatabaseRole and Database informers (SERVER_INDEX)
        self.recorder = recorder
        self.finalizer = server_finalizer(scope)
        self.check_period = check_period

    async def __call__(self, key: ObjectKey) -> Result:
        cached = self.informer.get(key)
        server = (
            f"{self.resource.kind}/{key.namespace}/{key.name}"
            if key.namespace
            else f"{self.resource.kind}/{key.name}"
        )
        if cached is None:
            await self._forget(server)
            return Result()
        obj = thaw(cached)
        if obj["metadata"].get("deletionTimestamp"):
            return await self._finalize(server, obj)
        obj = await add_finalizer(self.kube, self.resource, obj, self.finalizer, field_manager=FIELD_MANAGER)
        health = await self._check(server, obj)
        await self._write(obj, health)
        return Result(requeue_after=self.check_period)

    async def _check(self, server: str, obj: dict[str, Any]) -> Health:
        registry = self.resolver.registry
        try:
            server_resource = self.resolver.resource(server, obj)
        except ConditionError as error:
            return Health(False, "InvalidSpec", error.message)
        address = f"{server_resource.spec.host}:{server_resource.spec.port}"
        try:
            handle = await registry.refresh(server_resource)
        except ServerConfigError as error:
            health = Health(False, error.reason, f"{address}: {error.message}")
        else:
            health = await check(handle, address)
            SERVER_POOL_SIZE.labels(server).set(handle.db.settings.pool_size)
            if registry.idle(server):
                await handle.db.close()  # nobody else uses it: no connection held between checks
        SERVER_UP.labels(server).set(1 if health.ready else 0)
        if health.accounts is not None:
            SERVER_ACCOUNTS.labels(server).set(health.accounts)
        if not health.ready:
            log.warning(
                "server health check failed",
                server=str(server_resource),
                reason=health.reason,
                error=health.message,
            )
        return health

    async def _write(self, obj: dict[str, Any], health: Health) -> None:
        previous = obj.get("status") or {}
        try:
            status = MySQLServerStatus.model_validate(previous)
        except ValueError:
            status = MySQLServerStatus()
        generation = obj["metadata"].get("generation")
        conditions = [c.model_dump(by_alias=True, exclude_none=True, mode="json") for c in status.conditions]
        set_condition(
            conditions,
            "Ready",
            "True" if health.ready else "False",
            health.reason,
            health.message,
            generation,
        )
        status.conditions = [Condition.model_validate(condition) for condition in conditions]
        status.observed_generation = generation
        if health.info is not None:  # a failed check keeps what the last good one found
            status.flavour = health.flavour  # type: ignore[assignment]
            status.version = health.version
            status.capabilities = health.capabilities
            status.accounts = health.accounts
        new = {**previous, **status.model_dump(by_alias=True, exclude_none=True, mode="json")}
        await update_status(self.kube, self.resource, obj, new, field_manager=FIELD_MANAGER)

    def _dependents(self, server: str) -> tuple[int, int, int]:
        """How many DatabaseUsers, DatabaseRoles and Databases name the server (informers not given: 0)."""
        counts = [len(informer.store.by_index(SERVER_INDEX, server)) for informer in self.dependents]
        users, roles, dbs = [*counts, 0, 0, 0][:3]
        return users, roles, dbs

    async def _finalize(self, server: str, obj: dict[str, Any]) -> Result:
        if self.finalizer not in (obj["metadata"].get("finalizers") or []):
            return Result()
        users, roles, dbs = self._dependents(server)
        name = describe_server(server)
        released = (obj["metadata"].get("annotations") or {}).get(RELEASE_ANNOTATION) == "true"
        if users + roles + dbs and not released:
            message = (
                f"deletion waits for {users} DatabaseUser(s), {roles} DatabaseRole(s) and {dbs} Database(s) "
                "that use it; "
                f"annotate {RELEASE_ANNOTATION}=true to let go at once (their accounts stay in MySQL)"
            )
            await self._write(obj, Health(False, "Deleting", message))
            return Result(requeue_after=WAIT_FOR_DEPENDENTS)
        if released and users + roles + dbs:
            self.recorder.emit(
                _involved(obj, self.resource.kind),
                "Warning",
                "Released",
                f"released by the {RELEASE_ANNOTATION} annotation while {users} DatabaseUser(s), {roles} "
                f"DatabaseRole(s) and {dbs} Database(s) used {name}: what they made stays in MySQL",
            )
        await remove_finalizer(self.kube, self.resource, obj, self.finalizer, field_manager=FIELD_MANAGER)
        await self._forget(server)
        return Result()

    async def _forget(self, server: str) -> None:
        await self.resolver.registry.forget(server)
        self.resolver.forget(server)
        for gauge in (SERVER_UP, SERVER_POOL_SIZE, SERVER_ACCOUNTS):
            with contextlib.suppress(KeyError):  # never set
                gauge.remove(server)


def _involved(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    return {**obj, "apiVersion": API_VERSION, "kind": kind}
