"""The registry of reserved names, asked by the frame for every kind: each kind (a row of ``KINDS``) is tried
against every reserved name of its namespace of names (``ACCOUNTS`` for accounts and roles, ``DATABASES``
for databases), with the adopt annotation and deletionPolicy Delete. Each is refused with the registry's
reason before any SQL (the server's connection answers nothing) and before the finalizer; at deletion the
frame hands the kind the registry's answer, so that it drops nothing. A kind without a row fails the test
that lists them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NoReturn, cast

import pytest
from pydantic import SecretStr

from dbuser_operator import app
from dbuser_operator.api.v1alpha1 import ADOPT_ANNOTATION
from dbuser_operator.api.v1alpha1.mysqlserver import CLUSTER_KIND
from dbuser_operator.controllers.database.reconciler import DatabaseReconciler
from dbuser_operator.controllers.databaserole.reconciler import DatabaseRoleReconciler
from dbuser_operator.controllers.databaseuser.reconciler import DatabaseUserReconciler
from dbuser_operator.controllers.kit.errors import ConditionError
from dbuser_operator.controllers.kit.reconcile import FrameParts, Reconciler
from dbuser_operator.controllers.kit.reserved import Refusal, SystemNames
from dbuser_operator.controllers.kit.scope import Scope
from dbuser_operator.controllers.policy.guard import Guard
from dbuser_operator.controllers.servers.admins import Admin, Reservations
from dbuser_operator.controllers.servers.handle import ServerHandle
from dbuser_operator.controllers.servers.resolver import ServerResolver
from dbuser_operator.mysql.bookkeeping import ownership
from dbuser_operator.mysql.bookkeeping.ownership import DEFAULT_SCHEMA, Owner
from dbuser_operator.mysql.errors import DatabaseUnavailableError
from dbuser_operator.mysql.session.connection import ConnectionSettings, Database
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.events import EventRecorder
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.resources import ObjectKey
from tests.unit.controllers.kit.test_reconcile_frame import FakeInformer, FakeKube, FakeRecorder

SCOPE = Scope("example.com/target", "main")
KEY = ObjectKey("team-a", "grab")
FLAGS_ADMIN, FLAGS_RESERVED, FLAGS_SCHEMA = "flags_admin", "flags_reserved", "dbu_flags"


class NoSQL(Database):
    """A server connection that must never be used: every statement fails the test."""

    async def fetch(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise AssertionError(f"SQL sent before the refusal: {args}")

    async def execute(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise AssertionError(f"SQL sent before the refusal: {args}")


class Handle(ServerHandle):
    """A server handle whose server says ``identity`` when asked which it is (None: unreachable), and
    answers no statement."""

    def __init__(self, user: str, schema: str, identity: str | None, name: str) -> None:
        settings = ConnectionSettings(host="db", user=user, password=SecretStr("never-shown"))
        super().__init__(NoSQL(settings), schema, key=name.replace(" ", "/"), name=name)
        self.said = identity

    async def identity(self) -> str:
        if self.said is None:
            raise DatabaseUnavailableError("unreachable")
        return self.said


TENANTS = Handle("tenants_admin", "books_t", "mysql:1111", "ClusterMySQLServer shared")
PLATFORM = Handle("platform_admin", "books_p", "mysql:1111", "MySQLServer platform/main")
NEIGHBOUR = Handle("neighbour_admin", "books_n", "mysql:1111", "MySQLServer team-b/own")
ELSEWHERE = Handle("elsewhere_admin", "books_e", "mysql:2222", "MySQLServer team-c/own")
DOWN = Handle("down_admin", "books_d", None, "MySQLServer team-d/down")


class Known(Reservations):
    """The registry over a fixed list of server resources, with the flags' names."""

    def __init__(self, *handles: Handle, users: Iterable[str] = (), schema: str = DEFAULT_SCHEMA) -> None:
        super().__init__(cast(ServerResolver, None), users=users, schema=schema)
        self.known = handles

    async def admins(self) -> list[Admin]:
        return [Admin(h.name, h.db.settings.user, h.schema, h) for h in self.known]


