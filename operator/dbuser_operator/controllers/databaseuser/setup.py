"""The DatabaseUser controller, as the manager runs it (controller-runtime's ``SetupWithManager``): its
steps in order, its watches and key mappers, and its leader-only periodic tasks."""

from __future__ import annotations

from typing import Any

from dbuser_operator.controllers.databaseuser.compliance import (
    COMPLIANCE,
    export_while_leading,
    policy_lifetime_cap,
)
from dbuser_operator.controllers.databaseuser.database_refs import DATABASE_REF_INDEX, referenced_databases
from dbuser_operator.controllers.databaseuser.drift import DriftCheck
from dbuser_operator.controllers.databaseuser.endpoints import DefaultServerEndpoints, endpoint_of
from dbuser_operator.controllers.databaseuser.observe import Observer
from dbuser_operator.controllers.databaseuser.owned_secrets import OwnedSecrets
from dbuser_operator.controllers.databaseuser.reconciler import DatabaseUserReconciler
from dbuser_operator.controllers.databaseuser.role_drift import RoleDriftCheck
from dbuser_operator.controllers.databaseuser.steps.account import AccountStep
from dbuser_operator.controllers.databaseuser.steps.account_metadata import (
    AccountMetadataStep,
    CommentCheckStep,
)
from dbuser_operator.controllers.databaseuser.steps.account_options import (
    AccountOptionsCheckStep,
    AccountOptionsStep,
)
from dbuser_operator.controllers.databaseuser.steps.authentication import AuthenticationStep
from dbuser_operator.controllers.databaseuser.steps.connection_secret import ConnectionSecretStep
from dbuser_operator.controllers.databaseuser.steps.credentials import CredentialsStep, SessionsStep
from dbuser_operator.controllers.databaseuser.steps.generated import GeneratedPasswordStep
from dbuser_operator.controllers.databaseuser.steps.grants import GrantsStep, PrivilegeCheckStep
from dbuser_operator.controllers.databaseuser.steps.guard import GuardStep
from dbuser_operator.controllers.databaseuser.steps.hosts import HostsStep
from dbuser_operator.controllers.databaseuser.steps.options import OptionsStep
from dbuser_operator.controllers.databaseuser.steps.ownership import OwnershipStep
from dbuser_operator.controllers.databaseuser.steps.password import PasswordStep
from dbuser_operator.controllers.databaseuser.steps.policy import PolicyStep
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
from dbuser_operator.controllers.kit.finalizer import Finalizer, FinalizerStep
from dbuser_operator.controllers.kit.ownership import LiveOwners
from dbuser_operator.controllers.kit.resources import (
    ACCOUNT_INDEX,
    DATABASE_USERS,
    SECRET_INDEX,
    account_key,
    named_account,
    referenced_secret,
)
from dbuser_operator.controllers.kit.steps import Step
from dbuser_operator.controllers.servers.access_status import AccessStatus
from dbuser_operator.controllers.servers.watch import watch_servers
from dbuser_operator.controllers.shared import Shared
from dbuser_operator.credentials.endpoints import Endpoint
from dbuser_operator.credentials.render_pool import RenderPool
from dbuser_operator.runtime.controller import Controller, KeyMapper
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.manager import Manager
from dbuser_operator.runtime.predicates import (
    ANNOTATIONS_CHANGED,
    DELETION_STARTED,
    GENERATION_CHANGED,
    LABELS_CHANGED,
    Predicate,
    any_of,
)
from dbuser_operator.runtime.resources import ObjectKey
from dbuser_operator.runtime.workqueue import RateLimitingQueue
from dbuser_operator.settings import Settings

CONTROLLER_NAME = "databaseuser"

DELETED = Predicate(create=lambda obj: False, update=lambda old, new: False)  # deletions only


def index(users: Informer) -> None:
    """The indexes the controller's mappers read: by Secret, by account, by role."""
    users.add_index(SECRET_INDEX, referenced_secret)
    users.add_index(ACCOUNT_INDEX, named_account)
    users.add_index(ROLE_INDEX, referenced_roles)
    users.add_index(DATABASE_REF_INDEX, referenced_databases)


def steps(
    shared: Shared,
    owned_secrets: OwnedSecrets,
    renderer: RenderPool,
    queue: RateLimitingQueue[ObjectKey],
) -> list[Step]:
    """The steps in the order their ensure halves run (deletion runs them in reverse). A step that reads
    what another one learns says so in its ``after``: the reconciler checks the order when it is built."""
    settings, kube = shared.settings, shared.kube

    def requeue_claimants(server: str, user: str, host: str) -> None:
        """A resource let go of ``'user'@'host'`` (a host left its spec): the others naming it may have it."""
        for other in shared.users.store.by_index(ACCOUNT_INDEX, account_key(server, user, host)):
            queue.add(ObjectKey.of(other))

    return [
        FinalizerStep(Finalizer(kube, shared.scope, DATABASE_USERS)),
        GuardStep(shared.guard),
        PolicyStep(shared.policy),  # before any SQL
        PrivilegeCheckStep(),
        CommentCheckStep(),  # before any SQL too
        AccountOptionsCheckStep(),  # before any account is written
        GeneratedPasswordStep(owned_secrets),
        PasswordStep(shared.secrets),
        StrategyStep(),
        HostsStep(  # the steps of one account, run for each host
            [
                RoleAccountGuardStep(),
                OwnershipStep(LiveOwners(kube, DATABASE_USERS), shared.policy),
                AuthenticationStep(),
                AccountStep(),
                OptionsStep(),
                AccountMetadataStep(),  # the owner entry and comment, in the account's attributes
                AccountOptionsStep(),
                GrantsStep(),
                RolesStep(shared.roles),
                CredentialsStep(),  # the password last: after the revokes
                SessionsStep(),
            ],
            on_release=requeue_claimants,
        ),
        ScheduledRotationStep(owned_secrets),  # every host at once, before the connection Secret
        ConnectionSecretStep(owned_secrets, renderer, default_endpoints(settings), requeue=queue.add),
        RolloutStep(kube),
        DiscardStep(shared.reader),  # after the connection Secret has the new password
    ]


