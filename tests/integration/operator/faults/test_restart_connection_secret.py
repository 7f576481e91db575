"""A restart's first pass judges connection Secrets from the caches, and repairs those changed while stopped.

Five users with a connection Secret are Ready, two of them with a template; the operator stops (no periodic
drift check: ``resync_period=0``, so only the restarted leader's first pass can find what changed). While it
is stopped, one connection Secret has its password and host edited by hand and a key added, another is
deleted, a templated one has its template's key edited; one of each kind is left alone. After the restart
the edited one holds the working password and host again (the key added by hand removed), the deleted one
is written again, the template's key is rendered again, and the two left alone are found converged
(``dbuser_operator_converged_at_start_total``; the template not rendered): not reconciled, their Secrets
not written.
"""

from __future__ import annotations

from typing import Any

import pytest

from dbuser_operator.envtest import MySQLServer
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.resources import SECRETS
from tests.integration.operator.faults.test_restart_first_pass import converged_at_start, ready_users, restart
from tests.integration.operator.support.instances import Instances, forget_own
from tests.integration.operator.support.kube import wait_for_secret
from tests.integration.operator.support.mysql import can_log_in
from tests.integration.operator.support.operator import SHUTDOWN_LIMIT, PasswordLedger, stopped_within
from tests.integration.operator.support.rotation import secret_password
from tests.support.kube import eventually

pytestmark = pytest.mark.integration


async def test_a_connection_secret_changed_while_stopped_is_repaired_and_one_in_line_is_not_written(
    instances: Instances,
    namespace: str,
    kube_client: KubeClient,
    passwords: PasswordLedger,
    mysql: MySQLServer,
) -> None:
    first = await instances.start_own(resync_period=0)
    try:
        cases, connection = ("kept", "edited", "deleted"), {"name": "{name}-conn"}
        names, secrets = await ready_users(
            kube_client, namespace, mysql, passwords, cases, connectionSecret=connection
        )
        templated = connection | {"templates": {"dsn": "mysql://{{ username }}@{{ host }}/restartdb"}}
        more = await ready_users(
            kube_client, namespace, mysql, passwords, ("tkept", "tedited"), connectionSecret=templated
        )
        names |= more[0]
        secrets |= more[1]
        written = {
            case: await wait_for_secret(kube_client, namespace, f"{name}-conn")
            for case, name in names.items()
        }

        first.stop.set()
        await stopped_within(SHUTDOWN_LIMIT, [first.task])
        # While no leader runs: one connection Secret edited by hand, another deleted.
        edit = {"stringData": {"password": "typed-by-hand", "host": "elsewhere.example", "extra": "x"}}
        edited = f"{names['edited']}-conn"
        await kube_client.patch(SECRETS, edited, edit, PatchType.MERGE, namespace=namespace)
        await kube_client.delete(SECRETS, f"{names['deleted']}-conn", namespace)
        dsn = {"stringData": {"dsn": "mysql://someone@elsewhere.example/restartdb"}}  # a template's key
        await kube_client.patch(
            SECRETS, f"{names['tedited']}-conn", dsn, PatchType.MERGE, namespace=namespace
        )
        before = converged_at_start()

        await restart(instances, first)

        host = written["kept"]["data"]["host"]

        def in_line(secret: dict[str, Any]) -> bool:
            return "extra" not in secret["data"] and secret["data"].get("host") == host

        repaired = await wait_for_secret(kube_client, namespace, edited, check=in_line, limit=60)
        assert repaired["data"] == written["edited"]["data"]
        await wait_for_secret(kube_client, namespace, f"{names['deleted']}-conn", limit=60)
        for case in ("edited", "deleted"):
            offered = await secret_password(kube_client, namespace, f"{names[case]}-conn")
            assert offered == secrets[case]
            assert can_log_in(mysql, names[case], offered)
        rendered = written["tedited"]["data"]["dsn"]
        await wait_for_secret(
            kube_client, namespace, f"{names['tedited']}-conn", check=lambda s: s["data"]["dsn"] == rendered
        )
        await eventually(
            lambda: converged_at_start() - before >= 2, timeout=60, interval=0.2, what="two found converged"
        )
        # Exactly the two left alone were skipped (one with a template, not rendered), their Secrets not
        # written.
        assert converged_at_start() - before == 2
        for case in ("kept", "tkept"):
            kept = await kube_client.get(SECRETS, f"{names[case]}-conn", namespace)
            assert kept["metadata"]["resourceVersion"] == written[case]["metadata"]["resourceVersion"]
    finally:
        forget_own()
