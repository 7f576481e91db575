"""What one Database reconcile knows."""

from __future__ import annotations

from dataclasses import dataclass

from dbuser_operator.api.v1alpha1.database import Database, DatabaseStatus
from dbuser_operator.controllers.servers.resource import ServerPass


@dataclass(kw_only=True)
class DatabaseContext(ServerPass[DatabaseStatus]):
    """What one Database reconcile knows."""

    database: Database
