"""The MutatingAdmissionPolicy that has the API server put an instance's finalizer on its new resources.

Every ``DatabaseUser``, ``DatabaseRole`` and ``Database`` an instance serves carries its finalizer before
anything is done for it. Without this policy the first pass adds it with a patch of its own: one API write
(an etcd write, a watch event to every watcher, an audit entry) per new resource. With it the API server
adds it at creation, in the same write, and the first pass writes only its status. The policy selects what
the instance's informers select (the target label with its value, the watched namespaces) and only creations:
the operator's own patches that take the finalizer off must not put it back. It fails open
(``failurePolicy: Ignore``): a resource created without the finalizer gets it from the first pass, as
before, so a cluster without the policy (Kubernetes before 1.36, or the chart's ``finalizerPolicy: false``)
works as it always did.

The Helm chart renders the same objects (``templates/finalizer-policy.yaml``; a test compares the two); the
local run, the benchmarks and the tests install them from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from dbuser_operator.api.v1alpha1.meta import GROUP, target_finalizer

API_VERSION: Final = "admissionregistration.k8s.io/v1"
POLICY_KIND: Final = "MutatingAdmissionPolicy"
BINDING_KIND: Final = "MutatingAdmissionPolicyBinding"
RESOURCES: Final = ("databaseusers", "databaseroles", "databases")  # the kinds whose first pass adds it
NAMESPACE_NAME_LABEL: Final = "kubernetes.io/metadata.name"


def finalizer_expression(finalizer: str) -> str:
    """The CEL of the JSON Patch that adds ``finalizer`` unless the new object has it already."""
    quoted = f'"{finalizer}"'
    return (
        f"!has(object.metadata.finalizers) ? "
        f'[JSONPatch{{op: "add", path: "/metadata/finalizers", value: [{quoted}]}}] : '
        f"{quoted} in object.metadata.finalizers ? [] : "
        f'[JSONPatch{{op: "add", path: "/metadata/finalizers/-", value: {quoted}}}]'
    )


def finalizer_policy(
    name: str, label: str, target: str, namespaces: Sequence[str] = (), *, finalizer: str | None = None
) -> list[dict[str, Any]]:
    """The policy named ``name`` and its binding: on creation, the finalizer of the instance that serves
    ``label: target`` (in ``namespaces``; empty: every namespace) on its resources (``finalizer``: another
    one instead, for the benchmarks' floor)."""
    match: dict[str, Any] = {
        "resourceRules": [
            {
                "apiGroups": [GROUP],
                "apiVersions": ["*"],
                "operations": ["CREATE"],
                "resources": list(RESOURCES),
            }
        ],
        "objectSelector": {"matchLabels": {label: target}},
    }
    if namespaces:
        match["namespaceSelector"] = {
            "matchExpressions": [{"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": list(namespaces)}]
        }
    expression = finalizer_expression(finalizer or target_finalizer(target))
    policy = {
        "apiVersion": API_VERSION,
        "kind": POLICY_KIND,
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Ignore",
            "reinvocationPolicy": "Never",
            "matchConstraints": match,
            "mutations": [
                {
                    "patchType": "JSONPatch",
                    "jsonPatch": {"expression": expression},
                }
            ],
        },
    }
    binding = {
        "apiVersion": API_VERSION,
        "kind": BINDING_KIND,
        "metadata": {"name": name},
        "spec": {"policyName": name},
    }
    return [policy, binding]
