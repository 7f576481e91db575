"""What the composition root builds once and every kind's ``setup()`` shares."""

from __future__ import annotations

from dataclasses import dataclass

from dbuser_operator.controllers.kit.departed import DepartedSweep
from dbuser_operator.controllers.kit.reconcile import FrameParts
from dbuser_operator.controllers.kit.reserved import ReservedNames
from dbuser_operator.controllers.kit.scope import Scope
from dbuser_operator.controllers.policy.gate import PolicyGate
from dbuser_operator.controllers.policy.guard import Guard
from dbuser_operator.controllers.servers.resolver import ServerResolver
from dbuser_operator.controllers.servers.watch import watch_servers
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.controller import Controller
from dbuser_operator.runtime.events import EventRecorder
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.manager import Manager
from dbuser_operator.runtime.predicates import SPEC_OR_METADATA_CHANGED, Predicate
from dbuser_operator.runtime.referenced import ReferencedInformer
from dbuser_operator.runtime.resources import Resource
from dbuser_operator.settings import Settings


@dataclass(frozen=True)
class Shared:
    """The clients, caches and rules the kinds share (one of each per operator process).

    ``reader`` is the unfenced client (reads, and the Lease itself); ``kube`` checks the fence before every
    write, so that every write of the controllers, the leader tasks and the Event recorder does.
    """

    settings: Settings
    reader: KubeClient
    kube: KubeClient
    scope: Scope
    users: Informer  # DatabaseUsers of this instance's target
    roles: Informer  # DatabaseRoles of this instance's target
    databases: Informer  # Databases of this instance's target
    secrets: ReferencedInformer  # only the Secrets the resources (and the server resources) name
    recorder: EventRecorder
    servers: ServerResolver
    policy: PolicyGate
    guard: Guard
    reserved: ReservedNames  # what is reserved on each physical server: asked by the frame for every kind

    @property
    def frame(self) -> FrameParts:
        """What every kind's reconciler is built with."""
        return FrameParts(
            self.kube, self.recorder, self.scope, self.servers, self.reserved, self.settings.resync_period
        )


def add_kind(
    manager: Manager,
    shared: Shared,
    controller: Controller,
    informer: Informer,
    *,
    resource: Resource,
    sweep: str,
    also: Predicate | None = None,
) -> Controller:
    """Run ``controller`` of a kind whose resources (``informer``'s, of ``resource``) name a server: they are
    looked at again when they change (not on the controller's own status writes; ``also`` narrows that
    further), when their namespace's labels change (their server's policy reads them), and when their
    server changes; at the start of leadership, the leader task ``sweep`` lets go of those that left the
    scope while no leader watched."""
    controller.watch(informer, SPEC_OR_METADATA_CHANGED, *([also] if also else []))
    shared.policy.namespaces.watch(controller, informer)
    watch_servers(controller, informer, shared.servers.informers.values())
    manager.add_controller(controller)
    namespaces = shared.settings.namespaces
    departed = DepartedSweep(shared.kube, resource, shared.scope, namespaces, controller.queue)
    manager.add_leader_task(sweep, departed.run)
    return controller
