"""Which DatabaseUsers bind a ServiceAccount (``spec.authentication.workload.serviceAccountName``), and
whether one of them entitles its pods to a certificate: of this instance's target (the informer holds no
other), not being deleted, and admitted by its server's ``spec.policy`` — the very check the DatabaseUser
reconciler makes (:meth:`~dbuser_operator.controllers.policy.gate.PolicyGate.check_user`), so that the
signer never issues for an account the operator would refuse to make.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import pydantic

from dbuser_operator.api.v1alpha1 import DatabaseUser
from dbuser_operator.controllers.kit.errors import ConditionError
from dbuser_operator.controllers.kit.resources import DEFAULT_SERVER, describe_server, server_key
from dbuser_operator.controllers.policy.gate import PolicyGate
from dbuser_operator.controllers.servers.resolver import NO_DEFAULT_SERVER, ServerResolver
from dbuser_operator.controllers.servers.resource import ServerResource
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.resources import ObjectKey

WORKLOAD_INDEX: Final = "workload-service-account"
NOT_BOUND: Final = "ServiceAccountNotBound"


def bound_service_account(user: dict[str, Any]) -> list[str]:
    """Index function: ``<namespace>/<service account>`` of a DatabaseUser bound to a workload."""
    workload = ((user.get("spec") or {}).get("authentication") or {}).get("workload") or {}
    name = workload.get("serviceAccountName")
    return [f"{user['metadata']['namespace']}/{name}"] if isinstance(name, str) and name else []


@dataclass(frozen=True)
class Binding:
    """The DatabaseUser whose binding entitles a pod to a certificate."""

    user: ObjectKey


def server_of(servers: ServerResolver, obj: dict[str, Any]) -> ServerResource | None:
    """The server resource of a DatabaseUser as the reconciler resolves it (None: the default server);
    ConditionError when there is none. No connection is opened: the policy is in the spec."""
    key = server_key(obj)
    if key == DEFAULT_SERVER:
        if servers.registry.default is None:
            raise ConditionError("ServerNotFound", NO_DEFAULT_SERVER, retry=False)
        return None
    server = servers.server_object(key)
    if server is None:  # may be on its way (applied with the DatabaseUser): looked at again
        raise ConditionError("ServerNotFound", f"{describe_server(key)} does not exist")
    return servers.resource(key, server)


class Bindings:
    """Finds the DatabaseUser that entitles a ServiceAccount's pods to a certificate."""

    def __init__(self, users: Informer, servers: ServerResolver, policy: PolicyGate) -> None:
        self.users = users
        self.servers = servers
        self.policy = policy

    def binding(self, namespace: str, service_account: str) -> Binding:
        """The first DatabaseUser (by name) that binds ``namespace``/``service_account`` and may; else the
        ConditionError of why not — retryable when it may change soon (nothing binds it yet, its server or
        namespace is not known yet), not when it will not (a policy that forbids it)."""
        candidates = sorted(
            self.users.store.by_index(WORKLOAD_INDEX, f"{namespace}/{service_account}"),
            key=lambda obj: str(obj["metadata"]["name"]),
        )
        refusals: list[ConditionError] = []
        for obj in candidates:
            try:
                return self._entitles(obj)
            except ConditionError as refused:
                refusals.append(refused)
        if refusals:
            final = [refusal for refusal in refusals if not refusal.retry]
            raise (final or refusals)[0]
        raise ConditionError(
            NOT_BOUND,
            f"no DatabaseUser of this operator ({self.users.label_selector or 'any target'}) in namespace "
            f"{namespace} binds ServiceAccount {service_account} (spec.authentication.workload."
            "serviceAccountName)",
        )

    def _entitles(self, obj: dict[str, Any]) -> Binding:
        name = f"DatabaseUser {obj['metadata']['namespace']}/{obj['metadata']['name']}"
        if obj["metadata"].get("deletionTimestamp"):
            raise ConditionError(NOT_BOUND, f"{name}, which binds it, is being deleted", retry=False)
        try:
            user = DatabaseUser.model_validate(obj)
        except pydantic.ValidationError as error:
            problem = error.errors()[0]["msg"]
            message = f"{name}, which binds it, is invalid: {problem}"
            raise ConditionError("InvalidSpec", message, retry=False) from None
        try:
            self.policy.check_user(server_of(self.servers, obj), user)
        except ConditionError as refused:
            raise ConditionError(refused.reason, f"{name}: {refused.message}", retry=refused.retry) from None
        return Binding(ObjectKey.of(obj))
