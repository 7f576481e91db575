"""Periodic role drift check: the roles every DatabaseUser's account holds, in two queries.

A role granted or revoked by hand, or a default role changed by hand, is found here and the user is queued
for repair (the roles step then converges exactly). Only what the cache can tell is compared: a role whose
DatabaseRole is Ready counts as wanted; one whose DatabaseRole exists but is not Ready may be held or not.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pydantic
import structlog

from dbuser_operator.api.v1alpha1 import DatabaseUser
from dbuser_operator.api.v1alpha1.databaserole import DatabaseRole
from dbuser_operator.controllers.databaseuser.drift import check_periodically
from dbuser_operator.controllers.kit.resources import server_key
from dbuser_operator.controllers.servers.handle import ServerHandle
from dbuser_operator.mysql.accounts import roles
from dbuser_operator.mysql.errors import MySQLError
from dbuser_operator.mysql.session.server import ServerInfo
from dbuser_operator.runtime.conditions import is_true
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.resources import ObjectKey
from dbuser_operator.runtime.workqueue import RateLimitingQueue

log = structlog.get_logger(__name__)


class RoleDriftCheck:
    """Compares every user's roles with its spec and queues the ones that drifted."""

    def __init__(
        self,
        handles: Callable[[], Mapping[str, ServerHandle]],
        users: Informer,
        roles_informer: Informer,
        queue: RateLimitingQueue[ObjectKey],
        period: float,
    ) -> None:
        self.handles = handles  # the servers in use, by server key
        self.users = users
        self.roles = roles_informer
        self.queue = queue
        self.period = period

    async def run(self) -> None:
        """Check every ``period`` seconds until cancelled (never when the period is 0)."""
        await check_periodically(self.period, self.check, "role drift check")

    async def check(self) -> list[ObjectKey]:
        """One pass over every server in use: queue and return the users whose roles drifted."""
        drifted: list[ObjectKey] = []
        failed: MySQLError | None = None
        for server, handle in self.handles().items():
            try:
                drifted += await self._check_server(server, handle)
            except MySQLError as error:
                log.warning(
                    "role drift check of a server failed", server=handle.name or "default", error=str(error)
                )
                failed = error
        for key in drifted:
            log.info("roles drifted; repairing", namespace=key.namespace, name=key.name)
            self.queue.add(key)
        if failed is not None and len(self.handles()) == 1:
            raise failed  # one server, as before servers were resources: the caller logs it
        return drifted

    async def _check_server(self, key: str, handle: ServerHandle) -> list[ObjectKey]:
        server = await handle.server()
        live = await roles.every_grant(handle.db, server)
        holders = {name for name, _host in live}
        drifted = []
        for obj in self.users.store:
            if not _may_drift(obj, holders):  # first: cheaper than the server's key, and true of most
                continue
            if obj["metadata"].get("deletionTimestamp") or server_key(obj) != key:
                continue
            try:
                user = DatabaseUser.model_validate(obj)
                name = user.mysql_name()
            except (pydantic.ValidationError, ValueError):
                continue
            if user.spec.management_policy != "Manage":
                continue  # Observe and Paused: nothing is repaired
            for host in user.spec.account_hosts():
                held, defaults = live.get((name, host.lower()), (set(), set()))
                if self.drifted(user, held, defaults, server):
                    drifted.append(ObjectKey.of(obj))
                    break
        return drifted

    def drifted(
        self, user: DatabaseUser, held: set[roles.Role], defaults: set[roles.Role], info: ServerInfo
    ) -> bool:
        namespace = user.metadata.namespace or ""
        wanted: dict[str, roles.Role] = {}
        unsure: set[roles.Role] = set()
        server = _server_of(user) if user.spec.roles else ""  # (most users name no role)
        for name in user.spec.roles:
            obj = self.roles.get(ObjectKey(namespace, name))
            if obj is None or server_key(obj) != server:
                continue  # missing, or on another server: never granted, nothing to repair
            try:
                role = roles.role_of(DatabaseRole.model_validate(obj).mysql_name(), info)
            except (pydantic.ValidationError, ValueError, MySQLError):
                continue
            ready = is_true((obj.get("status") or {}).get("conditions"), "Ready")
            if ready and not obj["metadata"].get("deletionTimestamp"):
                wanted[name] = role
            else:
                unsure.add(role)
        if held - set(wanted.values()) - unsure or set(wanted.values()) - held:
            return True
        if info.flavour == "mariadb" and len(user.spec.default_roles) > 1:
            return False  # refused: nothing to repair
        if not all(name in wanted for name in user.spec.default_roles) or not (held or wanted):
            return False
        return {wanted[name] for name in user.spec.default_roles} != defaults


def _may_drift(obj: dict[str, Any], holders: set[str]) -> bool:
    """False for a user that names no role and whose name holds none on the server: nothing to compare, so
    the check skips its parse (most users, every period)."""
    spec = obj.get("spec") or {}
    return bool(spec.get("roles")) or (spec.get("user") or obj["metadata"].get("name")) in holders


def _server_of(user: DatabaseUser) -> str:
    """The key of the server ``user`` names (:func:`~.resources.server_key`)."""
    ref = user.spec.server_ref.model_dump(mode="json") if user.spec.server_ref else None
    return server_key({"metadata": {"namespace": user.metadata.namespace or ""}, "spec": {"serverRef": ref}})
