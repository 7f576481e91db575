"""The Database kind in the convergence scenarios: N Databases created, timed to Ready (``--kind Database``).

The scenarios of :mod:`bench.scenarios` with Databases in place of DatabaseUsers: no Secrets, one MySQL
database per object (named ``<tag>_<index>``, on the default server), and instead of a login check, a look at
``information_schema.SCHEMATA`` for a few of the created databases. The floor is ``bench.floor --kind
Database``. The results' ``*_per_user`` figures are per object (per Database) here.
"""

from __future__ import annotations

import contextlib
import time

from bench import processes
from bench.common import OWNERSHIP_SCHEMA, MySQLAddress, admin_sql, database
from bench.scenarios import Bench, Population, ReadyWatch
from dbuser_operator.controllers.database.setup import CONTROLLER_NAME
from dbuser_operator.controllers.kit.resources import DATABASES
from dbuser_operator.runtime.resources import Resource


class DatabaseBench(Bench):
    """The scenarios with Databases: creating them, warming up with one, cleaning up their databases."""

    resource: Resource = DATABASES

    def implementation(self, kind: str, namespace: str, log_name: str) -> processes.Implementation:
        implementation = super().implementation(kind, namespace, log_name)
        implementation.controller = CONTROLLER_NAME  # the Database controller's reconciles
        return implementation

    async def create_population(self, population: Population) -> None:
        async def create(index: int) -> None:
            name = population.name(index)
            population.created_at[name] = time.monotonic()
            await self.kube.create(DATABASES, database(name, population.user(index)), population.namespace)

        await self._parallel(population.size, create, self.options.create_concurrency)

    async def warm_up(self, namespace: str, tag: str, watch: ReadyWatch, implementation: str) -> None:
        """One Database through the whole path first: connections, caches and the bookkeeping table."""
        name = self.warm_up_names()[0]
        await self.kube.create(DATABASES, database(name, f"{tag}_warm"), namespace)
        if not await watch.wait_for(lambda: name in watch.ready_at, 120):
            raise TimeoutError(f"{implementation}: the warm-up Database was not Ready within 120 s")
        await self.settle_writes()

    async def _check_logins(self, population: Population) -> tuple[int, int]:
        """A few of the created databases, looked up in the server (they exist: a Ready that is true)."""
        indexes = self.random.sample(range(population.size), min(self.options.login_checks, population.size))
        found = 0
        for index in indexes:
            rows = await admin_sql(
                population.server(index),
                (
                    "SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s",
                    (population.user(index),),
                ),
            )
            found += bool(rows)
        return len(indexes), found

    async def drop_made(self, server: MySQLAddress, tag: str) -> None:
        """Drop the run's databases on ``server`` and forget them in its bookkeeping table."""
        pattern = f"{tag}\\_%"
        rows = await admin_sql(
            server,
            ("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE %s", (pattern,)),
        )
        for (name,) in rows:
            await admin_sql(server, f"DROP DATABASE IF EXISTS `{name}`")
        with contextlib.suppress(Exception):  # the floor keeps no bookkeeping: no table on a fresh server
            forget = f"DELETE FROM `{OWNERSHIP_SCHEMA}`.databases WHERE name LIKE %s"  # noqa: S608 - a constant
            await admin_sql(server, (forget, (pattern,)))
