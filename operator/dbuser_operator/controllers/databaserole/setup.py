"""The DatabaseRole controller, as the manager runs it (controller-runtime's ``SetupWithManager``)."""

from __future__ import annotations

from dbuser_operator.controllers.databaserole.reconciler import DatabaseRoleReconciler
from dbuser_operator.controllers.kit.resources import DATABASE_ROLES
from dbuser_operator.controllers.shared import Shared, add_kind
from dbuser_operator.runtime.controller import Controller
from dbuser_operator.runtime.manager import Manager

CONTROLLER_NAME = "databaserole"


def setup(manager: Manager, shared: Shared) -> Controller:
    """The role controller: looks at a role again when it changes, when its namespace's labels (which its
    server's policy reads) change, and when its server changes; a Ready role every resync period. At the
    start of leadership, the roles that left the scope while no leader watched are let go of, as users
    are."""
    reconciler = DatabaseRoleReconciler(shared.frame, shared.roles, guard=shared.guard, policy=shared.policy)
    controller = Controller(
        CONTROLLER_NAME, reconciler, max_concurrent_reconciles=shared.settings.max_concurrent_reconciles
    )
    return add_kind(
        manager, shared, controller, shared.roles, resource=DATABASE_ROLES, sweep="departed role sweep"
    )
