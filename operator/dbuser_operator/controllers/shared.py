"""What the composition root builds once and every kind's ``setup()`` shares."""

from __future__ import annotations

from dataclasses import dataclass

from dbuser_operator.controllers.kit.reserved import ReservedNames
from dbuser_operator.controllers.kit.scope import Scope
from dbuser_operator.controllers.policy.gate import PolicyGate
from dbuser_operator.controllers.policy.guard import Guard
from dbuser_operator.controllers.servers.resolver import ServerResolver
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.events import EventRecorder
from dbuser_operator.runtime.informer import Informer
from dbuser_operator.runtime.referenced import ReferencedInformer
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
