"""The one reconcile frame every kind uses, with a toy kind: parse or InvalidSpec, ensure or finalize,
Ready, the status write only when it changed, Events after it, retry only where the error asks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, cast

import pytest
from pydantic import BaseModel

from dbuser_operator.api.v1alpha1 import Condition
from dbuser_operator.controllers.kit.errors import ConditionError
from dbuser_operator.controllers.kit.freshness import STALE_RETRY, WrittenVersions
from dbuser_operator.controllers.kit.reconcile import FrameParts, Pass, Reconciler
from dbuser_operator.controllers.kit.scope import Scope
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.controller import Result
from dbuser_operator.runtime.errors import NotFound
from dbuser_operator.runtime.events import EventRecorder
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.resources import ObjectKey, Resource

SCOPE = Scope("example.com/target", "main")
KEY = ObjectKey("team-a", "toy")


class ToyStatus(BaseModel):
    conditions: list[Condition] = []
    observed_generation: int | None = None

    def to_api(self, current: dict[str, Any] | None) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


class ToySpec(BaseModel):
    size: int


@dataclass(kw_only=True)
class ToyPass(Pass[ToyStatus]):
    spec: ToySpec | None = None


class FakeKube:
    def __init__(self) -> None:
        self.patches: list[dict[str, Any]] = []

    async def patch(self, resource: Resource, name: str, body: dict[str, Any], *args: Any, **kw: Any) -> Any:
        self.patches.append(body)
        return {"metadata": {"name": name, "namespace": KEY.namespace, "resourceVersion": "2"}}

    async def get(self, resource: Resource, name: str, namespace: str) -> Any:
        raise NotFound(404, "Not Found")


class FakeRecorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def emit(self, obj: dict[str, Any], type_: str, reason: str, message: str) -> None:
        self.events.append((type_, reason, message))


class FakeInformer:
    def __init__(self, obj: dict[str, Any] | None) -> None:
        self.obj = obj

    def get(self, key: ObjectKey) -> dict[str, Any] | None:
        return self.obj


class ToyReconciler(Reconciler[ToyPass]):
    resource: ClassVar[Resource] = Resource("example.com", "v1", "toys", "Toy")

    def __init__(self, obj: dict[str, Any], failure: ConditionError | None = None) -> None:
        self.kube_fake, self.recorder_fake = FakeKube(), FakeRecorder()
        informer = cast(Informer, FakeInformer(obj))
        parts = FrameParts(cast(KubeClient, self.kube_fake), cast(EventRecorder, self.recorder_fake), SCOPE)
        super().__init__(parts, informer)
        self.failure = failure
        self.finalized = 0

    def parse(self, obj: dict[str, Any], *, read_only: bool = False) -> ToyPass:
        return ToyPass(obj=obj, status=ToyStatus(), spec=ToySpec.model_validate(obj["spec"]))

    def unparsed(self, obj: dict[str, Any]) -> ToyPass:
        return ToyPass(obj=obj, status=ToyStatus())

    async def ensure(self, ctx: ToyPass) -> Result:
        ctx.event("Normal", "Grown", "grew")
        if self.failure is not None:
            raise self.failure
        self.set_ready(ctx, "True", "ToyReady", "the toy matches the spec")
        await self.write(ctx)
        return Result(requeue_after=5.0)

    async def finalize(self, ctx: ToyPass) -> None:
        self.finalized += 1
        ctx.event("Normal", "Gone", "dropped")


def toy(spec: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    meta = {"name": KEY.name, "namespace": KEY.namespace, "resourceVersion": "1", "generation": 3, **metadata}
    return {"metadata": meta, "spec": spec}


async def test_a_pass_sets_ready_writes_status_then_emits_its_events() -> None:
    reconciler = ToyReconciler(toy({"size": 1}))
    assert await reconciler(KEY) == Result(requeue_after=5.0)
    (patch,) = reconciler.kube_fake.patches
    (ready,) = patch["status"]["conditions"]
    assert (ready["type"], ready["status"], ready["reason"]) == ("Ready", "True", "ToyReady")
    assert patch["status"]["observed_generation"] == 3
    assert patch["metadata"] == {"resourceVersion": "1"}  # guarded by the version it was computed from
    assert reconciler.recorder_fake.events == [("Normal", "Grown", "grew")]  # becoming Ready adds none


async def test_a_spec_the_models_reject_is_invalid_spec_and_not_retried() -> None:
    reconciler = ToyReconciler(toy({"size": "large"}))
    assert await reconciler(KEY) == Result()
    (ready,) = reconciler.kube_fake.patches[0]["status"]["conditions"]
    assert (ready["status"], ready["reason"]) == ("False", "InvalidSpec")
    assert ready["message"].startswith("size: ")
    assert reconciler.recorder_fake.events[0][:2] == ("Warning", "InvalidSpec")


async def test_deleting_a_resource_whose_spec_does_not_parse_lets_go_of_it() -> None:
    """Nothing is undone (what the spec named is unknown), but the finalizer comes off: deletion ends."""
    deleting = {"deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": [SCOPE.finalizer, "other/keep"]}
    reconciler = ToyReconciler(toy({"size": "large"}, **deleting))
    assert await reconciler(KEY) == Result()
    assert reconciler.finalized == 0
    (patch,) = reconciler.kube_fake.patches
    assert SCOPE.finalizer in str(patch)
    assert "other/keep" not in str(patch)
    ((type_, reason, message),) = reconciler.recorder_fake.events
    assert (type_, reason) == ("Warning", "InvalidSpec")
    assert message.startswith("deleted with a spec that does not parse (size: ")
    assert "let go" in message

    foreign = ToyReconciler(toy({"size": "large"}, **{**deleting, "finalizers": ["other/keep"]}))
    await foreign(KEY)
    assert all("remove" not in str(patch) for patch in foreign.kube_fake.patches)


async def test_a_condition_error_is_reported_and_retried_only_if_it_asks() -> None:
    permanent = ToyReconciler(toy({"size": 1}), ConditionError("Refused", "no", retry=False))
    assert await permanent(KEY) == Result()
    assert ("Warning", "Refused", "no") in permanent.recorder_fake.events
    assert ("Normal", "Grown", "grew") in permanent.recorder_fake.events  # what the pass did, said too

    transient = ToyReconciler(toy({"size": 1}), ConditionError("Unreachable", "later"))
    with pytest.raises(ConditionError):
        await transient(KEY)
    (ready,) = transient.kube_fake.patches[0]["status"]["conditions"]
    assert (ready["status"], ready["reason"]) == ("False", "Unreachable")


async def test_deletion_finalizes_only_what_this_instance_holds() -> None:
    deleting = {"deletionTimestamp": "2026-01-01T00:00:00Z"}
    held = ToyReconciler(toy({"size": 1}, finalizers=[SCOPE.finalizer], **deleting))
    await held(KEY)
    assert held.finalized == 1
    assert held.recorder_fake.events == [("Normal", "Gone", "dropped")]

    foreign = ToyReconciler(toy({"size": 1}, finalizers=["example.com/other"], **deleting))
    await foreign(KEY)
    assert foreign.finalized == 0
    assert foreign.kube_fake.patches == []
    assert foreign.recorder_fake.events == []


async def test_normal_events_merge_into_one_where_the_kind_says_so() -> None:
    reconciler = ToyReconciler(toy({"size": 1}))
    reconciler.one_normal_event = True  # type: ignore[misc]
    ctx = reconciler.parse(toy({"size": 1}))
    ctx.event("Normal", "First", "a")
    ctx.event("Warning", "Odd", "b")
    ctx.event("Normal", "Second", "c")
    reconciler.record_events(ctx)
    assert reconciler.recorder_fake.events == [("Normal", "First", "a; c"), ("Warning", "Odd", "b")]
    assert ctx.events == []


async def test_a_pass_waits_while_the_cache_holds_a_version_the_last_pass_replaced() -> None:
    """The write turned version 1 into 2: a pass that still reads 1 from the cache (the watch has not
    delivered the write) does nothing and looks again soon; once the cache has 2 (or anything newer), or
    the object is gone, it is trusted again."""
    reconciler = ToyReconciler(toy({"size": 1}))
    await reconciler(KEY)
    assert len(reconciler.kube_fake.patches) == 1
    assert await reconciler(KEY) == Result(requeue_after=STALE_RETRY)  # still version 1
    assert len(reconciler.kube_fake.patches) == 1
    assert reconciler.recorder_fake.events == [("Normal", "Grown", "grew")]

    cast(FakeInformer, reconciler.informer).obj = toy({"size": 1}, resourceVersion="2")
    assert await reconciler(KEY) == Result(requeue_after=5.0)
    assert len(reconciler.written) == 0  # forgotten once the cache caught up

    cast(FakeInformer, reconciler.informer).obj = toy({"size": 1}, resourceVersion="7")
    await reconciler(KEY)  # wrote 7 into 2 (the fake's answer)
    assert len(reconciler.written) == 1
    cast(FakeInformer, reconciler.informer).obj = None  # deleted: the key is forgotten
    assert await reconciler(KEY) == Result()
    assert len(reconciler.written) == 0


def test_a_pass_records_every_version_its_writes_replaced() -> None:
    """A finalizer added (1 -> 2), then status written (2 -> 3): the cache may show 1 or 2 meanwhile."""
    ctx = ToyPass(obj=toy({"size": 1}), status=ToyStatus())
    ctx.obj = toy({"size": 1}, resourceVersion="2")
    ctx.obj = toy({"size": 1}, resourceVersion="2")  # the same version again: nothing replaced
    ctx.obj = toy({"size": 1}, resourceVersion="3")
    assert ctx.replaced == ["1", "2"]


def test_written_versions_trust_the_cache_again_after_their_patience() -> None:
    written = WrittenVersions(patience=0.0)
    written.record(KEY, ["1"])
    assert not written.stale(KEY, "1")  # a cache that never catches up never holds the key up for good
    assert len(written) == 0
    written.record(KEY, ["1"])
    written.record(ObjectKey("team-a", "other"), [])  # a later write sweeps what is past its patience
    assert len(written) == 0
