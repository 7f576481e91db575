"""The signer's controller, as the manager runs it: only when ``--workload-signing-ca`` names a CA, and (like
every controller) only on the leader.

It watches the PodCertificateRequests of :data:`~.identity.SIGNER_NAME` (a field selector: the API server
sends no other signer's) in the namespaces the operator watches, all when none are named; and the
DatabaseUsers, so that a request waiting for its binding is looked at again as soon as one appears.
"""

from __future__ import annotations

from typing import Any, Final

from dbuser_operator.controllers.shared import Shared
from dbuser_operator.runtime.controller import Controller, KeyMapper
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.manager import Manager
from dbuser_operator.runtime.predicates import DELETION_STARTED, GENERATION_CHANGED, LABELS_CHANGED, any_of
from dbuser_operator.runtime.resources import ObjectKey
from dbuser_operator.workload.bindings import WORKLOAD_INDEX, Bindings, bound_service_account
from dbuser_operator.workload.ca import SigningCA
from dbuser_operator.workload.identity import SIGNER_NAME
from dbuser_operator.workload.requests import POD_CERTIFICATE_REQUESTS, compact_request, decision
from dbuser_operator.workload.signer import Signer

CONTROLLER_NAME: Final = "podcertificatesigner"
PENDING_INDEX: Final = "pending-by-service-account"


def pending_for(request: dict[str, Any]) -> list[str]:
    """Index function: ``<namespace>/<service account>`` of a request not decided yet."""
    if decision(request) is not None:
        return []
    account = (request.get("spec") or {}).get("serviceAccountName")
    return [f"{request['metadata']['namespace']}/{account}"] if account else []


def requests_of(requests: Informer) -> KeyMapper:
    """Key mapper: a DatabaseUser requeues the undecided requests of the ServiceAccount it binds."""

    def to_keys(user: dict[str, Any]) -> list[ObjectKey]:
        return [
            ObjectKey.of(request)
            for value in bound_service_account(user)
            for request in requests.store.by_index(PENDING_INDEX, value)
        ]

    return to_keys


def index(users: Informer) -> None:
    """The index of DatabaseUsers by the ServiceAccount they bind (before the caches are built)."""
    users.add_index(WORKLOAD_INDEX, bound_service_account)


def setup(manager: Manager, shared: Shared, ca: SigningCA) -> Controller:
    """The signer's controller on its own informer of requests."""
    settings = shared.settings
    requests = Informer(
        shared.reader,
        POD_CERTIFICATE_REQUESTS,
        namespaces=settings.namespaces,
        field_selector=f"spec.signerName={SIGNER_NAME}",
        transform=compact_request,
    )
    requests.add_index(PENDING_INDEX, pending_for)
    index(shared.users)
    signer = Signer(
        shared.kube,
        requests,
        Bindings(shared.users, shared.servers, shared.policy),
        ca,
        max_lifetime=settings.workload_certificate_max_lifetime,
        grace=settings.workload_binding_grace,
    )
    controller = Controller(
        CONTROLLER_NAME, signer, max_concurrent_reconciles=settings.max_concurrent_reconciles
    )
    controller.watch(requests)
    # A binding appears, changes or goes (not a status write: the reconciler's own, often).
    binding_changed = any_of(GENERATION_CHANGED, LABELS_CHANGED, DELETION_STARTED)
    controller.watch_mapped(shared.users, requests_of(requests), binding_changed)
    manager.add_controller(controller)
    return controller
