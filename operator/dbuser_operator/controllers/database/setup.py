"""The Database controller, as the manager runs it (controller-runtime's ``SetupWithManager``)."""

from __future__ import annotations

from dbuser_operator.controllers.database.reconciler import DatabaseReconciler
from dbuser_operator.controllers.kit.resources import DATABASES
from dbuser_operator.controllers.shared import Shared, add_kind
from dbuser_operator.runtime.controller import Controller
from dbuser_operator.runtime.manager import Manager

CONTROLLER_NAME = "database"


def setup(manager: Manager, shared: Shared) -> Controller:
    """The database controller: looks at a database again when it changes, when its namespace's labels
    change, when its server changes, and every resync period. At the start of leadership, the databases
    that left the scope while no leader watched are let go of, as users and roles are."""
    reconciler = DatabaseReconciler(shared.frame, shared.databases, policy=shared.policy)
    concurrency = shared.settings.max_concurrent_reconciles
    controller = Controller(CONTROLLER_NAME, reconciler, max_concurrent_reconciles=concurrency)
    return add_kind(
        manager, shared, controller, shared.databases, resource=DATABASES, sweep="departed database sweep"
    )
