"""A restart's first pass skips converged DatabaseUsers, and repairs what changed while no leader ran.

The operator runs without a periodic drift check (``resync_period=0``): only the restarted leader's first
pass can find what was changed by hand while it was stopped. Three users are changed then (a password set
by hand, a grant revoked by hand, a password Secret edited); a fourth's status is made to say another
operator version wrote it (an upgrade); a fifth is left alone. After the restart the three are repaired, the
fourth is reconciled and stamped with this version, and the fifth is the one found converged
(``dbuser_operator_converged_at_start_total``): not reconciled.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pytest

from dbuser_operator import __version__
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.metrics import REGISTRY
from dbuser_operator.runtime.resources import SECRETS
from tests.integration.operator.support import wait
from tests.integration.operator.support.builders import database_user, unique
from tests.integration.operator.support.instances import Instances, forget_own
from tests.integration.operator.support.kube import create_secret, wait_for_ready
from tests.integration.operator.support.mysql import can_log_in, mysql_query, privileges_of
from tests.integration.operator.support.operator import (
    SHUTDOWN_LIMIT,
    PasswordLedger,
    RunningOperator,
    stopped_within,
)
from tests.support.kube import eventually

pytestmark = pytest.mark.integration

GRANTS = [{"privileges": ["SELECT"], "database": "restartdb"}]
GRANTED = {("restartdb", "*", "SELECT", False)}


def converged_at_start() -> float:
    return REGISTRY.get_sample_value("dbuser_operator_converged_at_start_total") or 0.0


async def restart(instances: Instances, first: RunningOperator) -> None:
    """A new operator in place of ``first`` (stopped): its target and schema, no periodic drift check."""
    settings = first.settings
    await instances.start(target=settings.target, ownership_schema=settings.ownership_schema, resync_period=0)


async def ready_users(
    kube: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
    cases: Iterable[str],
    **spec: Any,
) -> tuple[dict[str, str], dict[str, str]]:
    """A Ready DatabaseUser per case, each with a Secret of its own and the grants on restartdb (``spec``
    added; ``{name}`` in a string value of it is the user's name): their names and passwords by case."""
    mysql_query(mysql, "CREATE DATABASE IF NOT EXISTS restartdb")
    names = {case: unique(case) for case in cases}
    secrets = {case: passwords.new() for case in names}
    for case, name in names.items():
        await create_secret(kube, namespace, name, {"password": secrets[case]})
        more = {key: json.loads(json.dumps(value).replace("{name}", name)) for key, value in spec.items()}
        await kube.create(DATABASE_USERS, database_user(name, name, privileges=GRANTS, **more), namespace)
    for name in names.values():
        await wait_for_ready(kube, namespace, name)
    return names, secrets


async def test_a_restart_repairs_what_changed_while_stopped_and_skips_the_converged(
    instances: Instances,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    passwords: PasswordLedger,
) -> None:
    first = await instances.start_own(resync_period=0)
    try:
        cases = ("kept", "bypassword", "bygrant", "bysecret", "byversion")
        names, secrets = await ready_users(kube_client, namespace, mysql, passwords, cases)

        first.stop.set()
        await stopped_within(SHUTDOWN_LIMIT, [first.task])
        # While no leader runs: a password set by hand, a grant revoked by hand, a Secret edited.
        mysql_query(mysql, f"ALTER USER '{names['bypassword']}'@'%' IDENTIFIED BY 'set-by-hand-1'")
        mysql_query(mysql, f"REVOKE SELECT ON restartdb.* FROM '{names['bygrant']}'@'%'")
        secrets["bysecret"] = passwords.new()
        patch = {"stringData": {"password": secrets["bysecret"]}}
        await kube_client.patch(SECRETS, names["bysecret"], patch, PatchType.MERGE, namespace=namespace)
        older = {"status": {"operatorVersion": "0.0.1"}}  # as an older release left it
        await kube_client.patch(
            DATABASE_USERS,
            names["byversion"],
            older,
            PatchType.MERGE,
            namespace=namespace,
            subresource="status",
        )
        assert privileges_of(mysql, names["bygrant"]) == set()
        before = converged_at_start()

        await restart(instances, first)

        def repaired() -> bool:
            return (
                can_log_in(mysql, names["bypassword"], secrets["bypassword"])
                and privileges_of(mysql, names["bygrant"]) == GRANTED
                and can_log_in(mysql, names["bysecret"], secrets["bysecret"])
            )

        await eventually(repaired, timeout=60, interval=0.2, what="the three changes repaired")

        async def stamped() -> bool:
            obj = await kube_client.get(DATABASE_USERS, names["byversion"], namespace)
            return bool(obj["status"].get("operatorVersion") == __version__)

        unstamped = "the older version's user not reconciled"
        await wait.eventually(stamped, limit=60, interval=0.2, message=unstamped)
        assert not can_log_in(mysql, names["bypassword"], "set-by-hand-1")
        await eventually(
            lambda: converged_at_start() - before >= 1, timeout=60, interval=0.2, what="one found converged"
        )
        # Exactly the one left alone was skipped: the changed ones were reconciled.
        assert converged_at_start() - before == 1
        assert can_log_in(mysql, names["kept"], secrets["kept"])
        assert privileges_of(mysql, names["kept"]) == GRANTED
    finally:
        forget_own()
