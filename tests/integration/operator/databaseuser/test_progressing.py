"""Pending work is Progressing, never a working account's Ready=False (issue 39): real API server and MySQL.

Templated DatabaseUsers of one namespace share a password Secret; their templates take about a second of
CPU each. Once all are Ready and settled, the Secret is edited: every one of them re-renders, one render in
flight per namespace, so the others are queued (``TemplatesPending``); on MySQL 9.7 each rotation also
retains the previous password for a grace period of 1 s (``RotationRetained`` until discarded). The test
records every version of the resources through a watch from the resourceVersion before the edit (the API
server's own history, not samples) and checks that Ready stayed True in each of them, that Progressing
went True with ``TemplatesPending`` and then False, and that the new password reached every connection
Secret.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.resources import SECRETS
from tests.integration.operator.support.builders import database_user, unique
from tests.integration.operator.support.kube import create_secret, wait_for_ready
from tests.integration.operator.support.operator import PasswordLedger, RunningOperator
from tests.integration.operator.support.wait import eventually

pytestmark = [pytest.mark.integration, pytest.mark.one_flavour, pytest.mark.timeout(600)]

USERS = 4
# About a second of Jinja2 loops (60**4 passes), bounded: it renders the password.
SLOW = "{% for a in L %}" * 4 + "{% endfor %}" * 4 + "{{ password }}"
SLOW = SLOW.replace(" L ", " '" + "x" * 60 + "' ")


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any]:
    """The condition of ``type_`` (empty when there is none)."""
    found = [c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == type_]
    return dict(found[0]) if found else {}


async def record_history(
    kube: KubeClient, namespace: str, resource_version: str, history: dict[str, list[dict[str, Any]]]
) -> None:
    """Append every version of the DatabaseUsers in ``history`` the watch delivers, in order."""
    response = await kube.watch(
        DATABASE_USERS, namespace, resource_version=resource_version, timeout_seconds=600
    )
    async with response:
        while line := await response.content.readline():
            event = json.loads(line)
            assert event["type"] != "ERROR", f"the watch failed: {event}"
            obj = event["object"]
            if event["type"] == "MODIFIED" and obj["metadata"]["name"] in history:
                history[obj["metadata"]["name"]].append(obj)


@contextlib.asynccontextmanager
async def watching(
    kube: KubeClient, namespace: str, names: list[str]
) -> AsyncIterator[dict[str, list[dict[str, Any]]]]:
    """Every version of ``names`` from now on, by name, while the block runs."""
    resource_version = (await kube.list(DATABASE_USERS, namespace))["metadata"]["resourceVersion"]
    history: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    task = asyncio.create_task(record_history(kube, namespace, resource_version, history))
    try:
        yield history
        if task.done():
            task.result()  # the watch ended early: say why
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def connection_password(kube: KubeClient, namespace: str, name: str) -> set[str]:
    """The passwords the connection Secret of ``name`` offers (its ``password`` key and its template)."""
    data = (await kube.get(SECRETS, f"{name}-db", namespace)).get("data") or {}
    return {base64.b64decode(data[key]).decode() for key in ("password", "slow") if key in data}


def settled(obj: dict[str, Any]) -> bool:
    """Ready=True and Progressing=False Settled, both of the object's generation."""
    generation = obj["metadata"]["generation"]
    ready, progressing = condition(obj, "Ready"), condition(obj, "Progressing")
    return (
        ready.get("status") == "True"
        and ready.get("observedGeneration") == generation
        and (progressing.get("status"), progressing.get("reason")) == ("False", "Settled")
        and progressing.get("observedGeneration") == generation
    )


async def test_an_edited_secret_is_progressing_while_ready_stays_true(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, passwords: PasswordLedger
) -> None:
    await create_secret(kube_client, namespace, "shared-pw", {"password": passwords.new()})
    names = [unique("tpl") for _ in range(USERS)]
    for name in names:
        spec: dict[str, Any] = {
            "connectionSecret": {"name": f"{name}-db", "templates": {"slow": SLOW}},
            "rotation": {"gracePeriod": "1s"},  # a DualPassword rotation's old password goes soon
        }
        await kube_client.create(DATABASE_USERS, database_user(name, "shared-pw", **spec), namespace)
    for name in names:
        await wait_for_ready(kube_client, namespace, name, limit=300)

    async def all_settled() -> bool:
        items = (await kube_client.list(DATABASE_USERS, namespace))["items"]
        assert all(settled(item) for item in items), [condition(i, "Progressing") for i in items]
        return True

    await eventually(all_settled, limit=300, interval=0.2, message="the first renders settled")

    new_password = passwords.new()
    async with watching(kube_client, namespace, names) as history:
        await kube_client.patch(
            SECRETS,
            "shared-pw",
            {"stringData": {"password": new_password}},
            PatchType.MERGE,
            namespace=namespace,
        )

        async def rendered_and_settled() -> bool:
            for name in names:
                offered = await connection_password(kube_client, namespace, name)
                assert offered == {new_password}, f"{name}: the connection Secret is not rendered yet"
                assert history[name], f"{name}: no status written yet"
                last = history[name][-1]
                shown = [condition(last, "Ready"), condition(last, "Progressing")]
                assert settled(last), f"{name}: not settled yet: {shown}"
            return True

        await eventually(
            rendered_and_settled, limit=300, interval=0.2, message="every render reached its Secret"
        )

    for name in names:
        readies = [condition(obj, "Ready") for obj in history[name]]
        assert all(ready.get("status") == "True" for ready in readies), f"{name}: Ready went {readies}"
    progress = {
        name: [
            (condition(obj, "Progressing").get("status"), condition(obj, "Progressing").get("reason"))
            for obj in objs
        ]
        for name, objs in history.items()
    }
    pending = [name for name, seen in progress.items() if ("True", "TemplatesPending") in seen]
    assert pending, f"no render was ever queued: {progress}"
    for name, seen in progress.items():
        assert seen[-1] == ("False", "Settled"), f"{name}: {seen}"
