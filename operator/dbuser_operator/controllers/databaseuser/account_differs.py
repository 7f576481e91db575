"""One comparison of an owned account, as one inventory read it, with what its DatabaseUser wants.

Two callers ask it, and only ``strict`` tells them apart, so that they cannot drift apart:

- the periodic drift check (:mod:`.drift`, ``strict=False``) queues a repair only for what it saw differ:
  what the inventory could not read (a password fingerprint, the account's attributes, its password
  policy) is no difference;
- a new leader's first pass (:mod:`.converged`, ``strict=True``) skips a reconcile only for an account it
  saw in line in every respect: what was not read counts as a difference.

Compared: presence, the password fingerprint recorded when the password was set, the limits and TLS
requirement (a workload's issuer and subject), owner metadata and comment, lock and password policy, and
the grants (``grants_differ``: the caller has the grant changes, which the drift check also reports).
"""

from __future__ import annotations

from dbuser_operator.api.v1alpha1 import DatabaseUser
from dbuser_operator.controllers.databaseuser.steps.account_metadata import metadata_differs
from dbuser_operator.controllers.databaseuser.steps.limits import desired_limits
from dbuser_operator.controllers.databaseuser.steps.lock_policy import unsupported, wanted_policy
from dbuser_operator.controllers.databaseuser.steps.rotation import now
from dbuser_operator.controllers.databaseuser.workload import Workload
from dbuser_operator.mysql.bookkeeping.inventory import AccountState
from dbuser_operator.mysql.session.server import ServerInfo


def account_differs(
    state: AccountState,
    user: DatabaseUser,
    server: ServerInfo,
    *,
    grants_differ: bool,
    strict: bool,
    workload: Workload | None = None,
) -> bool:
    """Whether the account ``state`` differs from what ``user`` wants on ``server``; ``strict``: what
    the inventory did not read (fingerprint, attributes, policy) counts as a difference."""
    spec = user.spec
    # What the inventory did not read: a comment cannot be compared without the account's attributes.
    unread = state.password_intact is None or state.policy is None
    unread = unread or (state.metadata is None and spec.comment is not None)
    if not state.present or state.password_intact is False or (strict and unread):
        return True
    if state.limits != desired_limits(spec, workload):
        return True
    if state.metadata is not None and metadata_differs(state.metadata, state.owner, spec):
        return True
    return grants_differ or _policy_differs(state, user, server)


def _policy_differs(state: AccountState, user: DatabaseUser, server: ServerInfo) -> bool:
    """Whether the account's lock and password policy, when read and supported, is not the spec's."""
    if state.policy is None or unsupported(user.spec, server) is not None:
        return False
    wanted = wanted_policy(user.spec, now()).for_account(state.policy, state.default_lifetime)
    return wanted != state.policy
