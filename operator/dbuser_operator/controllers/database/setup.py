"""The Database controller, as the manager runs it (controller-runtime's ``SetupWithManager``)."""

from __future__ import annotations

from dbuser_operator.controllers.database.reconciler import DatabaseReconciler
from dbuser_operator.controllers.kit.departed import DepartedSweep
from dbuser_operator.controllers.kit.resources import DATABASES
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

CONTROLLER_NAME = "database"


def setup(manager: Manager, shared: Shared) -> Controller:
    """The database controller: looks at a database again when it changes, when its namespace's labels
    change, when its server changes, and every resync period. At the start of leadership, the databases
    that left the scope while no leader watched are let go of, as users and roles are."""
    settings = shared.settings
    reconciler = DatabaseReconciler(
        shared.kube,
        shared.databases,
        shared.recorder,
        servers=shared.servers,
        reserved=shared.reserved,
        scope=shared.scope,
        resync_period=settings.resync_period,
        policy=shared.policy,
    )
    controller = Controller(
        CONTROLLER_NAME, reconciler, max_concurrent_reconciles=settings.max_concurrent_reconciles
    )
    controller.watch(
        shared.databases, any_of(GENERATION_CHANGED, ANNOTATIONS_CHANGED, LABELS_CHANGED, DELETION_STARTED)
    )
    shared.policy.namespaces.watch(controller, shared.databases)
    watch_servers(controller, shared.databases, shared.servers.informers.values())
    manager.add_controller(controller)
    departed = DepartedSweep(shared.kube, DATABASES, shared.scope, settings.namespaces, controller.queue)
    manager.add_leader_task("departed database sweep", departed.run)
    return controller
