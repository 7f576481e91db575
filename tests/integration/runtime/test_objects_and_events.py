"""Finalizers, status writes and events against the real API server, on a throwaway Widget CRD."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from dbuser_operator.envtest import install_crds
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.events import EventRecorder
from dbuser_operator.runtime.objects import ConflictError, add_finalizer, remove_finalizer, update_status
from dbuser_operator.runtime.resources import EVENTS, NAMESPACES, Resource
from tests.conftest import REPO, Runner

pytestmark = pytest.mark.integration

WIDGETS = Resource("envtest.dbuser-operator.dev", "v1", "widgets", "Widget")
FINALIZER = "dbuser-operator.dev/cleanup"
OTHER_FINALIZER = "example.com/keep-me"


@pytest.fixture(scope="module")
async def widget_crd(kube_api: client.ApiClient) -> None:
    await install_crds(kube_api, REPO / "tests/data/widget-crd.yaml")


class CountingClient(KubeClient):
    """A client that counts its own requests by method: an operator running in the same process (the
    operator tests' session instance) sends requests of its own, which the process-wide
    ``rest_client_requests_total`` would count as well."""

    def __init__(self, api: client.ApiClient) -> None:
        super().__init__(api, timeout=30)
        self.sent: Counter[str] = Counter()

    async def request(self, method: str, path: str, **options: Any) -> dict[str, Any]:
        self.sent[method] += 1
        return await super().request(method, path, **options)


@pytest.fixture
def kube_client(kube_api: client.ApiClient) -> CountingClient:
    return CountingClient(kube_api)


@pytest.fixture
def make_widget(widget_crd: None, kube_client: KubeClient, namespace: str) -> Callable[..., Any]:
    async def make(**metadata: Any) -> dict[str, Any]:
        body = {
            "apiVersion": WIDGETS.api_version,
            "kind": WIDGETS.kind,
            "metadata": {"name": f"widget-{uuid.uuid4().hex[:8]}", **metadata},
            "spec": {"size": 1},
        }
        return await kube_client.create(WIDGETS, body, namespace)

    return make


def requests_sent(kube: KubeClient, method: str | None = None) -> int:
    """The requests ``kube`` (a :class:`CountingClient`) sent so far (of ``method``, if given)."""
    assert isinstance(kube, CountingClient)
    return kube.sent[method] if method else sum(kube.sent.values())


async def events_about(kube: KubeClient, namespace: str, obj: dict[str, Any]) -> list[dict[str, Any]]:
    listed = await kube.list(EVENTS, namespace)
    uid = obj["metadata"]["uid"]
    items: list[dict[str, Any]] = listed["items"]
    return [event for event in items if event["involvedObject"].get("uid") == uid]


# Finalizers


async def test_add_then_remove_a_finalizer(kube_client: KubeClient, make_widget: Callable[..., Any]) -> None:
    widget = await make_widget()

    added = await add_finalizer(kube_client, WIDGETS, widget, FINALIZER)
    assert added["metadata"]["finalizers"] == [FINALIZER]
    stored = await kube_client.get(WIDGETS, widget["metadata"]["name"], widget["metadata"]["namespace"])
    assert stored["metadata"]["finalizers"] == [FINALIZER]

    removed = await remove_finalizer(kube_client, WIDGETS, added, FINALIZER)
    assert "finalizers" not in removed["metadata"]
    stored = await kube_client.get(WIDGETS, widget["metadata"]["name"], widget["metadata"]["namespace"])
    assert "finalizers" not in stored["metadata"]


async def test_another_controllers_finalizer_is_preserved(
    kube_client: KubeClient, make_widget: Callable[..., Any]
) -> None:
    widget = await make_widget(finalizers=[OTHER_FINALIZER])

    added = await add_finalizer(kube_client, WIDGETS, widget, FINALIZER)
    assert added["metadata"]["finalizers"] == [OTHER_FINALIZER, FINALIZER]

    removed = await remove_finalizer(kube_client, WIDGETS, added, FINALIZER)
    assert removed["metadata"]["finalizers"] == [OTHER_FINALIZER]

    await remove_finalizer(kube_client, WIDGETS, removed, OTHER_FINALIZER)  # let the namespace go


async def test_several_finalizers_are_removed_in_one_request(
    kube_client: KubeClient, make_widget: Callable[..., Any]
) -> None:
    legacy = "dbuser-operator.dev/legacy"
    widget = await make_widget(finalizers=[FINALIZER, OTHER_FINALIZER, legacy])
    before = requests_sent(kube_client)

    removed = await remove_finalizer(kube_client, WIDGETS, widget, FINALIZER, legacy)

    assert removed["metadata"]["finalizers"] == [OTHER_FINALIZER]
    assert requests_sent(kube_client) == before + 1
    await remove_finalizer(kube_client, WIDGETS, removed, OTHER_FINALIZER)  # let the namespace go


async def test_no_request_when_the_finalizers_are_already_right(
    kube_client: KubeClient, make_widget: Callable[..., Any]
) -> None:
    widget = await add_finalizer(kube_client, WIDGETS, await make_widget(), FINALIZER)
    before = requests_sent(kube_client)

    assert await add_finalizer(kube_client, WIDGETS, widget, FINALIZER) is widget
    cleaned = await remove_finalizer(kube_client, WIDGETS, widget, FINALIZER)
    assert await remove_finalizer(kube_client, WIDGETS, cleaned, FINALIZER) is cleaned

    assert requests_sent(kube_client) == before + 1


@pytest.mark.parametrize("change", ["add", "remove"])
async def test_a_stale_object_is_a_conflict_and_changes_nothing(
    kube_client: KubeClient, make_widget: Callable[..., Any], change: str
) -> None:
    widget = await make_widget(finalizers=[FINALIZER] if change == "remove" else [OTHER_FINALIZER])
    name, namespace = widget["metadata"]["name"], widget["metadata"]["namespace"]
    newer = await kube_client.patch(
        WIDGETS, name, {"metadata": {"labels": {"touched": "yes"}}}, PatchType.MERGE, namespace=namespace
    )

    write = add_finalizer if change == "add" else remove_finalizer

    with pytest.raises(ConflictError) as raised:
        await write(kube_client, WIDGETS, widget, FINALIZER)

    assert raised.value.key == (namespace, name)
    assert raised.value.cause.status in {409, 422}
    stored = await kube_client.get(WIDGETS, name, namespace)
    assert stored["metadata"]["resourceVersion"] == newer["metadata"]["resourceVersion"]
    assert stored["metadata"]["finalizers"] == widget["metadata"]["finalizers"]
    await kube_client.patch(
        WIDGETS, name, {"metadata": {"finalizers": None}}, PatchType.MERGE, namespace=namespace
    )


async def test_an_invalid_finalizer_is_not_a_conflict(
    kube_client: KubeClient, make_widget: Callable[..., Any]
) -> None:
    widget = await make_widget()

    with pytest.raises(ApiException) as raised:
        await add_finalizer(kube_client, WIDGETS, widget, "not a valid finalizer!")

    assert not isinstance(raised.value, ConflictError)
    assert raised.value.status == 422


# Status


async def test_update_status_writes_once(kube_client: KubeClient, make_widget: Callable[..., Any]) -> None:
    widget = await make_widget()
    status = {"phase": "Ready", "conditions": [{"type": "Ready", "status": "True"}]}

    patches = requests_sent(kube_client, "PATCH")
    updated = await update_status(kube_client, WIDGETS, widget, status)
    assert updated is not None
    assert updated["status"] == status
    assert updated["metadata"]["generation"] == widget["metadata"]["generation"]  # status only
    assert requests_sent(kube_client, "PATCH") == patches + 1

    everything = requests_sent(kube_client)
    assert await update_status(kube_client, WIDGETS, updated, json.loads(json.dumps(status))) is None
    assert requests_sent(kube_client) == everything


async def test_update_status_removes_fields_it_no_longer_has(
    kube_client: KubeClient, make_widget: Callable[..., Any]
) -> None:
    widget = await make_widget()
    first = await update_status(
        kube_client, WIDGETS, widget, {"phase": "Pending", "detail": {"a": 1, "b": 2}}
    )
    assert first is not None

    second = await update_status(kube_client, WIDGETS, first, {"detail": {"a": 1}, "ready": True})

    assert second is not None
    assert second["status"] == {"detail": {"a": 1}, "ready": True}


async def test_update_status_does_not_touch_the_spec(
    kube_client: KubeClient, make_widget: Callable[..., Any]
) -> None:
    widget = await make_widget()
    widget["spec"]["size"] = 5  # a local change that must not be written

    updated = await update_status(kube_client, WIDGETS, widget, {"phase": "Ready"})

    assert updated is not None
    assert updated["spec"] == {"size": 1}


# Events


async def test_identical_events_are_aggregated(
    kube_client: KubeClient, make_widget: Callable[..., Any], namespace: str, kubectl: Runner
) -> None:
    widget = await make_widget()
    recorder = EventRecorder(kube_client, "dbuser-operator", host="test-host")

    for _ in range(3):
        await recorder.event(widget, "Normal", "Created", "the account exists")
    await recorder.event(widget, "Warning", "Created", "the account exists")  # another type
    await recorder.event(widget, "Normal", "Created", "the account was changed")  # another message

    events = await events_about(kube_client, namespace, widget)
    assert sorted((e["type"], e["message"], e["count"]) for e in events) == [
        ("Normal", "the account exists", 3),
        ("Normal", "the account was changed", 1),
        ("Warning", "the account exists", 1),
    ]
    aggregated = next(e for e in events if e["count"] == 3)
    assert aggregated["metadata"]["name"].startswith(widget["metadata"]["name"] + ".")
    assert len(aggregated["metadata"]["name"].rsplit(".", 1)[1]) == 16
    assert aggregated["involvedObject"] == {
        "apiVersion": WIDGETS.api_version,
        "kind": "Widget",
        "name": widget["metadata"]["name"],
        "namespace": namespace,
        "uid": widget["metadata"]["uid"],
        "resourceVersion": widget["metadata"]["resourceVersion"],
    }
    assert aggregated["source"] == {"component": "dbuser-operator", "host": "test-host"}
    assert aggregated["reportingComponent"] == "dbuser-operator"
    assert aggregated["firstTimestamp"] <= aggregated["lastTimestamp"]

    seen = json.loads(kubectl("get", "events", "-n", namespace, "-o", "json").stdout)["items"]
    counts = {(e["type"], e["reason"], e["message"]): e["count"] for e in seen}
    assert counts == {
        ("Normal", "Created", "the account exists"): 3,
        ("Warning", "Created", "the account exists"): 1,
        ("Normal", "Created", "the account was changed"): 1,
    }


async def test_concurrent_identical_events_are_aggregated(
    kube_client: KubeClient, make_widget: Callable[..., Any], namespace: str
) -> None:
    widget = await make_widget()
    recorder = EventRecorder(kube_client, "dbuser-operator")

    await asyncio.gather(*(recorder.event(widget, "Normal", "Synced", "in sync") for _ in range(5)))

    (event,) = await events_about(kube_client, namespace, widget)
    assert event["count"] == 5


async def test_the_cache_is_bounded(
    kube_client: KubeClient, make_widget: Callable[..., Any], namespace: str
) -> None:
    widget = await make_widget()
    recorder = EventRecorder(kube_client, "dbuser-operator", cache_size=1)

    for message in ("first", "second", "first"):
        await recorder.event(widget, "Normal", "Synced", message)

    events = await events_about(kube_client, namespace, widget)
    assert sorted((e["message"], e["count"]) for e in events) == [("first", 1), ("first", 1), ("second", 1)]


async def test_an_expired_event_is_created_again(
    kube_client: KubeClient, make_widget: Callable[..., Any], namespace: str
) -> None:
    widget = await make_widget()
    recorder = EventRecorder(kube_client, "dbuser-operator")
    await recorder.event(widget, "Warning", "Failed", "boom")
    await recorder.event(widget, "Warning", "Failed", "boom")
    (first,) = await events_about(kube_client, namespace, widget)
    await kube_client.delete(EVENTS, first["metadata"]["name"], namespace)

    await recorder.event(widget, "Warning", "Failed", "boom")

    (second,) = await events_about(kube_client, namespace, widget)
    assert second["metadata"]["name"] != first["metadata"]["name"]
    assert second["count"] == 1


async def test_a_long_message_is_truncated(
    kube_client: KubeClient, make_widget: Callable[..., Any], namespace: str
) -> None:
    widget = await make_widget()

    await EventRecorder(kube_client, "dbuser-operator").event(widget, "Normal", "Long", "x" * 5000)

    (event,) = await events_about(kube_client, namespace, widget)
    assert event["message"] == "x" * 1024


async def test_events_about_cluster_scoped_objects_go_to_default(
    kube_client: KubeClient, namespace: str
) -> None:
    the_namespace = await kube_client.get(NAMESPACES, namespace)

    await EventRecorder(kube_client, "dbuser-operator").event(the_namespace, "Normal", "Seen", "hello")

    (event,) = await events_about(kube_client, "default", the_namespace)
    assert event["involvedObject"]["kind"] == "Namespace"
    assert "namespace" not in event["involvedObject"]


async def test_an_api_failure_is_not_raised(kube_client: KubeClient) -> None:
    ghost = {
        "apiVersion": WIDGETS.api_version,
        "kind": "Widget",
        "metadata": {"name": "ghost", "namespace": f"missing-{uuid.uuid4().hex[:8]}", "uid": "u"},
    }
    recorder = EventRecorder(kube_client, "dbuser-operator")
    before = requests_sent(kube_client, "POST")

    await recorder.event(ghost, "Warning", "Failed", "the namespace does not exist")

    assert requests_sent(kube_client, "POST") == before + 1


async def test_emitted_events_are_written_in_the_background_and_aggregate(
    kube_client: KubeClient, make_widget: Callable[..., Any]
) -> None:
    widget = await make_widget()
    recorder = EventRecorder(kube_client, "emit-test")
    for _ in range(3):
        recorder.emit(widget, "Normal", "Emitted", "in the background")  # returns at once
    recorder.emit(widget, "Warning", "Other", "a different one")
    await recorder.flush()
    events = await events_about(kube_client, widget["metadata"]["namespace"], widget)
    counts = {event["reason"]: event["count"] for event in events}
    assert counts == {"Emitted": 3, "Other": 1}
    with pytest.raises(ValueError, match="Normal or Warning"):
        recorder.emit(widget, "Error", "Bad", "not a type")  # type: ignore[arg-type]


async def test_emitted_events_about_many_objects_aggregate_per_object(
    kube_client: KubeClient, make_widget: Callable[..., Any], namespace: str
) -> None:
    widgets = [await make_widget() for _ in range(8)]
    recorder = EventRecorder(kube_client, "emit-test", writers=4)

    for reason in ("Synced", "Changed", "Synced", "Synced"):
        for widget in widgets:
            recorder.emit(widget, "Normal", reason, "the same message")
    await recorder.close()

    listed = (await kube_client.list(EVENTS, namespace))["items"]
    counts = {(e["involvedObject"]["uid"], e["reason"]): e["count"] for e in listed}
    assert len(listed) == len(counts)  # one Event per object and reason
    assert counts == {
        (widget["metadata"]["uid"], reason): count
        for widget in widgets
        for reason, count in (("Synced", 3), ("Changed", 1))
    }


async def test_a_burst_of_emitted_events_is_all_written(kube_client: KubeClient, namespace: str) -> None:
    recorder = EventRecorder(kube_client, "burst-test")
    names = [f"burst-{n}" for n in range(2000)]  # more than the 1024 events that once could wait

    for name in names:
        involved = {
            "apiVersion": WIDGETS.api_version,
            "kind": "Widget",
            "metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}"},
        }
        recorder.emit(involved, "Normal", "Burst", f"about {name}")  # none dropped, though none written yet
    await recorder.flush()
    await recorder.close()

    listed = (await kube_client.list(EVENTS, namespace))["items"]
    assert sorted(e["involvedObject"]["name"] for e in listed) == sorted(names)
    assert {e["count"] for e in listed} == {1}