REGISTRY = Known(
    TENANTS, PLATFORM, NEIGHBOUR, ELSEWHERE, DOWN, users=[FLAGS_RESERVED, FLAGS_ADMIN], schema=FLAGS_SCHEMA
)

# reserved name → (what it is, retried: its server cannot say whether it is the same)
ACCOUNTS = {
    "root": ("a system account", False),
    "mysql.sys": ("a system account", False),
    "mariadb.sys": ("a system account", False),
    "debian-sys-maint": ("a system account", False),
    "mysql": ("a system account", False),
    FLAGS_ADMIN: ("the flags' admin (--mysql-user)", False),
    FLAGS_RESERVED: ("--reserved-users", False),
    "tenants_admin": ("the server resource's own admin", False),
    "platform_admin": ("a platform MySQLServer's admin on the same server", False),
    "neighbour_admin": ("another tenant's MySQLServer's admin on the same server", False),
    "down_admin": ("the admin of a server that cannot say which it is", True),
}
DATABASES = {
    "mysql": ("a system schema", False),
    "MySQL": ("a system schema", False),
    "sys": ("a system schema", False),
    "information_schema": ("a system schema", False),
    "PERFORMANCE_SCHEMA": ("a system schema", False),
    FLAGS_SCHEMA: ("--ownership-schema", False),
    "books_t": ("the server resource's own bookkeeping schema", False),
    "books_p": ("a platform MySQLServer's bookkeeping schema on the same server", False),
    "BOOKS_N": ("another tenant's MySQLServer's bookkeeping schema on the same server", False),
    "books_d": ("the bookkeeping schema of a server that cannot say which it is", True),
}
ORDINARY = ["app", "elsewhere_admin", "books_e"]  # another physical server's admin and schema: ordinary


class Servers:
    """Every resource is on the tenants' ClusterMySQLServer."""

    async def resolve(self, obj: dict[str, Any], *, deleting: bool = False) -> tuple[Any, ServerHandle]:
        return None, TENANTS


@dataclass(frozen=True)
class Kind:
    """A row: a kind's reconciler, how its object names a MySQL name, its names, its reason."""

    reconciler: type[Reconciler[Any]]
    build: Callable[[FakeKube, Informer, FakeRecorder], Reconciler[Any]]
    spec: Callable[[str], dict[str, Any]]
    names: dict[str, tuple[str, bool]]
    reason: str


def _parts(kube: FakeKube, recorder: FakeRecorder) -> FrameParts:
    """What every kind's reconciler is built with here: the server, the scope, the registry."""
    servers = cast(ServerResolver, Servers())
    return FrameParts(cast(KubeClient, kube), cast(EventRecorder, recorder), SCOPE, servers, REGISTRY, 1.0)


KINDS = [
    Kind(
        DatabaseUserReconciler,
        lambda kube, informer, recorder: DatabaseUserReconciler(_parts(kube, recorder), informer, []),
        lambda name: {"user": name, "password": {"name": "pw", "key": "password"}},
        ACCOUNTS,
        "ReservedAccount",
    ),
    Kind(
        DatabaseRoleReconciler,
        lambda kube, informer, recorder: DatabaseRoleReconciler(
            _parts(kube, recorder), informer, guard=Guard([], FLAGS_SCHEMA)
        ),
        lambda name: {"role": name},
        ACCOUNTS,
        "ReservedAccount",
    ),
    Kind(
        DatabaseReconciler,
        lambda kube, informer, recorder: DatabaseReconciler(_parts(kube, recorder), informer),
        lambda name: {"name": name},
        DATABASES,
        "ReservedDatabase",
    ),
]
CASES = [(kind, name) for kind in KINDS for name in kind.names]


