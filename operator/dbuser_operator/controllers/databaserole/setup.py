"""The DatabaseRole controller, as the manager runs it (controller-runtime's ``SetupWithManager``)."""

from __future__ import annotations

from dbuser_operator.controllers.databaserole.reconciler import DatabaseRoleReconciler
from dbuser_operator.controllers.kit.departed import DepartedSweep
from dbuser_operator.controllers.kit.resources import DATABASE_ROLES
from dbuser_operator.controllers.servers.watch import watch_servers
from dbuser_operator.controllers.shared import Shared
from dbuser_operator.runtime.controller import Controller
from dbuser_operator.runtime.manager import Manager
from dbuser_operator.runtime.predicates import (
    ANNOTATIONS_CHANGED,
    DELETION_STARTED,
    GENERATION_CHANGED,
    LABELS_CHANGED,
    any_of,
)

CONTROLLER_NAME = "databaserole"


def setup(manager: Manager, shared: Shared) -> Controller:
    """The role controller: looks at a role again when it changes, when its namespace's labels (which its
    server's policy reads) change, and when its server changes; a Ready role every resync period. At the
    start of leadership, the roles that left the scope while no leader watched are let go of, as users
    are."""
    settings = shared.settings
    reconciler = DatabaseRoleReconciler(
        shared.kube,
        shared.roles,
        shared.recorder,
        servers=shared.servers,
        reserved=shared.reserved,
        scope=shared.scope,
        guard=shared.guard,
        resync_period=settings.resync_period,
        policy=shared.policy,
    )
    controller = Controller(
        CONTROLLER_NAME, reconciler, max_concurrent_reconciles=settings.max_concurrent_reconciles
    )
    controller.watch(
        shared.roles, any_of(GENERATION_CHANGED, ANNOTATIONS_CHANGED, LABELS_CHANGED, DELETION_STARTED)
    )
    shared.policy.namespaces.watch(controller, shared.roles)
    watch_servers(controller, shared.roles, shared.servers.informers.values())
    manager.add_controller(controller)
    departed = DepartedSweep(shared.kube, DATABASE_ROLES, shared.scope, settings.namespaces, controller.queue)
    manager.add_leader_task("departed role sweep", departed.run)
    return controller
