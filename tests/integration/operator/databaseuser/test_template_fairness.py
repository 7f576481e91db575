"""One namespace's template flood does not stall another namespace (issue 28): real API server and MySQL.

A noisy namespace creates 40 DatabaseUsers whose connection-Secret templates each take about a second to
render (bounded: under the 2 s limit on an idle machine), all naming one password Secret. While they
render, a quiet namespace's plain DatabaseUser and one with a cheap template must go Ready within
``QUIET_LIMIT``; and again after one edit of the Secret the noisy ones share (which re-renders them all).
Before the renders were shared fairly, the quiet resources waited behind the whole flood (51 s and 65 s).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client

from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.resources import SECRETS
from tests.integration.operator.support.builders import database_user, unique
from tests.integration.operator.support.kube import create_secret, ready, wait_for_ready, wait_until_gone
from tests.integration.operator.support.operator import PasswordLedger, RunningOperator

pytestmark = pytest.mark.integration

FLOOD = 40
# About a second of Jinja2 loops (70**4 passes), bounded: it renders one password.
LOOPS = "'" + "x" * 70 + "'"
EXPENSIVE = "{% for a in L %}" * 4 + "{% endfor %}" * 4 + "{{ password }}"
EXPENSIVE = EXPENSIVE.replace(" L ", f" {LOOPS} ")
CHEAP = "{{ username }}:{{ password }}"
# Seconds a quiet namespace's resources may take to become Ready during the flood: a plain pass takes well
# under a second, a cheap render a few milliseconds, plus a 2-core machine shared with other work.
QUIET_LIMIT = 8.0


@pytest.fixture
async def quiet_namespace(kube_api: client.ApiClient) -> AsyncIterator[str]:
    """A second fresh namespace: the tenant that does not flood."""
    name = f"quiet-{uuid.uuid4().hex[:10]}"
    core = client.CoreV1Api(kube_api)
    await core.create_namespace(
        client.V1Namespace(metadata=client.V1ObjectMeta(name=name)), _request_timeout=30
    )
    yield name
    await core.delete_namespace(name, _request_timeout=30)


async def ready_within(kube: KubeClient, namespace: str, names: list[str]) -> float:
    """Seconds until every one of ``names`` is Ready (fails past 60 s)."""
    started = time.monotonic()
    await asyncio.gather(*(wait_for_ready(kube, namespace, name, limit=60) for name in names))
    return time.monotonic() - started


async def settled(kube: KubeClient, namespace: str, count: int, limit: float = 180) -> None:
    """Poll until ``count`` resources of ``namespace`` have rendered: Ready, or a render past the time bound
    (a loaded machine can slow one over 2 s: TemplateInvalid)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        items = (await kube.list(DATABASE_USERS, namespace))["items"]
        reasons = [(ready(item) or {}).get("reason") for item in items]
        if sum(reason in {"AccountReady", "TemplateInvalid"} for reason in reasons) >= count:
            return
        await asyncio.sleep(0.5)
    raise AssertionError(f"the flood in {namespace} did not settle within {limit:g} s")


async def create_quiet(kube: KubeClient, namespace: str, secret: str) -> list[str]:
    """A plain DatabaseUser and one with a cheap template; their names."""
    plain, templated = unique("quiet"), unique("quiet-tpl")
    cheap: dict[str, Any] = {"connectionSecret": {"name": f"{templated}-db", "templates": {"dsn": CHEAP}}}
    await kube.create(DATABASE_USERS, database_user(plain, secret), namespace)
    await kube.create(DATABASE_USERS, database_user(templated, secret, **cheap), namespace)
    return [plain, templated]


async def test_a_template_flood_does_not_stall_another_namespace(
    operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    quiet_namespace: str,
    passwords: PasswordLedger,
) -> None:
    await create_secret(kube_client, namespace, "flood-pw", {"password": passwords.new()})
    await create_secret(kube_client, quiet_namespace, "quiet-pw", {"password": passwords.new()})
    warm = await create_quiet(kube_client, quiet_namespace, "quiet-pw")  # the renderer has started
    await ready_within(kube_client, quiet_namespace, warm)

    noisy = [unique("flood") for _ in range(FLOOD)]
    await asyncio.gather(
        *(
            kube_client.create(
                DATABASE_USERS,
                database_user(
                    name,
                    "flood-pw",
                    connectionSecret={"name": f"{name}-db", "templates": {"slow": EXPENSIVE}},
                ),
                namespace,
            )
            for name in noisy
        )
    )
    await asyncio.sleep(1.0)  # the flood is under way
    during_creation = await ready_within(
        kube_client, quiet_namespace, await create_quiet(kube_client, quiet_namespace, "quiet-pw")
    )

    await settled(kube_client, namespace, len(noisy))  # the flood has rendered once
    await kube_client.patch(
        SECRETS,
        "flood-pw",
        {"stringData": {"password": passwords.new()}},
        PatchType.MERGE,
        namespace=namespace,
    )
    await asyncio.sleep(1.0)  # every noisy resource is rendering again
    after_edit = await ready_within(
        kube_client, quiet_namespace, await create_quiet(kube_client, quiet_namespace, "quiet-pw")
    )

    print(f"quiet namespace Ready: {during_creation:.2f} s in the flood, {after_edit:.2f} s after an edit")
    assert during_creation < QUIET_LIMIT, f"quiet namespace Ready after {during_creation:.1f} s"
    assert after_edit < QUIET_LIMIT, f"quiet namespace Ready after {after_edit:.1f} s (after the edit)"
    await asyncio.gather(*(kube_client.delete(DATABASE_USERS, name, namespace) for name in noisy))
    await asyncio.gather(*(wait_until_gone(kube_client, namespace, name, limit=120) for name in noisy))


def test_the_expensive_template_is_bounded_but_slow() -> None:
    """The flood's template renders, and takes a noticeable time."""
    from dbuser_operator.credentials.templates import render_all  # noqa: PLC0415

    values = {"username": "u", "password": "secret-pw", "host": "h", "port": "1"}
    values |= {"DATABASE_URL": "d", "JDBC_URL": "j", "database": ""}
    started = time.monotonic()
    assert render_all({"slow": EXPENSIVE}, values, 64 * 1024) == {"slow": "secret-pw"}
    assert time.monotonic() - started > 0.2  # under 2 s on an idle machine; slower under load