def resource(kind: Kind, name: str, **metadata: Any) -> dict[str, Any]:
    spec = {
        **kind.spec(name),
        "serverRef": {"kind": CLUSTER_KIND, "name": "shared"},
        "deletionPolicy": "Delete",
    }
    meta = {
        "name": KEY.name,
        "namespace": KEY.namespace,
        "uid": "uid-1",
        "resourceVersion": "1",
        "generation": 1,
        "labels": {SCOPE.label: SCOPE.target},
        "annotations": {ADOPT_ANNOTATION: "true"},
        **metadata,
    }
    return {"metadata": meta, "spec": spec}


def _subclasses(cls: type[Any]) -> set[type[Any]]:
    found = set(cls.__subclasses__())
    return found.union(*(_subclasses(sub) for sub in found))


def test_every_kind_has_a_row() -> None:
    """Adding a kind (a Reconciler the operator composes) without a row here fails."""
    assert callable(app.build_manager)  # every kind's reconciler imported, as the operator composes them
    kinds = {  # the concrete ones: a frame (Owning) declares no resource
        cls
        for cls in _subclasses(Reconciler)
        if cls.__module__.startswith("dbuser_operator.") and hasattr(cls, "resource")
    }
    assert kinds == {kind.reconciler for kind in KINDS}


@pytest.mark.parametrize(
    ("kind", "name"), CASES, ids=[f"{kind.reconciler.resource.kind}-{name}" for kind, name in CASES]
)
async def test_a_reserved_name_is_refused_before_any_sql(kind: Kind, name: str) -> None:
    what, retried = kind.names[name]
    kube, recorder = FakeKube(), FakeRecorder()
    reconciler = kind.build(kube, cast(Informer, FakeInformer(resource(kind, name))), recorder)
    if retried:
        with pytest.raises(ConditionError):
            await reconciler(KEY)
    else:
        await reconciler(KEY)
    assert kube.patches, what
    assert all(isinstance(patch, dict) and "status" in patch for patch in kube.patches)  # no finalizer
    (ready,) = [c for c in kube.patches[-1]["status"]["conditions"] if c["type"] == "Ready"]
    assert (ready["status"], ready["reason"]) == ("False", kind.reason), (what, ready)
    assert name in ready["message"]
    assert ("cannot be asked" in ready["message"]) is retried


@pytest.mark.parametrize(
    ("kind", "name"), CASES, ids=[f"{kind.reconciler.resource.kind}-{name}" for kind, name in CASES]
)
async def test_at_deletion_the_kind_is_told_the_name_is_reserved(kind: Kind, name: str) -> None:
    obj = resource(kind, name, deletionTimestamp="2026-01-01T00:00:00Z", finalizers=[SCOPE.finalizer])
    reconciler = kind.build(FakeKube(), cast(Informer, FakeInformer(obj)), FakeRecorder())
    ctx = reconciler.parse(obj)
    _, server = await reconciler.bind(ctx, deleting=True)
    assert server is TENANTS
    assert ctx.reserved is not None
    assert ctx.reserved.reason == kind.reason


