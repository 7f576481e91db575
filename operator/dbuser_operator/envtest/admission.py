"""The finalizer policy (:mod:`dbuser_operator.api.finalizer_policy`) installed as the Helm chart installs it,
and waited for until the API server applies it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Any, Final

from kubernetes_asyncio import client

from dbuser_operator.api.finalizer_policy import API_VERSION, finalizer_policy
from dbuser_operator.api.v1alpha1.meta import GROUP, VERSION, target_finalizer
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.errors import Conflict, NotFound, Unavailable
from dbuser_operator.runtime.resources import Resource

_GROUP, _VERSION = API_VERSION.split("/")
POLICIES: Final = Resource(_GROUP, _VERSION, "mutatingadmissionpolicies", "MutatingAdmissionPolicy", False)
BINDINGS: Final = Resource(
    _GROUP, _VERSION, "mutatingadmissionpolicybindings", "MutatingAdmissionPolicyBinding", False
)
_PROBED: Final = Resource(GROUP, VERSION, "databases", "Database")
_EFFECTIVE_TIMEOUT: Final = 60.0  # seconds for the API server's policy informer to pick a new policy up


async def install_finalizer_policy(
    api: client.ApiClient,
    name: str,
    label: str,
    target: str,
    namespaces: Sequence[str] = (),
    *,
    probe_namespace: str = "default",
    finalizer: str | None = None,
) -> None:
    """Create (or replace) the policy and its binding; return once the API server puts the finalizer on a
    new resource of ``target`` in ``probe_namespace`` (a dry-run creation: nothing is stored).
    ``finalizer``: another one than the instance's (:func:`finalizer_policy`)."""
    kube = KubeClient(api)
    for obj in finalizer_policy(name, label, target, namespaces, finalizer=finalizer):
        resource = POLICIES if obj["kind"] == POLICIES.kind else BINDINGS
        try:
            await kube.create(resource, obj)
        except Conflict:
            current = await kube.get(resource, name)
            obj["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            await kube.replace(resource, name, obj)
    probe = {
        "apiVersion": _PROBED.api_version,
        "kind": _PROBED.kind,
        "metadata": {"generateName": "finalizer-policy-probe-", "labels": {label: target}},
        "spec": {"name": "finalizer_policy_probe"},
    }
    finalizer = finalizer or target_finalizer(target)
    async with asyncio.timeout(_EFFECTIVE_TIMEOUT):
        while finalizer not in await _created_finalizers(kube, probe, probe_namespace):  # noqa: ASYNC110
            await asyncio.sleep(0.1)  # a remote condition: the API server's policy cache


async def remove_finalizer_policy(api: client.ApiClient, name: str) -> None:
    """Delete the policy and its binding (either may be gone already)."""
    kube = KubeClient(api)
    for resource in (BINDINGS, POLICIES):
        with contextlib.suppress(NotFound):
            await kube.delete(resource, name)


async def _created_finalizers(kube: KubeClient, probe: dict[str, Any], namespace: str) -> list[str]:
    """The finalizers a new resource gets (none while its CRD is not served yet: a 503 for a moment)."""
    try:
        created = await kube.request("POST", _PROBED.path(namespace), query=[("dryRun", "All")], body=probe)
    except Unavailable:
        return []
    finalizers: list[str] = created["metadata"].get("finalizers") or []
    return finalizers
