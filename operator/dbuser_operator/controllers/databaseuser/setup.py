"""The DatabaseUser controller, as the manager runs it (controller-runtime's ``SetupWithManager``): its
steps in order, its watches and key mappers, and its leader-only periodic tasks."""

from __future__ import annotations

from dbuser_operator.api.v1alpha1 import API_VERSION, KIND
from dbuser_operator.controllers.databaseuser.cert_manager import CertManagerObjects, certificate_informer
from dbuser_operator.controllers.databaseuser.compliance import (
    COMPLIANCE,
    export_while_leading,
    policy_lifetime_cap,
)
from dbuser_operator.controllers.databaseuser.drift import DriftCheck
from dbuser_operator.controllers.databaseuser.endpoints import DefaultServerEndpoints, endpoint_of
from dbuser_operator.controllers.databaseuser.indexes import (
    ACCOUNT_INDEX,
    SECRET_INDEX,
    account_key,
    claimants_of,
    users_of_database,
    users_of_role,
    users_of_secret,
)
from dbuser_operator.controllers.databaseuser.observe import Observer
from dbuser_operator.controllers.databaseuser.owned_secrets import OwnedSecrets
from dbuser_operator.controllers.databaseuser.reconciler import DatabaseUserReconciler
from dbuser_operator.controllers.databaseuser.role_drift import RoleDriftCheck
from dbuser_operator.controllers.databaseuser.start_check import StartCheck
from dbuser_operator.controllers.databaseuser.steps.account import AccountStep
from dbuser_operator.controllers.databaseuser.steps.account_metadata import (
    AccountMetadataStep,
    CommentCheckStep,
)
from dbuser_operator.controllers.databaseuser.steps.authentication import AuthenticationStep
from dbuser_operator.controllers.databaseuser.steps.client_certificate import ClientCertificateStep
from dbuser_operator.controllers.databaseuser.steps.connection_secret import ConnectionSecretStep
from dbuser_operator.controllers.databaseuser.steps.credentials import CredentialsStep, SessionsStep
from dbuser_operator.controllers.databaseuser.steps.generated import GeneratedPasswordStep
from dbuser_operator.controllers.databaseuser.steps.grants import GrantsStep, PrivilegeCheckStep
from dbuser_operator.controllers.databaseuser.steps.guard import GuardStep
from dbuser_operator.controllers.databaseuser.steps.hosts import HostsStep
from dbuser_operator.controllers.databaseuser.steps.limits import LimitsStep
from dbuser_operator.controllers.databaseuser.steps.lock_policy import (
    LockPolicyCheckStep,
    LockPolicyStep,
)
from dbuser_operator.controllers.databaseuser.steps.ownership import OwnershipStep
from dbuser_operator.controllers.databaseuser.steps.password import PasswordStep
from dbuser_operator.controllers.databaseuser.steps.policy import PolicyStep
from dbuser_operator.controllers.databaseuser.steps.roles import RoleAccountGuardStep, RolesStep
from dbuser_operator.controllers.databaseuser.steps.rollout import RolloutStep
from dbuser_operator.controllers.databaseuser.steps.rotation import DiscardStep, StrategyStep
from dbuser_operator.controllers.databaseuser.steps.scheduled import ScheduledRotationStep
from dbuser_operator.controllers.databaseuser.steps.workload import WorkloadStep
from dbuser_operator.controllers.databaseuser.workload import SigningCASource
from dbuser_operator.controllers.kit.finalizer import Finalizer, FinalizerStep
from dbuser_operator.controllers.kit.ownership import LiveOwners
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.controllers.kit.steps import Step
from dbuser_operator.controllers.policy.issuers import CertificateRules
from dbuser_operator.controllers.servers.access_status import AccessStatus
from dbuser_operator.controllers.shared import Shared, add_kind
from dbuser_operator.credentials.endpoints import Endpoint
from dbuser_operator.credentials.render_pool import RenderPool
from dbuser_operator.runtime.controller import Controller
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.manager import Manager
from dbuser_operator.runtime.predicates import DELETED
from dbuser_operator.runtime.resources import ObjectKey
from dbuser_operator.runtime.workqueue import RateLimitingQueue
from dbuser_operator.settings import Settings

CONTROLLER_NAME = "databaseuser"