@pytest.mark.parametrize(
    ("kind", "name"), CASES, ids=[f"{kind.reconciler.resource.kind}-{name}" for kind, name in CASES]
)
async def test_letting_go_of_a_reserved_name_only_forgets_its_rows(
    kind: Kind, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """deletionPolicy Retain: the kind's release (a DatabaseUser's owner entry taken off the account) never
    runs on a reserved name; its rows are forgotten."""
    obj = resource(kind, name, deletionTimestamp="2026-01-01T00:00:00Z", finalizers=[SCOPE.finalizer])
    obj["spec"]["deletionPolicy"] = "Retain"
    reconciler = cast(Any, kind.build(FakeKube(), cast(Informer, FakeInformer(obj)), FakeRecorder()))
    forgotten: list[str] = []

    async def release(ctx: Any) -> NoReturn:
        raise AssertionError(f"released reserved {name}")

    async def forget(ctx: Any) -> bool:
        forgotten.append(reconciler.mysql_name(ctx))
        return True

    monkeypatch.setattr(reconciler, "release", release)
    monkeypatch.setattr(reconciler, "forget", forget)
    ctx = reconciler.parse(obj)
    await reconciler.let_go(ctx, released=False)
    assert ctx.reserved is not None
    assert forgotten == [name]


@pytest.mark.parametrize("kind", KINDS, ids=[kind.reconciler.resource.kind for kind in KINDS])
@pytest.mark.parametrize("name", ORDINARY)
async def test_an_ordinary_name_gets_its_server(kind: Kind, name: str) -> None:
    obj = resource(kind, name)
    reconciler = kind.build(FakeKube(), cast(Informer, FakeInformer(obj)), FakeRecorder())
    ctx = reconciler.parse(obj)
    assert await reconciler.bind(ctx) == (None, TENANTS)


async def test_the_registry_says_what_each_name_is() -> None:
    assert await REGISTRY.reserved(TENANTS, "database", FLAGS_SCHEMA) == Refusal(
        "ReservedDatabase", "the operator's --ownership-schema is reserved: never managed"
    )
    assert await REGISTRY.reserved(TENANTS, "database", "books_t") == Refusal(
        "ReservedDatabase", "the bookkeeping schema of ClusterMySQLServer shared is reserved: never managed"
    )
    assert await REGISTRY.reserved(TENANTS, "database", "BOOKS_P") == Refusal(
        "ReservedDatabase",
        "the bookkeeping schema of MySQLServer platform/main (which reaches the same server) is reserved: "
        "never managed",
    )
    assert await REGISTRY.reserved(TENANTS, "role", FLAGS_ADMIN) == Refusal(
        "ReservedAccount", "a name of --mysql-user or --reserved-users is reserved: never managed"
    )
    # An account name is not a database name, nor the other way round.
    assert await REGISTRY.reserved(TENANTS, "database", "platform_admin") is None
    assert await REGISTRY.reserved(TENANTS, "account", "books_p") is None
    # What a frame built without the registry still refuses: the servers' own names.
    assert await SystemNames().reserved(None, "database", "Sys") is not None
    assert await SystemNames().reserved(None, "account", "mysql.session") is not None
    assert await SystemNames().reserved(None, "account", FLAGS_ADMIN) is None


def _observes(kind: Kind) -> bool:
    spec = cast(Any, kind.reconciler).model.model_fields["spec"].annotation
    return "management_policy" in spec.model_fields


OBSERVING = [kind for kind in KINDS if _observes(kind)]


@pytest.mark.parametrize("kind", OBSERVING, ids=[kind.reconciler.resource.kind for kind in OBSERVING])
async def test_observe_of_a_name_another_namespace_owns_is_refused_by_the_frame(
    kind: Kind, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every kind that observes gets the frame's bound: a name the ledger gives to a resource of another
    namespace is refused (``ObserveNotAllowed``) before anything of it is read (no other SQL)."""
    asked: list[list[str]] = []

    async def recorded_owners(db: Any, schema: str, entries: list[Any]) -> dict[Any, Owner]:
        asked.append([str(entry) for entry in entries])
        return {entries[0]: Owner("uid-2", "team-b", "theirs")}

    monkeypatch.setattr(ownership, "recorded_owners", recorded_owners)
    obj = resource(kind, "app")
    obj["spec"]["managementPolicy"] = "Observe"
    kube = FakeKube()
    reconciler = kind.build(kube, cast(Informer, FakeInformer(obj)), FakeRecorder())
    await reconciler(KEY)
    (ready,) = [c for c in kube.patches[-1]["status"]["conditions"] if c["type"] == "Ready"]
    assert (ready["status"], ready["reason"]) == ("False", "ObserveNotAllowed")
    assert "is managed by a resource of another namespace: not observed" in ready["message"]
    assert asked
    assert all(any("app" in entry for entry in entries) for entries in asked)
