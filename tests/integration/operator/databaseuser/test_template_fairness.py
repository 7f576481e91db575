"""One namespace's template flood does not stall another namespace (issue 28): real API server and MySQL.

A noisy namespace creates 40 DatabaseUsers whose connection-Secret templates each take about a second of
CPU to render, all naming one password Secret. While they render, one after the other, a quiet namespace's
plain DatabaseUser and one with a cheap template must go Ready; and again after one edit of the Secret the
noisy ones share (which re-renders them all). The promise is counted in renders, not in seconds (a busy
machine slows the flood and the quiet namespace alike, docs/credentials.md): the quiet resources are Ready
before half of the flood has rendered — they wait for neither the flood's renders nor its reconciles.
Before the renders were shared fairly, the quiet resources waited behind the whole flood (51 s and 65 s);
before the work queue was fair between namespaces, behind the flood's reconciles (24 s and 43 s on a busy
2-core machine).
"""

from __future__ import annotations

import asyncio
import base64
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client

from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.errors import NotFound
from dbuser_operator.runtime.resources import SECRETS
from tests.integration.operator.support.builders import database_user, unique
from tests.integration.operator.support.kube import create_secret, ready, wait_for_ready, wait_until_gone
from tests.integration.operator.support.operator import PasswordLedger, RunningOperator
from tests.integration.operator.support.wait import eventually

# The same on every MySQL flavour. The flood's renders run at nice 10 and share the machine: on one busier
# than a CPU hog's (other test runs beside this one) they take minutes, which the settle wait allows.
pytestmark = [pytest.mark.integration, pytest.mark.one_flavour, pytest.mark.timeout(1200)]

FLOOD = 40
# About a second of Jinja2 loops (70**4 passes), bounded: it renders one password.
LOOPS = "'" + "x" * 70 + "'"
EXPENSIVE = "{% for a in L %}" * 4 + "{% endfor %}" * 4 + "{{ password }}"
EXPENSIVE = EXPENSIVE.replace(" L ", f" {LOOPS} ")
CHEAP = "{{ username }}:{{ password }}"
QUIET_WAIT_LIMIT = 180.0  # seconds the test waits at all (a poll limit: the promise is counted in renders)


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


async def ready_after(kube: KubeClient, namespace: str, names: list[str]) -> float:
    """Seconds until every one of ``names`` is Ready (a figure to print: nothing asserts on it)."""
    started = time.monotonic()
    await asyncio.gather(*(wait_for_ready(kube, namespace, name, limit=QUIET_WAIT_LIMIT) for name in names))
    return time.monotonic() - started


async def rendered(kube: KubeClient, namespace: str, names: list[str], password: str) -> int:
    """How many of the flood's connection Secrets hold their template rendered over ``password``."""

    async def holds(name: str) -> bool:
        try:
            secret = await kube.get(SECRETS, f"{name}-db", namespace)
        except NotFound:
            return False
        value = (secret.get("data") or {}).get("slow")
        return value is not None and base64.b64decode(value).decode() == password

    return sum(await asyncio.gather(*(holds(name) for name in names)))


def pending(obj: dict[str, Any]) -> bool:
    """Whether the resource's render is queued (a Ready one stays Ready meanwhile: Progressing says it)."""
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Progressing" and c["reason"] == "TemplatesPending" for c in conditions)


async def settled(kube: KubeClient, namespace: str, count: int, limit: float = 600) -> None:
    """Poll until ``count`` resources of ``namespace`` have rendered: Ready with no render queued, or a
    render past the CPU bound (a slower processor than this project's: TemplateInvalid)."""

    async def rendered() -> bool:
        items = (await kube.list(DATABASE_USERS, namespace))["items"]
        reasons = [((ready(item) or {}).get("reason"), pending(item)) for item in items]
        done = sum(reason in {"AccountReady", "TemplateInvalid"} and not queued for reason, queued in reasons)
        assert done >= count, f"{done} of {count} rendered"
        return True

    await eventually(rendered, limit=limit, interval=0.5, message=f"the flood in {namespace} settled")


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
    flood_password = passwords.new()
    await create_secret(kube_client, namespace, "flood-pw", {"password": flood_password})
    await create_secret(kube_client, quiet_namespace, "quiet-pw", {"password": passwords.new()})
    warm = await create_quiet(kube_client, quiet_namespace, "quiet-pw")  # the renderer has started
    await ready_after(kube_client, quiet_namespace, warm)

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
    during_creation = await ready_after(
        kube_client, quiet_namespace, await create_quiet(kube_client, quiet_namespace, "quiet-pw")
    )
    rendered_during_creation = await rendered(kube_client, namespace, noisy, flood_password)

    await settled(kube_client, namespace, len(noisy))  # the flood has rendered once
    flood_password = passwords.new()
    await kube_client.patch(
        SECRETS,
        "flood-pw",
        {"stringData": {"password": flood_password}},
        PatchType.MERGE,
        namespace=namespace,
    )
    await asyncio.sleep(1.0)  # every noisy resource is rendering again
    after_edit = await ready_after(
        kube_client, quiet_namespace, await create_quiet(kube_client, quiet_namespace, "quiet-pw")
    )
    rendered_after_edit = await rendered(kube_client, namespace, noisy, flood_password)

    print(
        f"quiet namespace Ready: {during_creation:.2f} s into the flood ({rendered_during_creation} of "
        f"{FLOOD} rendered), {after_edit:.2f} s after an edit ({rendered_after_edit} re-rendered)"
    )
    assert rendered_during_creation < FLOOD // 2, (
        f"the quiet namespace was Ready only once {rendered_during_creation} of {FLOOD} renders were done"
    )
    assert rendered_after_edit < FLOOD // 2, (
        f"after the edit, the quiet namespace was Ready only once {rendered_after_edit} renders were done"
    )
    await settled(kube_client, namespace, len(noisy))
    await asyncio.gather(*(kube_client.delete(DATABASE_USERS, name, namespace) for name in noisy))
    await asyncio.gather(*(wait_until_gone(kube_client, namespace, name, limit=120) for name in noisy))


def test_the_expensive_template_is_bounded_but_slow() -> None:
    """The flood's template renders within the renderer's CPU bound, and takes a noticeable CPU time."""
    from dbuser_operator.credentials.templates import DEFAULT_TIMEOUT, render_all  # noqa: PLC0415

    values = {"username": "u", "password": "secret-pw", "host": "h", "port": "1"}
    values |= {"DATABASE_URL": "d", "JDBC_URL": "j", "database": ""}
    started = time.process_time()
    assert render_all({"slow": EXPENSIVE}, values, 64 * 1024) == {"slow": "secret-pw"}
    assert 0.2 < time.process_time() - started < DEFAULT_TIMEOUT
