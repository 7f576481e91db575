"""Wiring: settings → API client, MySQL connection, informers, controller, manager."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import structlog
from kubernetes_asyncio import client, config

from dbuser_operator.controllers.databaserole.reconciler import DatabaseRoleReconciler
from dbuser_operator.controllers.databaseuser.drift import DriftCheck
from dbuser_operator.controllers.databaseuser.observe import Observer
from dbuser_operator.controllers.databaseuser.owned_secrets import OwnedSecrets
from dbuser_operator.controllers.databaseuser.reconciler import DatabaseUserReconciler
from dbuser_operator.controllers.databaseuser.role_drift import RoleDriftCheck
from dbuser_operator.controllers.databaseuser.steps.account import AccountStep
from dbuser_operator.controllers.databaseuser.steps.authentication import AuthenticationStep
from dbuser_operator.controllers.databaseuser.steps.connection_secret import ConnectionSecretStep
from dbuser_operator.controllers.databaseuser.steps.generated import GeneratedPasswordStep
from dbuser_operator.controllers.databaseuser.steps.grants import GrantsStep, PrivilegeCheckStep
from dbuser_operator.controllers.databaseuser.steps.hosts import HostsStep
from dbuser_operator.controllers.databaseuser.steps.options import OptionsStep
from dbuser_operator.controllers.databaseuser.steps.ownership import LiveOwners, OwnershipStep
from dbuser_operator.controllers.databaseuser.steps.password import PasswordStep
from dbuser_operator.controllers.databaseuser.steps.roles import (
    ROLE_INDEX,
    RoleAccountGuardStep,
    RolesStep,
    referenced_roles,
    users_of_role,
)
from dbuser_operator.controllers.databaseuser.steps.rollout import RolloutStep
from dbuser_operator.controllers.databaseuser.steps.rotation import DiscardStep, StrategyStep
from dbuser_operator.controllers.databaseuser.steps.scheduled import ScheduledRotationStep
from dbuser_operator.controllers.kit.departed import DepartedSweep
from dbuser_operator.controllers.kit.finalizer import FinalizerStep
from dbuser_operator.controllers.kit.guard import GuardStep
from dbuser_operator.controllers.kit.resources import (
    ACCOUNT_INDEX,
    CLUSTER_MYSQL_SERVERS,
    DATABASE_ROLES,
    DATABASE_USERS,
    MYSQL_SERVERS,
    SECRET_INDEX,
    SERVER_INDEX,
    SERVER_SECRET_INDEX,
    account_key,
    named_account,
    referenced_secret,
    referenced_server,
)
from dbuser_operator.controllers.kit.scope import Scope
from dbuser_operator.controllers.kit.steps import Step
from dbuser_operator.controllers.policy.gate import PolicyGate, PolicyStep, policy_gate
from dbuser_operator.controllers.policy.namespaces import namespaces_readable
from dbuser_operator.controllers.servers.connection import (
    DatabaseFactory,
    SecretReader,
    ServerDefaults,
    referenced_secrets,
)
from dbuser_operator.controllers.servers.controller import server_controllers
from dbuser_operator.controllers.servers.handle import ServerHandle
from dbuser_operator.controllers.servers.registry import ServerRegistry
from dbuser_operator.controllers.servers.resolver import ServerResolver
from dbuser_operator.controllers.servers.watch import server_kinds_served, watch_servers
from dbuser_operator.credentials.templates import TemplateRenderer
from dbuser_operator.mysql.connection import ConnectionSettings, Database
from dbuser_operator.mysql.fencing import SessionFence
from dbuser_operator.runtime.client import KubeClient, api_client
from dbuser_operator.runtime.controller import Controller
from dbuser_operator.runtime.errors import NotFound
from dbuser_operator.runtime.events import EventRecorder
from dbuser_operator.runtime.fence import Fence, open_fence
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.leaderelection import LeaderElectionConfig, LeadershipLost
from dbuser_operator.runtime.logging import configure_logging
from dbuser_operator.runtime.manager import Manager, Runnable
from dbuser_operator.runtime.predicates import (
    ANNOTATIONS_CHANGED,
    DELETION_STARTED,
    GENERATION_CHANGED,
    LABELS_CHANGED,
    Predicate,
    any_of,
)
from dbuser_operator.runtime.referenced import ReferencedInformer
from dbuser_operator.runtime.resources import SECRETS, ObjectKey
from dbuser_operator.runtime.workqueue import RateLimitingQueue
from dbuser_operator.settings import Settings

log = structlog.get_logger(__name__)

CONTROLLER_NAME = "databaseuser"
ROLE_CONTROLLER_NAME = "databaserole"

DELETED = Predicate(create=lambda obj: False, update=lambda old, new: False)  # deletions only


def connection_settings(settings: Settings) -> ConnectionSettings:
    """The MySQL admin connection the settings describe."""
    return ConnectionSettings(
        host=settings.mysql_host,
        port=settings.mysql_port,
        user=settings.mysql_user,
        password=settings.mysql_password(),
        connect_timeout=settings.mysql_connect_timeout,
        ssl_mode=settings.mysql_ssl_mode,
        ca_file=settings.mysql_tls_ca,
        cert_file=settings.mysql_tls_cert,
        key_file=settings.mysql_tls_key,
        tls_required=settings.mysql_tls_required,
        server_name=settings.mysql_tls_server_name,
        pool_size=settings.max_concurrent_reconciles,
    )


def leader_election(settings: Settings) -> LeaderElectionConfig | None:
    """The Lease and timings the settings name; None without leader election."""
    if not settings.leader_elect:
        return None
    return LeaderElectionConfig(
        lease_name=settings.leader_election_id,
        lease_namespace=settings.leader_election_namespace,
        identity=settings.leader_election_identity,
        lease_duration=settings.leader_election_lease_duration,
        renew_deadline=settings.leader_election_renew_deadline,
        retry_period=settings.leader_election_retry_period,
    )


def fence_for(election: LeaderElectionConfig | None) -> Fence:
    """The proof-of-lease every side effect checks: always open without leader election."""
    return election.fence() if election else open_fence()


def fenced_database(settings: Settings, fence: Fence) -> Database:
    """The MySQL connection, its writes behind ``fence``, its sessions under the leader epoch."""
    return database_factory(settings, fence)(connection_settings(settings), settings.ownership_schema)


def database_factory(settings: Settings, fence: Fence) -> DatabaseFactory:
    """Opens a server's Database: writes behind ``fence``, sessions registered under the leader epoch in
    that server's bookkeeping schema (the epoch is the one Lease's; the sessions are per server)."""

    def open_database(connection: ConnectionSettings, schema: str) -> Database:
        if not fence.fenced:
            return Database(connection)
        sessions = SessionFence(
            schema=schema,
            election=f"{settings.leader_election_namespace}/{settings.leader_election_id}",
            holder=settings.leader_election_identity,
            epoch=lambda: fence.epoch,
            on_superseded=fence.revoke,
        )
        return Database(connection, before_write=fence.check, on_connect=sessions.register)

    return open_database


def queue_and_recorder(
    settings: Settings, kube: KubeClient
) -> tuple[RateLimitingQueue[ObjectKey], EventRecorder]:
    """The DatabaseUser controller's queue, and the Event recorder: Events wait while users are queued for
    a reconcile (at most a minute), so that under a backlog status writes (what users wait for) go first."""
    queue = RateLimitingQueue[ObjectKey](CONTROLLER_NAME)
    recorder = EventRecorder(
        kube, "dbuser-operator", host=settings.leader_election_identity, yield_to=lambda: len(queue) > 0
    )
    return queue, recorder


def build_manager(
    settings: Settings,
    kube: KubeClient,
    db: Database | None,
    fence: Fence | None = None,
    *,
    server_resources: bool = True,
    namespace_labels: bool = True,
) -> Manager:
    """A manager running the DatabaseUser controller as the settings say (``db``: the settings' server, None
    without a default server; ``server_resources``: whether the MySQLServer and ClusterMySQLServer kinds are
    served, else only the settings' server is; ``namespace_labels``: whether namespaces may be read, for the
    servers' policies).

    ``kube`` is the unfenced client (reads, and the Lease itself); every write of the controllers, the
    leader tasks and the Event recorder goes through a client that checks ``fence`` first.
    """
    election = leader_election(settings)
    fence = fence or fence_for(election)
    reader, kube = kube, kube.fenced(fence.check)
    scope = Scope(settings.target_label, settings.target)
    users = Informer(reader, DATABASE_USERS, namespaces=settings.namespaces, label_selector=scope.selector)
    users.add_index(SECRET_INDEX, referenced_secret)
    users.add_index(ACCOUNT_INDEX, named_account)
    users.add_index(ROLE_INDEX, referenced_roles)
    roles = Informer(reader, DATABASE_ROLES, namespaces=settings.namespaces, label_selector=scope.selector)
    policy = policy_gate(reader if namespace_labels else None, users, roles)
    # Only the Secrets DatabaseUsers name (their own included); add_servers adds those servers name.
    secrets = ReferencedInformer(
        reader, SECRETS, namespaces=settings.namespaces, referenced_by=[(users, SECRET_INDEX)]
    )

    def users_of(secret: dict[str, Any]) -> list[ObjectKey]:
        key = ObjectKey.of(secret)
        return [
            ObjectKey.of(user) for user in users.store.by_index(SECRET_INDEX, f"{key.namespace}/{key.name}")
        ]

    def claimants_of(gone: dict[str, Any]) -> list[ObjectKey]:
        """The other resources naming the account of one that went away: refused while it owned the
        account (AccountClaimed, AccountExists), they may have it now."""
        key = ObjectKey.of(gone)
        named = (
            ObjectKey.of(user)
            for value in named_account(gone)
            for user in users.store.by_index(ACCOUNT_INDEX, value)
        )
        return [other for other in named if other != key]

    def requeue_claimants(server: str, user: str, host: str) -> None:
        """A resource let go of ``'user'@'host'`` (a host left its spec): the others naming it may have it."""
        for other in users.store.by_index(ACCOUNT_INDEX, account_key(server, user, host)):
            controller.queue.add(ObjectKey.of(other))

    queue, recorder = queue_and_recorder(settings, kube)
    resolver = ServerResolver(
        server_registry(settings, db, secret_reader(reader, secrets), fence),
        *servers_of(reader, settings, scope, users, roles) if server_resources else (),
    )
    guard = GuardStep(
        [*settings.reserved_users, settings.mysql_user],
        settings.allowed_global_privileges,
        settings.ownership_schema,
    )
    owned_secrets = OwnedSecrets(kube, secrets)
    renderer = TemplateRenderer()
    steps: list[Step] = [
        FinalizerStep(kube, scope),
        guard,
        PolicyStep(policy),  # before any SQL
        PrivilegeCheckStep(),
        GeneratedPasswordStep(owned_secrets),
        PasswordStep(secrets),
        StrategyStep(),
        HostsStep(  # the steps of one account, run for each host
            [
                RoleAccountGuardStep(),
                OwnershipStep(LiveOwners(kube)),
                AuthenticationStep(),
                ScheduledRotationStep(owned_secrets),
                AccountStep(),
                OptionsStep(),
                GrantsStep(),
                RolesStep(roles),
            ],
            on_release=requeue_claimants,
        ),
        ConnectionSecretStep(
            owned_secrets,
            renderer,
            settings.connection_host or settings.mysql_host,
            settings.connection_port or settings.mysql_port,
        ),
        RolloutStep(kube),
        DiscardStep(reader),  # after the connection Secret has the new password
    ]
    reconciler = DatabaseUserReconciler(
        kube,
        users,
        steps,
        recorder,
        servers=resolver,
        scope=scope,
        observer=Observer([*settings.reserved_users, settings.mysql_user]),
        observe_period=settings.resync_period,
        policy=policy,
    )
    controller = Controller(
        CONTROLLER_NAME, reconciler, max_concurrent_reconciles=settings.max_concurrent_reconciles, queue=queue
    )
    # Our own status writes change neither generation, labels, annotations nor deletion: no echo reconcile.
    # A user waits while a Secret it names is fetched; the fetch's event (through users_of) brings it back.
    controller.watch(
        users,
        any_of(GENERATION_CHANGED, ANNOTATIONS_CHANGED, LABELS_CHANGED, DELETION_STARTED),
        secrets.settled(users, SECRET_INDEX),
    )
    controller.watch_mapped(secrets, users_of)
    controller.watch_mapped(users, claimants_of, DELETED)
    controller.watch_mapped(roles, users_of_role(users))  # every change, status included: Ready or gone
    policy.namespaces.watch(controller, users)
    watch_servers(controller, users, resolver.informers.values())

    manager = Manager(
        reader,
        leader_election=election,
        fence=fence,
        probe_address=settings.health_probe_bind_address,
        metrics_address=settings.metrics_bind_address,
        shutdown_timeout=settings.shutdown_timeout,
    )
    manager.add_controller(controller)
    manager.add_controller(role_controller(settings, kube, roles, recorder, resolver, scope, guard, policy))
    add_servers(
        manager, kube, resolver, [users, roles], secrets, recorder, scope, settings.server_check_period
    )
    manager.add_runnable(Runnable("event recorder", recorder.run))

    async def close_recorder() -> None:  # write pending Events while the lease is held, else drop them
        await recorder.close(flush=fence.is_open())

    manager.on_shutdown(close_recorder)
    manager.on_shutdown(renderer.close)
    drift = DriftCheck(resolver.registry.handles, users, controller.queue, settings.resync_period)
    manager.add_leader_task("drift check", drift.run)
    role_drift = RoleDriftCheck(
        resolver.registry.handles, users, roles, controller.queue, settings.resync_period
    )
    manager.add_leader_task("role drift check", role_drift.run)
    departed = DepartedSweep(kube, scope, settings.namespaces, controller.queue)
    manager.add_leader_task("departed sweep", departed.run)
    return manager


def role_controller(  # noqa: PLR0917 - what the role controller shares with the user controller
    settings: Settings,
    kube: KubeClient,
    roles: Informer,
    recorder: EventRecorder,
    servers: ServerResolver,
    scope: Scope,
    guard: GuardStep,
    policy: PolicyGate | None = None,
) -> Controller:
    """The DatabaseRole controller: the same servers, scope, guard, policy and fenced clients as the user
    one."""
    reconciler = DatabaseRoleReconciler(
        kube,
        roles,
        recorder,
        servers=servers,
        scope=scope,
        guard=guard,
        resync_period=settings.resync_period,
        policy=policy,
    )
    controller = Controller(
        ROLE_CONTROLLER_NAME, reconciler, max_concurrent_reconciles=settings.max_concurrent_reconciles
    )
    controller.watch(roles, any_of(GENERATION_CHANGED, ANNOTATIONS_CHANGED, LABELS_CHANGED, DELETION_STARTED))
    if policy is not None:
        policy.namespaces.watch(controller, roles)
    watch_servers(controller, roles, servers.informers.values())
    return controller


def servers_of(
    reader: KubeClient, settings: Settings, scope: Scope, *dependents: Informer
) -> tuple[Informer, Informer]:
    """The informers of MySQLServers and ClusterMySQLServers (of this instance's target label; indexed by
    the Secrets they name), and the server index on the informers of the resources that name them."""
    for informer in dependents:
        informer.add_index(SERVER_INDEX, referenced_server)
    namespaced = Informer(
        reader, MYSQL_SERVERS, namespaces=settings.namespaces, label_selector=scope.selector
    )
    cluster = Informer(reader, CLUSTER_MYSQL_SERVERS, label_selector=scope.selector)
    for informer in (namespaced, cluster):  # the Secrets each names, for the Secret cache and watch
        informer.add_index(SERVER_SECRET_INDEX, referenced_secrets(settings.cluster_resource_namespace))
    return namespaced, cluster


def add_servers(  # noqa: PLR0917 - what the server controllers share with the others
    manager: Manager,
    kube: KubeClient,
    resolver: ServerResolver,
    dependents: list[Informer],
    secrets: ReferencedInformer,
    recorder: EventRecorder,
    scope: Scope,
    check_period: float,
) -> None:
    """The server controllers, the registry's pool sweeper, and its pools closed at shutdown; the Secret
    cache keeps the Secrets server resources name (credentials, TLS)."""
    for servers in resolver.informers.values():
        secrets.keep_referenced(servers, SERVER_SECRET_INDEX)
    for controller in server_controllers(kube, resolver, dependents, secrets, recorder, scope, check_period):
        manager.add_controller(controller)
    manager.add_runnable(Runnable("server pool sweeper", resolver.registry.run_sweeper))
    manager.on_shutdown(resolver.registry.close)


def server_registry(
    settings: Settings, db: Database | None, read_secret: SecretReader, fence: Fence
) -> ServerRegistry:
    """The servers' Targets: the settings' server (``db``, if any) and those of server resources, which
    take what they leave unset from the settings."""
    defaults = ServerDefaults(
        pool_size=settings.max_concurrent_reconciles,
        schema=settings.ownership_schema,
        connect_timeout=settings.mysql_connect_timeout,
        cluster_namespace=settings.cluster_resource_namespace,
    )
    default = ServerHandle(db, settings.ownership_schema) if db is not None else None
    return ServerRegistry(default, defaults, read_secret, database_factory(settings, fence))


def secret_reader(kube: KubeClient, secrets: Informer) -> SecretReader:
    """Reads a server resource's Secret from the cache, else from the API (a namespace not watched)."""

    async def read(namespace: str, name: str) -> dict[str, Any] | None:
        cached = secrets.get(ObjectKey(namespace, name))
        if cached is not None:
            return cached
        try:
            return await kube.get(SECRETS, name, namespace)
        except NotFound:
            return None

    return read


async def api_configuration(settings: Settings) -> client.Configuration:
    """In-cluster configuration in a pod (unless a kubeconfig is named), else the kubeconfig."""
    configuration = client.Configuration()
    if settings.kubeconfig is None and "KUBERNETES_SERVICE_HOST" in os.environ:
        config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    else:
        path = str(settings.kubeconfig) if settings.kubeconfig else None
        await config.load_kube_config(config_file=path, client_configuration=configuration)
    return configuration


async def run(settings: Settings, stop: asyncio.Event | None = None) -> None:
    """Run the operator until SIGTERM/SIGINT (or ``stop``)."""
    configuration = await api_configuration(settings)
    fence = fence_for(leader_election(settings))
    db = fenced_database(settings, fence) if settings.default_server else None
    for hint in settings.mysql_tls_hints() if settings.default_server else ():
        log.warning(hint)
    async with api_client(configuration) as api:
        kube = KubeClient(api)
        server_resources = await server_kinds_served(kube)
        if not server_resources:
            log.warning(
                "the MySQLServer and ClusterMySQLServer CRDs are not installed: server resources are off, "
                "resources with spec.serverRef get ServerNotFound (apply crds/ and restart to turn them on)"
            )
        namespace_labels = server_resources and await namespaces_readable(kube)
        if server_resources and not namespace_labels:
            log.warning(
                "the operator may not list namespaces: resources on a server resource with spec.policy get "
                "NamespacesUnreadable (grant get, list and watch on namespaces and restart)"
            )
        manager = build_manager(
            settings, kube, db, fence, server_resources=server_resources, namespace_labels=namespace_labels
        )
        log.info(
            "starting",
            target=f"{settings.target_label}={settings.target}",
            namespaces=settings.namespaces or "all",
            mysql=f"{settings.mysql_host}:{settings.mysql_port}" if db else "none (server resources only)",
            mysql_ssl_mode=str(db.settings.mode) if db else None,
            leader_election=settings.leader_elect,
        )
        try:
            await manager.run(stop)
        finally:
            if db is not None:
                await db.close()


def main(settings: Settings) -> int:
    """Configure logging and run; the process exit code."""
    configure_logging(settings.log_format, settings.log_level)
    try:
        asyncio.run(run(settings))
    except LeadershipLost:
        log.error("lost the leader lease; exiting so that Kubernetes restarts this replica")
        return 1
    except Exception:  # e.g. a runnable whose rule is to stop the manager: exit non-zero, Kubernetes restarts
        log.exception("stopped by a failure; exiting so that Kubernetes restarts this replica")
        return 1
    return 0
