"""The composition root: settings → clients, fence, shared informers → each kind's ``setup()`` → manager."""

from __future__ import annotations

import asyncio
import os

import structlog
from kubernetes_asyncio import client, config

from dbuser_operator.controllers.database import setup as database
from dbuser_operator.controllers.databaserole import setup as databaserole
from dbuser_operator.controllers.databaseuser import setup as databaseuser
from dbuser_operator.controllers.databaseuser.indexes import SECRET_INDEX
from dbuser_operator.controllers.databaseuser.indexes import index as index_users
from dbuser_operator.controllers.databaseuser.setup import CONTROLLER_NAME
from dbuser_operator.controllers.kit import degraded
from dbuser_operator.controllers.kit.resources import DATABASE_ROLES, DATABASE_USERS, DATABASES
from dbuser_operator.controllers.kit.scope import Scope
from dbuser_operator.controllers.mysqlserver import setup as mysqlserver
from dbuser_operator.controllers.mysqlserver.indexes import informers as server_informers
from dbuser_operator.controllers.policy.gate import policy_gate
from dbuser_operator.controllers.policy.guard import Guard
from dbuser_operator.controllers.policy.namespaces import namespaces_readable
from dbuser_operator.controllers.servers.admins import Reservations
from dbuser_operator.controllers.servers.connection import DatabaseFactory
from dbuser_operator.controllers.servers.resolver import ServerResolver
from dbuser_operator.controllers.servers.watch import server_kinds_served
from dbuser_operator.controllers.shared import Shared
from dbuser_operator.mysql.bookkeeping.fencing import LeaderTerm, SessionFence, SupersededError
from dbuser_operator.mysql.session.connection import ConnectionSettings, Database
from dbuser_operator.runtime.client import KubeClient, api_client
from dbuser_operator.runtime.events import EventRecorder
from dbuser_operator.runtime.fence import Fence, FenceLost, open_fence
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.leaderelection import LeaderElectionConfig, LeadershipLost
from dbuser_operator.runtime.logging import configure_logging
from dbuser_operator.runtime.manager import Manager, Runnable
from dbuser_operator.runtime.referenced import ReferencedInformer
from dbuser_operator.runtime.resources import SECRETS, ObjectKey
from dbuser_operator.runtime.workqueue import RateLimitingQueue
from dbuser_operator.settings import Settings
from dbuser_operator.workload import ca as signing_ca
from dbuser_operator.workload import setup as signer

log = structlog.get_logger(__name__)


def connection_settings(settings: Settings) -> ConnectionSettings:
    """The MySQL admin connection the settings describe."""
    return ConnectionSettings(
        host=settings.mysql_host,
        port=settings.mysql_port,
        user=settings.mysql_user,
        password=settings.mysql_password(),
        connect_timeout=settings.mysql_connect_timeout,
        read_timeout=settings.mysql_read_timeout,
        name="the default server",
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

    def term() -> LeaderTerm | None:
        return None if fence.epoch is None else LeaderTerm(fence.epoch, fence.term)

    async def reserve(above: int) -> int:
        try:
            return await fence.reserve_epoch(above)
        except FenceLost as lost:
            raise SupersededError(str(lost)) from None

    def open_database(connection: ConnectionSettings, schema: str) -> Database:
        if not fence.fenced:
            return Database(connection)
        sessions = SessionFence(
            schema=schema,
            election=f"{settings.leader_election_namespace}/{settings.leader_election_id}",
            holder=settings.leader_election_identity,
            term=term,
            on_superseded=fence.revoke,
            reserve=reserve,
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
    """A manager running every kind's controller as the settings say (``db``: the settings' server, None
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
    index_users(users)  # before the caches that read its indexes are built
    roles = Informer(reader, DATABASE_ROLES, namespaces=settings.namespaces, label_selector=scope.selector)
    dbs = Informer(reader, DATABASES, namespaces=settings.namespaces, label_selector=scope.selector)
    # Only the Secrets DatabaseUsers name (their own included); the server kinds add those servers name.
    secrets = ReferencedInformer(
        reader, SECRETS, namespaces=settings.namespaces, referenced_by=[(users, SECRET_INDEX)]
    )
    queue, recorder = queue_and_recorder(settings, kube)
    registry = mysqlserver.registry(
        settings, db, mysqlserver.secret_reader(reader, secrets), database_factory(settings, fence)
    )
    resolver = ServerResolver(
        registry,
        *server_informers(reader, settings, scope, users, roles, dbs) if server_resources else (),
    )
    reservations = Reservations(
        resolver,
        users=[*settings.reserved_users, settings.mysql_user],
        schema=settings.ownership_schema,
        secrets=secrets,
    )
    shared = Shared(
        settings=settings,
        reader=reader,
        kube=kube,
        scope=scope,
        users=users,
        roles=roles,
        databases=dbs,
        secrets=secrets,
        recorder=recorder,
        servers=resolver,
        policy=policy_gate(reader if namespace_labels else None, users, roles, dbs),
        guard=Guard(settings.allowed_global_privileges, settings.ownership_schema, reservations),
        reserved=reservations,
    )
    manager = Manager(
        reader,
        leader_election=election,
        fence=fence,
        probe_address=settings.health_probe_bind_address,
        metrics_address=settings.metrics_bind_address,
        shutdown_timeout=settings.shutdown_timeout,
    )
    manager.endpoints.ready_checks["api-writes"] = kube.denials.check  # RBAC narrowed after the start
    user_controller = databaseuser.setup(manager, shared, queue)
    role_controller = databaserole.setup(manager, shared)
    database_controller = database.setup(manager, shared)
    mysqlserver.setup(
        manager,
        shared,
        [(user_controller, users), (role_controller, roles), (database_controller, dbs)],
    )
    if settings.workload_signing_ca is not None:  # the pod certificate signer, on the leader
        signer.setup(manager, shared, signing_ca.load(settings.workload_signing_ca))
    stores: degraded.Stores = {
        **resolver.informers,
        "DatabaseUser": users,
        "DatabaseRole": roles,
        "Database": dbs,
    }
    manager.add_leader_task(
        "degraded metrics", lambda: degraded.export_while_leading(stores, degraded.DEGRADED)
    )
    manager.add_runnable(Runnable("event recorder", recorder.run))

    async def close_recorder() -> None:  # write pending Events while the lease is held, else drop them
        await recorder.close(flush=fence.is_open())

    manager.on_shutdown(close_recorder)
    return manager


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
