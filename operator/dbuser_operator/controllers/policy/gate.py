"""The policy gate: a DatabaseUser (or DatabaseRole) on a server resource whose ``spec.policy`` does not
admit it is refused before any SQL, with Ready=False, reason PolicyViolation, naming the rule.

It does not retry: the resource is looked at again when it changes, when its server changes, or when its
namespace's labels change. Its delete half does nothing, so that deleting a refused resource still cleans
up the account it owns (if it ever did). Tightening a policy makes resources that now break it stop
converging; nothing is revoked or dropped.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from dbuser_operator.api.v1alpha1 import DatabaseUser
from dbuser_operator.api.v1alpha1.database import Database
from dbuser_operator.api.v1alpha1.databaserole import DatabaseRole
from dbuser_operator.api.v1alpha1.server_policy import ServerPolicy
from dbuser_operator.controllers.kit.errors import ConditionError
from dbuser_operator.controllers.policy.adoption import holding_problems, name_problems
from dbuser_operator.controllers.policy.namespaces import POLICY_NAMESPACE_INDEX, NamespaceLabels, on_a_server
from dbuser_operator.controllers.policy.rules import (
    Violation,
    database_violations,
    describe,
    entry_for,
    role_violations,
    user_violations,
)
from dbuser_operator.controllers.servers.resource import ServerResource
from dbuser_operator.mysql.accounts.holdings import Holdings
from dbuser_operator.mysql.session.server import Flavour
from dbuser_operator.runtime.client import KubeClient
from dbuser_operator.runtime.informer import Informer

POLICY_VIOLATION = "PolicyViolation"
NAMESPACE_UNKNOWN = "NamespaceUnknown"
NAMESPACES_UNREADABLE = "NamespacesUnreadable"
ADOPTION_NOT_ALLOWED = "AdoptionNotAllowed"

Evaluation = Callable[[ServerPolicy, str, Mapping[str, str]], list[Violation]]
"""A resource's violations of a policy, given its namespace's name and labels."""


class PolicyGate:
    """Checks resources against their server's policy, with the labels of their namespace."""

    def __init__(self, namespaces: NamespaceLabels) -> None:
        self.namespaces = namespaces

    def labels(self, server: ServerResource, namespace: str) -> dict[str, str]:
        """The labels of ``namespace`` that ``server``'s policy selects by (a ConditionError while they
        cannot be known: fail closed)."""
        if not self.namespaces.available:  # fail closed: a policy that cannot be checked admits nothing
            raise ConditionError(
                NAMESPACES_UNREADABLE,
                f"{server}: its spec.policy cannot be checked: the operator may not read namespaces "
                "(it needs get, list and watch on namespaces; restart it once it may)",
                retry=False,
            )
        labels = self.namespaces.labels(namespace)
        if labels is None:  # the namespace watch requeues the resource when the namespace shows up
            raise ConditionError(
                NAMESPACE_UNKNOWN,
                f"{server}: the labels of namespace {namespace}, which its policy reads, are not known yet",
            )
        return labels

    def check_user(self, server: ServerResource | None, user: DatabaseUser) -> None:
        """Raise PolicyViolation if ``user`` breaks its server's policy (no server resource, or no policy:
        nothing to check)."""
        spec = user.spec
        self._check(
            server, user.metadata.namespace, lambda p, ns, labels: user_violations(p, ns, labels, spec)
        )

    def check_role(self, server: ServerResource | None, role: DatabaseRole) -> None:
        """Raise PolicyViolation if ``role`` breaks its server's policy."""
        self._check(
            server, role.metadata.namespace, lambda p, ns, labels: role_violations(p, ns, labels, role.spec)
        )

    def check_database(self, server: ServerResource | None, database: Database) -> None:
        """Raise PolicyViolation if the namespace of ``database`` may not have its name."""
        name = database.mysql_name()
        self._check(
            server,
            database.metadata.namespace,
            lambda p, ns, labels: database_violations(p, ns, labels, name),
        )

    async def check_adoption(
        self,
        server: ServerResource | None,
        *,
        namespace: str,
        what: str,
        name: str,
        holdings: Callable[[], Awaitable[Holdings]],
        flavour: Flavour,
        reason: str = ADOPTION_NOT_ALLOWED,
        action: str = "adopt",
    ) -> None:
        """Raise AdoptionNotAllowed unless the policy lets ``namespace`` take over the account or role
        ``name`` (``what``, for messages) as it is today; ``holdings`` reads that only when the policy lets
        the namespace adopt the name at all. No server resource, or no policy: nothing to check.
        (managementPolicy Observe asks the same, with its own ``reason`` and ``action``: observe.)"""
        if server is None or server.spec.policy is None:
            return
        labels = self.labels(server, namespace)
        found = entry_for(server.spec.policy, labels)
        if found is None:  # the policy step refused it already; a policy changed since then
            violation = Violation("", f"namespace {namespace} may not use it")
            raise ConditionError(POLICY_VIOLATION, violation.message(str(server)), retry=False)
        index, entry = found
        rule = f"policy.namespaces[{index}]"
        problems = name_problems(entry, namespace, name)
        if problems:  # looked at again when the policy or the resource changes
            message = Violation(rule, f"cannot {action} {what}: {'; '.join(problems)}").message(str(server))
            raise ConditionError(reason, message, retry=False)
        problems = holding_problems(entry, namespace, await holdings(), flavour)
        if problems:  # what it holds may change by hand: looked at again, with backoff
            message = Violation(rule, f"cannot {action} {what}: {'; '.join(problems)}").message(str(server))
            raise ConditionError(reason, message)

    def _check(self, server: ServerResource | None, namespace: str | None, evaluate: Evaluation) -> None:
        if server is None or server.spec.policy is None:
            return
        labels = self.labels(server, namespace or "")
        violations = evaluate(server.spec.policy, namespace or "", labels)
        if violations:
            raise ConditionError(POLICY_VIOLATION, describe(str(server), violations), retry=False)


def policy_gate(kube: KubeClient | None, *informers: Informer) -> PolicyGate:
    """A gate reading a new namespace cache through ``kube`` (None: namespaces may not be read), and
    ``informers`` (of DatabaseUsers and DatabaseRoles) indexed by :data:`POLICY_NAMESPACE_INDEX` for the
    namespace watch's mapping."""
    for informer in informers:
        informer.add_index(POLICY_NAMESPACE_INDEX, on_a_server)
    return PolicyGate(NamespaceLabels(kube))