def default_endpoints(settings: Settings) -> DefaultServerEndpoints:
    """The default server's endpoints for connection Secrets, from the operator's settings."""
    fallback = Endpoint(
        settings.connection_host or settings.mysql_host,
        settings.connection_port or settings.mysql_port,
        settings.connection_ssl_mode.value if settings.connection_ssl_mode else None,
    )
    return DefaultServerEndpoints([endpoint_of(item) for item in settings.connection_endpoints], fallback)


def setup(manager: Manager, shared: Shared, queue: RateLimitingQueue[ObjectKey]) -> Controller:
    """The DatabaseUser controller on ``queue``, its watches, and its leader-only tasks: the drift checks
    and the sweep for resources that left the scope while no leader watched."""
    settings, users = shared.settings, shared.users
    renderer = RenderPool()  # fair between namespaces: one tenant's templates delay only itself
    reconciler = DatabaseUserReconciler(
        shared.kube,
        users,
        steps(shared, OwnedSecrets(shared.kube, shared.secrets), renderer, queue),
        shared.recorder,
        servers=shared.servers,
        reserved=shared.reserved,
        scope=shared.scope,
        observer=Observer(shared.policy),
        observe_period=settings.resync_period,
        policy=shared.policy,
        databases=shared.databases,
    )
    controller = Controller(
        CONTROLLER_NAME, reconciler, max_concurrent_reconciles=settings.max_concurrent_reconciles, queue=queue
    )
    # Our own status writes change neither generation, labels, annotations nor deletion: no echo reconcile.
    # A user waits while a Secret it names is fetched; the fetch's event (through users_of) brings it back.
    controller.watch(
        users,
        any_of(GENERATION_CHANGED, ANNOTATIONS_CHANGED, LABELS_CHANGED, DELETION_STARTED),
        shared.secrets.settled(users, SECRET_INDEX),
    )
    controller.watch_mapped(shared.secrets, users_of_secret(users))
    controller.watch_mapped(users, claimants_of(users), DELETED)
    controller.watch_mapped(shared.roles, users_of_role(users))  # every change, status included
    controller.watch_mapped(shared.databases, users_of_database(users))  # status included: Ready
    shared.policy.namespaces.watch(controller, users)
    watch_servers(controller, users, shared.servers.informers.values())
    manager.add_controller(controller)
    manager.on_shutdown(renderer.close)

    handles = shared.servers.registry.handles
    period = settings.resync_period
    access = AccessStatus(shared.kube, shared.servers)  # the server resources' access reports
    drift = DriftCheck(handles, users, queue, period, databases=shared.databases, access=access)
    manager.add_leader_task("drift check", drift.run)
    cap = policy_lifetime_cap(shared.servers, shared.policy.namespaces)
    manager.add_leader_task(
        "compliance metrics",
        lambda: export_while_leading(
            users.store,
            lambda: drift.orphans_by_server,
            cap,
            COMPLIANCE,
            lambda: drift.orphaned_databases_by_server,
        ),
    )
    manager.add_leader_task(
        "role drift check", RoleDriftCheck(handles, users, shared.roles, queue, period).run
    )
    departed = DepartedSweep(shared.kube, DATABASE_USERS, shared.scope, settings.namespaces, queue)
    manager.add_leader_task("departed sweep", departed.run)
    return controller


def users_of_secret(users: Informer) -> KeyMapper:
    """Key mapper: a Secret requeues the DatabaseUsers that name it."""

    def to_keys(secret: dict[str, Any]) -> list[ObjectKey]:
        key = ObjectKey.of(secret)
        return [
            ObjectKey.of(user) for user in users.store.by_index(SECRET_INDEX, f"{key.namespace}/{key.name}")
        ]

    return to_keys


def users_of_database(users: Informer) -> KeyMapper:
    """Key mapper: a Database requeues the DatabaseUsers whose grants name it (databaseRef)."""

    def to_keys(database: dict[str, Any]) -> list[ObjectKey]:
        key = ObjectKey.of(database)
        return [
            ObjectKey.of(user)
            for user in users.store.by_index(DATABASE_REF_INDEX, f"{key.namespace}/{key.name}")
        ]

    return to_keys


def claimants_of(users: Informer) -> KeyMapper:
    """Key mapper: the other resources naming the account of one that went away. Refused while it owned
    the account (AccountClaimed, AccountExists), they may have it now."""

    def to_keys(gone: dict[str, Any]) -> list[ObjectKey]:
        key = ObjectKey.of(gone)
        named = (
            ObjectKey.of(user)
            for value in named_account(gone)
            for user in users.store.by_index(ACCOUNT_INDEX, value)
        )
        return [other for other in named if other != key]

    return to_keys
