"""Whether a DatabaseUser is converged as a new leader finds it: its first-pass reconcile can be skipped.

A leader that starts reconciles every resource once (its first pass). For a resource that was Ready when the
last leader stopped, that pass reads MySQL several times and writes nothing. This module decides, from what
the caches hold and what one inventory per server read (:mod:`.start_check` reads it), that such a pass
would find nothing to do; :func:`why_reconcile` answers with the reason it must still run, or None.

Why a skipped resource is safe: a reconcile acts on (a) the resource, (b) its password Secret, (c) what the
server holds for each of its accounts, (d) the DatabaseRoles and Databases it names, (e) its server
resource's policy and the reserved names, and (f) time. Each is checked here, or the resource is
reconciled:

- (a) Ready=True for its current ``metadata.generation`` (status too), written by this operator version
  (an upgrade may apply more, or record more in status: it reconciles everything once), nothing
  Progressing, our finalizer on, no deletion, managementPolicy Manage, no adopt annotation: the last pass
  applied this very spec;
- (b) the Secret in the cache is the version ``status.appliedSecret`` records (uid and resourceVersion): a
  Secret edited while no leader watched is applied; generated passwords are always reconciled;
- (c) the inventory's account of every host (``status.hosts`` is exactly the spec's) is present, owned by
  this resource, with the password fingerprint recorded when it was set, the spec's limits and TLS
  requirement, owner metadata and comment, lock and password policy, and exactly the spec's grants: the
  comparison of the periodic drift check (:mod:`.account_differs`, ``strict``), which repairs what it
  finds; the roles it holds
  and its default roles are those of the role drift check (:mod:`.role_drift`), with every role it names
  Ready on its server;
- (d, e) the checks a reconcile makes before any SQL (reserved names, guard, policy, privilege, comment and
  lock-policy checks, databaseRefs) run on the same code, by the caller;
- (f) whatever needs a timer or a look of its own is reconciled: a scheduled rotation (``rotation.period``),
  a rotation in flight (phase Retained), ``account.expiresAt``, a workload identity or any
  ``authentication``, a cert-manager certificate, a connection Secret renamed, managementPolicy Observe;
- (g) a connection Secret is rendered in memory and compared with the cached Secret by the step's own code
  (:meth:`~.steps.connection_secret.ConnectionSecretStep.why_write`, by the caller): one edited or deleted
  while no leader watched is written by the reconcile. Its template keys are not rendered (only the
  sandbox's workers do): they are taken as the Secret holds them while it is at the version the last pass
  recorded (``status.connectionSecretVersion``), else the resource is reconciled.

A server that did not answer has no inventory here (``accounts`` None): its resources are reconciled.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from dbuser_operator import __version__
from dbuser_operator.api.v1alpha1 import ADOPT_ANNOTATION, DatabaseUser, DatabaseUserStatus
from dbuser_operator.controllers.databaseuser.account_differs import account_differs
from dbuser_operator.controllers.databaseuser.progress import PROGRESSING
from dbuser_operator.controllers.kit.grants import desired_grants
from dbuser_operator.controllers.kit.reconcile import READY
from dbuser_operator.controllers.kit.resources import server_key
from dbuser_operator.mysql import grants
from dbuser_operator.mysql.bookkeeping.inventory import AccountState
from dbuser_operator.mysql.session.server import ServerInfo
from dbuser_operator.runtime.conditions import find_condition, is_true
from dbuser_operator.runtime.resources import ObjectKey

CONVERGED: Final = None
"""What :func:`why_reconcile` answers for a resource whose first-pass reconcile may be skipped."""


@dataclass(frozen=True)
class Found:
    """What one server holds for one resource: each wanted host's account (None: not owned, or absent
    from the inventory), and whether its roles differ from the spec (the role drift check's answer)."""

    server: ServerInfo
    accounts: Mapping[str, AccountState | None]  # by host, lower case
    roles_differ: bool


def why_reconcile_spec(
    obj: Mapping[str, Any], user: DatabaseUser, status: DatabaseUserStatus, holds_finalizer: bool
) -> str | None:
    """Why the resource's first pass must run, from the resource alone (None: look further)."""
    meta, spec = obj["metadata"], user.spec
    conditions = (obj.get("status") or {}).get("conditions")
    ready = find_condition(conditions, READY) or {}
    progressing = find_condition(conditions, PROGRESSING)
    generation = meta.get("generation")
    rotation = spec.rotation
    hosts = {host.lower() for host in spec.account_hosts()}
    connection = spec.connection_secret.name if spec.connection_secret is not None else None
    rules: list[tuple[bool, str]] = [
        (bool(meta.get("deletionTimestamp")), "deleting"),
        (not holds_finalizer, "no finalizer"),
        (spec.management_policy != "Manage", f"managementPolicy {spec.management_policy}"),
        ((meta.get("annotations") or {}).get(ADOPT_ANNOTATION) == "true", "adopting"),
        (ready.get("status") != "True", "not Ready"),
        (ready.get("observedGeneration") not in (generation, None), "not Ready at its generation"),
        (status.observed_generation != generation, "not Ready at its generation"),
        (status.operator_version != __version__, "written by another operator version"),
        (progressing is not None and progressing.get("status") != "False", "progressing"),
        (spec.password is None, "no password Secret (generated, or none)"),
        (spec.authentication is not None, "authentication"),
        (rotation is not None and rotation.period is not None, "scheduled rotation"),
        (status.rotation is not None and status.rotation.phase == "Retained", "rotation in flight"),
        (spec.account is not None and spec.account.expires_at is not None, "expiresAt"),
        (spec.tls is not None and spec.tls.certificate is not None, "client certificate"),
        (status.connection_secret != connection, "connection Secret renamed"),
        ({host.lower() for host in status.hosts or []} != hosts, "hosts changed"),
    ]
    return next((reason for broken, reason in rules if broken), CONVERGED)


def why_reconcile_secret(status: DatabaseUserStatus, secret: Mapping[str, Any] | None) -> str | None:
    """Why the first pass must run for the password Secret: not the version status says was applied."""
    applied = status.applied_secret
    if secret is None or applied is None:
        return "password Secret changed"
    meta = secret["metadata"]
    if (meta.get("uid"), meta.get("resourceVersion")) != (applied.uid, applied.resource_version):
        return "password Secret changed"
    if meta.get("name") != applied.name:
        return "password Secret changed"
    return CONVERGED


def why_reconcile(obj: Mapping[str, Any], user: DatabaseUser, found: Found | None) -> str | None:
    """Why the first pass must run for what the server holds (None: converged: skip it). ``user`` has
    its databaseRefs resolved; ``found`` is None when its server was not read."""
    if found is None:
        return "server not read"
    if found.roles_differ:
        return "roles differ"
    uid = obj["metadata"].get("uid")
    wanted = desired_grants(user.spec.privileges)
    for host in user.spec.account_hosts():
        state = found.accounts.get(host.lower())
        if state is None or state.owner.uid != uid:
            return "account not owned"
        grants_differ = bool(grants.changes(state.grants, wanted, found.server))
        if account_differs(state, user, found.server, grants_differ=grants_differ, strict=True):
            return "account drifted"
    return CONVERGED


def why_reconcile_roles(
    obj: dict[str, Any], user: DatabaseUser, role: Callable[[ObjectKey], dict[str, Any] | None]
) -> str | None:
    """Why the first pass must run for the roles the spec names: one missing, on another server, being
    deleted or not Ready (the role drift check cannot tell whether it should be held)."""
    namespace = user.metadata.namespace or ""
    for name in user.spec.roles:
        found = role(ObjectKey(namespace, name))
        if found is None or server_key(found) != server_key(obj):
            return "role not Ready"
        if found["metadata"].get("deletionTimestamp") or not is_true(
            (found.get("status") or {}).get("conditions"), READY
        ):
            return "role not Ready"
    return CONVERGED
