"""What one DatabaseRole reconcile knows."""

from __future__ import annotations

from dataclasses import dataclass

from dbuser_operator.api.v1alpha1.databaserole import DatabaseRole, DatabaseRoleStatus
from dbuser_operator.controllers.servers.resource import ServerPass


@dataclass(kw_only=True)
class RoleContext(ServerPass[DatabaseRoleStatus]):
    """What one DatabaseRole reconcile knows."""

    role: DatabaseRole
