"""What one DatabaseUser reconcile knows: the steps read and fill it in order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dbuser_operator.api.v1alpha1 import ADOPT_ANNOTATION, AppliedSecret, DatabaseUser, DatabaseUserStatus
from dbuser_operator.controllers.databaseuser.workload import Workload
from dbuser_operator.controllers.kit.ownership import Words
from dbuser_operator.controllers.servers.resource import ServerPass
from dbuser_operator.mysql.accounts.account_lookup import Lookup
from dbuser_operator.mysql.accounts.account_metadata import AccountMetadata
from dbuser_operator.mysql.accounts.authentication import Method
from dbuser_operator.mysql.accounts.dual_password import PasswordState
from dbuser_operator.mysql.accounts.limits import Limits
from dbuser_operator.mysql.accounts.lock_policy import LockPolicy
from dbuser_operator.mysql.accounts.mariadb_dual_auth import DualAuthState


@dataclass(kw_only=True)
class Context(ServerPass[DatabaseUserStatus]):
    """What one DatabaseUser reconcile knows; steps read and fill it in order."""

    user: DatabaseUser
    password: str | None = field(default=None, repr=False)
    secret: AppliedSecret | None = None  # the Secret version read: name, uid, resourceVersion
    # The password's Secret as this pass wrote it (newer than the watch cache), for the password step.
    password_secret: dict[str, Any] | None = field(default=None, repr=False)
    account_exists: bool | None = None  # as last checked in this pass (None: not checked)
    password_intact: bool | None = None  # the account's password is the one we set (None: unknown)
    # What this pass's look found of the account (None: not looked at): the fingerprint of its
    # authentication string, its credential marker and retained password (MySQL) or its authentications
    # (MariaDB), its limits and TLS requirement; and whether its password is ``password`` (None: not known).
    auth_fingerprint: str | None = None
    password_state: PasswordState | None = None
    dual_auth: DualAuthState | None = field(default=None, repr=False)
    options: Limits | None = None
    password_held: bool | None = None
    fingerprint_in_row: bool = True  # the bookkeeping row holds a fingerprint (True: not known otherwise)
    own_reuse_policy: bool = True  # the account has a password history or reuse interval (True: not read)
    # A new MySQL account left between its CREATE USER and its settling by an earlier pass (new_password).
    unsettled: bool = False
    # This pass set the password with its fingerprint in the same statement (hashed_password): none to record.
    fingerprint_set: bool = False
    claimed: bool = False  # this pass recorded the resource as the account's owner
    # The claim recorded the fingerprint the account gets from this pass's CREATE USER (known beforehand).
    fingerprint_claimed: bool = False
    created: bool = False  # the account was created in this pass: it has default options and no grants
    adopted: bool = False  # this pass took the account over (adopt annotation): its sessions are ended
    reduced: bool = False  # this pass revoked privileges or roles: the account's sessions are ended
    plugin: str | None = None  # the account's authentication plugin as read in this pass (None: no account)
    # The owner entry and comment in the account's attributes as read in this pass (None: not read).
    account_metadata: AccountMetadata | None = None
    # The account's lock and password policy and the server's default password lifetime, as the ownership
    # step's look read them (None: not read in this pass).
    lock_policy: LockPolicy | None = None
    default_lifetime: int | None = None
    authentication: Method | None = None  # the plugin the spec asks for, found active in the server
    workload: Workload | None = None  # the ServiceAccount bound (spec.authentication.workload), resolved
    host: str = ""  # the account's host: spec.host, or one of spec.hosts in a per-host pass (.hosts)
    # The client certificate cert-manager issued (tls.crt, tls.key, ca.crt), for the connection Secret.
    client_certificate: dict[str, str] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.host = self.host or self.user.spec.host

    def saw(self, found: Lookup) -> None:
        """What a look at the account found
        (:func:`~dbuser_operator.mysql.accounts.account_lookup.lookup`)."""
        self.account_exists, self.password_intact = found.exists, found.password_intact
        self.plugin, self.account_metadata = found.plugin, found.metadata
        self.lock_policy, self.default_lifetime = found.policy, found.default_lifetime
        self.auth_fingerprint, self.password_state = found.fingerprint, found.password_state
        self.dual_auth, self.options = found.dual_auth, found.options
        self.fingerprint_in_row, self.own_reuse_policy = found.fingerprint_in_row, found.own_reuse_policy
        self.unsettled = found.unsettled

    @property
    def account(self) -> str:
        """``'user'@'host'`` for messages (validated names only: safe to show)."""
        return f"'{self.user.mysql_name()}'@'{self.host}'"


def words(ctx: Context) -> Words:
    """How the refusals of ownership name the account (a deleted owner's with how to take over)."""
    return Words("account", "DatabaseUser", ctx.account, hint=True)


def adopting(ctx: Context) -> bool:
    """Whether the resource asks to take over an account it did not create."""
    return (ctx.user.metadata.annotations or {}).get(ADOPT_ANNOTATION) == "true"
