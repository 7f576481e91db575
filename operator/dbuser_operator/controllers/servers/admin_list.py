"""Every server resource's admin account and bookkeeping schema, resolved once and kept until what it is built
from changes: asked by every reservation check (:class:`~.admins.Reservations`), twice per reconcile.

The list is built from the server resources in the caches (their spec, parsed once per resourceVersion), the
Secrets they name (read again at each build: the admin account's name is in a Secret) and the registry's
handles. It is kept while nothing of that changed, as a stamp says: each server informer's store version
(any server resource added, changed or deleted), the registry's version (a handle built, replaced or
forgotten), and a count of the changes of the Secrets a server resource names (an event handler on the
Secret cache, called in the same step as the cache's change: no turn of the event loop sees the new Secret
with the old list). The stamp is taken before a build, so a change during the build makes the next check
build again: the list kept is never older than the objects at the stamp. A server resource whose handle
cannot be built (a Secret missing, an invalid spec) is tried again at every check, as without the list.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from dbuser_operator.controllers.kit.errors import ConditionError
from dbuser_operator.controllers.kit.resources import SERVER_SECRET_INDEX
from dbuser_operator.controllers.servers.connection import ServerConfigError
from dbuser_operator.controllers.servers.handle import ServerHandle
from dbuser_operator.controllers.servers.resolver import ServerResolver, resource_key
from dbuser_operator.runtime.informer import Informer

FLAGS_SERVER: Final = "the server of the --mysql-* flags"


@dataclass(frozen=True)
class Admin:
    """A server's admin account and bookkeeping schema, and which server resource has them."""

    server: str  # "MySQLServer team-a/main", "ClusterMySQLServer shared", FLAGS_SERVER
    user: str
    schema: str
    handle: ServerHandle


@dataclass(frozen=True)
class _Unresolved:
    """A server resource whose handle could not be built: tried again at every check."""

    key: str
    obj: dict[str, Any]


@dataclass(frozen=True)
class AdminIndex:
    """A list of admins by account name and by bookkeeping schema (in lower case), in the list's order."""

    admins: list[Admin]
    by_user: dict[str, list[Admin]]
    by_schema: dict[str, list[tuple[int, Admin]]]

    @classmethod
    def of(cls, admins: list[Admin]) -> AdminIndex:
        by_user: dict[str, list[Admin]] = {}
        by_schema: dict[str, list[tuple[int, Admin]]] = {}
        for position, admin in enumerate(admins):
            by_user.setdefault(admin.user, []).append(admin)
            by_schema.setdefault(admin.schema.lower(), []).append((position, admin))
        return cls(admins, by_user, by_schema)

    def named(self, user: str) -> list[Admin]:
        """The admins whose account is ``user``."""
        return self.by_user.get(user, [])

    def with_schemas(self, schemas: set[str]) -> list[Admin]:
        """The admins whose bookkeeping schema is one of ``schemas`` (lower case)."""
        found = [item for schema in schemas for item in self.by_schema.get(schema, ())]
        return [admin for _, admin in sorted(found, key=lambda item: item[0])]


class AdminList:
    """The admins of the settings' server and of every server resource, kept until one of their sources
    changes."""

    def __init__(self, resolver: ServerResolver, secrets: Informer | None = None) -> None:
        """``secrets``: the Secret cache the server resources' Secrets are read from (None: every build is
        kept only until a server resource or a handle changes: for a resolver without Secrets to watch)."""
        self.resolver = resolver
        self._secret_changes = 0
        self._stamp: tuple[int, ...] | None = None
        self._kept: list[Admin | _Unresolved] = []
        self._resolved: list[Admin] = []  # the admins kept, when none is to be tried again
        self._complete = False
        self.builds = 0  # how many times the list was built (for tests and profiles)
        if secrets is not None:
            secrets.add_handler(_SecretChanges(self))

    def stamp(self) -> tuple[int, ...]:
        """What the list depends on, as versions: equal stamps, same sources."""
        stores = (informer.store.version for informer in self.resolver.informers.values())
        return (self.resolver.registry.version, self._secret_changes, *stores)

    def secret_changed(self, namespace: str, name: str) -> None:
        """A Secret changed (added, updated, deleted): the list is built again when a server resource
        names it (or when the server caches cannot say)."""
        value = f"{namespace}/{name}"
        for informer in self.resolver.informers.values():
            try:
                named = informer.store.indexed(SERVER_SECRET_INDEX, value)
            except KeyError:  # no such index: any Secret may be one
                named = True
            if named:
                self._secret_changes += 1
                return

    def kept(self) -> list[Admin] | None:
        """The list kept, when it is current and nothing in it is to be tried again (no I/O, no await);
        else None: ask :meth:`admins`."""
        if self._complete and self.stamp() == self._stamp:
            return self._resolved
        return None

    async def admins(self) -> list[Admin]:
        """The admin of the settings' server and of every server resource in the caches (their handles
        built from their Secrets if no reconcile built them yet: no connection is opened for that)."""
        stamp = self.stamp()
        if stamp != self._stamp:
            kept = await self._build()
            self._stamp, self._kept = stamp, kept
            self._resolved = [item for item in kept if isinstance(item, Admin)]
            self._complete = len(self._resolved) == len(kept)
        if self._complete:  # the same list while nothing changes (callers must not modify it)
            return self._resolved
        found = []
        for item in self._kept:
            if isinstance(item, Admin):
                found.append(item)
            else:
                admin = await self._admin(item.key, item.obj, build=False)
                if isinstance(admin, Admin):
                    found.append(admin)
        return found

    async def _build(self) -> list[Admin | _Unresolved]:
        self.builds += 1
        registry = self.resolver.registry
        kept: list[Admin | _Unresolved] = []
        if registry.default is not None:
            default = registry.default
            kept.append(Admin(FLAGS_SERVER, default.db.settings.user, default.schema, default))
        for kind, informer in self.resolver.informers.items():
            for obj in list(informer.store):
                kept.append(await self._admin(resource_key(kind, obj), obj, build=True))
        return kept

    async def _admin(self, key: str, obj: dict[str, Any], *, build: bool) -> Admin | _Unresolved:
        """The admin of the server resource ``obj``: at a build, its Secrets read again (its handle rebuilt
        if they changed); else as the registry holds it."""
        registry = self.resolver.registry
        try:
            resource = self.resolver.resource(key, obj)
            handle = await (registry.refresh(resource) if build else registry.current(resource))
        except (ConditionError, ServerConfigError):  # no admin name to reserve (yet)
            return _Unresolved(key, obj)
        return Admin(handle.name or key, handle.db.settings.user, handle.schema, handle)


class _SecretChanges:
    """The Secret cache's handler: tells the list which Secret changed."""

    def __init__(self, admins: AdminList) -> None:
        self.admins = admins

    def on_add(self, obj: dict[str, Any]) -> None:
        self._changed(obj)

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self._changed(new)

    def on_delete(self, obj: dict[str, Any]) -> None:
        self._changed(obj)

    def _changed(self, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        self.admins.secret_changed(meta.get("namespace") or "", meta.get("name") or "")