def steps(
    shared: Shared,
    owned_secrets: OwnedSecrets,
    renderer: RenderPool,
    queue: RateLimitingQueue[ObjectKey],
    signing_ca: SigningCASource | None = None,
    *,
    certificates: Informer | None = None,
) -> list[Step]:
    """The steps in the order their ensure halves run (deletion runs them in reverse). A step that reads
    what another one learns says so in its ``after``: the reconciler checks the order when it is built.
    ``certificates``: the cert-manager Certificates' cache, when the operator requests certificates."""
    settings, kube = shared.settings, shared.kube
    cert_manager = None
    if certificates is not None:
        cert_manager = CertManagerObjects(kube, certificates, shared.secrets, shared.scope)
    issuers = CertificateRules(shared.policy, settings.cert_manager_cluster_issuers)

    def requeue_claimants(server: str, user: str, host: str) -> None:
        """A resource let go of ``'user'@'host'`` (a host left its spec): the others naming it may have it."""
        for other in shared.users.store.by_index(ACCOUNT_INDEX, account_key(server, user, host)):
            queue.add(ObjectKey.of(other))

    return [
        FinalizerStep(Finalizer(kube, shared.scope, DATABASE_USERS)),
        GuardStep(shared.guard),
        PolicyStep(shared.policy),  # before any SQL
        WorkloadStep(signing_ca or SigningCASource(settings.workload_signing_ca)),  # before any SQL too
        PrivilegeCheckStep(),
        CommentCheckStep(),  # before any SQL too
        LockPolicyCheckStep(),  # before any account is written
        GeneratedPasswordStep(owned_secrets),
        PasswordStep(shared.secrets),
        StrategyStep(),
        HostsStep(  # the steps of one account, run for each host
            [
                RoleAccountGuardStep(),
                OwnershipStep(LiveOwners(kube, DATABASE_USERS), shared.policy),
                AuthenticationStep(),
                AccountStep(),
                LimitsStep(),
                AccountMetadataStep(),  # the owner entry and comment, in the account's attributes
                LockPolicyStep(),
                GrantsStep(),
                RolesStep(shared.roles),
                CredentialsStep(),  # the password last: after the revokes
                SessionsStep(),
            ],
            on_release=requeue_claimants,
        ),
        ScheduledRotationStep(owned_secrets),  # every host at once, before the connection Secret
        ClientCertificateStep(cert_manager, issuers),  # issued for the accounts, before the connection Secret
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
    signing_ca = SigningCASource(settings.workload_signing_ca)  # the issuer of workload accounts
    certificates = None
    if settings.cert_manager:  # its Certificates: made by this instance (the target label), in its namespaces
        certificates = certificate_informer(shared.reader, settings.namespaces, shared.scope)
    reconciler = DatabaseUserReconciler(
        shared.frame,
        users,
        steps(
            shared,
            OwnedSecrets(shared.kube, shared.secrets),
            renderer,
            queue,
            signing_ca,
            certificates=certificates,
        ),
        observer=Observer(shared.policy, signing_ca),
        observe_period=settings.resync_period,
        policy=shared.policy,
        databases=shared.databases,
    )
    handles = shared.servers.registry.handles
    period = settings.resync_period
    role_drift = RoleDriftCheck(handles, users, shared.roles, queue, period)
    # The first pass skips the reconcile of resources one inventory per server finds converged.
    reconciler.converged = StartCheck(reconciler, users, shared.secrets, role_drift).converged
    controller = Controller(
        CONTROLLER_NAME,
        reconciler,
        max_concurrent_reconciles=settings.max_concurrent_reconciles,
        queue=queue,
    )
    # A user waits while a Secret it names is fetched; the fetch's event (through users_of) brings it back.
    settled = shared.secrets.settled(users, SECRET_INDEX)
    add_kind(
        manager, shared, controller, users, resource=DATABASE_USERS, sweep="departed sweep", also=settled
    )
    controller.watch_mapped(shared.secrets, users_of_secret(users))
    controller.watch_mapped(users, claimants_of(users), DELETED)
    controller.watch_mapped(shared.roles, users_of_role(users))  # every change, status included
    controller.watch_mapped(shared.databases, users_of_database(users))  # status included: Ready
    if certificates is not None:  # cert-manager's progress (status) brings the owner back
        controller.watch_owned(certificates, API_VERSION, KIND)
    manager.on_shutdown(renderer.close)

    access = AccessStatus(shared.kube, shared.servers)  # the server resources' access reports
    drift = DriftCheck(
        handles, users, queue, period, databases=shared.databases, access=access, signing_ca=signing_ca
    )
    manager.add_leader_task("drift check", drift.run)
    cap = policy_lifetime_cap(shared.servers, shared.policy.namespaces)
    manager.add_leader_task(
        "compliance metrics",
        lambda: export_while_leading(
            users,
            lambda: drift.orphans_by_server,
            cap,
            COMPLIANCE,
            lambda: drift.orphaned_databases_by_server,
        ),
    )
    manager.add_leader_task("role drift check", role_drift.run)
    return controller
