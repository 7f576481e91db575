"""The ``DatabaseUser`` API: a MySQL or MariaDB account (or one per host), its spec and the object itself
(its status is in :mod:`.databaseuser_status`); the parts it shares with other kinds come from :mod:`.meta`
and :mod:`.grants`, its own from :mod:`.account` and :mod:`.credentials`."""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from dbuser_operator.api.v1alpha1.account import (
    COMMENT_MAX_LENGTH,
    COMMENT_PATTERN,
    LIMIT_MAX,
    PASSWORDLESS_PLUGINS,
    USER_CONNECTIONS_MAX,
    WORKLOAD_CEL,
    WORKLOAD_NO_PASSWORD_MESSAGE,
    WORKLOAD_ROTATION_MESSAGE,
    WORKLOAD_RULES,
    WORKLOAD_TLS_MESSAGE,
    AccountSpec,
    Authentication,
    TLSIdentity,
)
from dbuser_operator.api.v1alpha1.client_certificate import certificate_secret_cel, certificate_secret_problem
from dbuser_operator.api.v1alpha1.credentials import ConnectionSecret, GeneratedPassword, Rotation
from dbuser_operator.api.v1alpha1.databaseuser_status import DatabaseUserStatus
from dbuser_operator.api.v1alpha1.grants import GRANT_DATABASE_CEL, MAX_GRANTS, ONE_ENTRY_MESSAGE, Grant
from dbuser_operator.api.v1alpha1.meta import (
    API_VERSION,
    CATEGORY,
    DNS_SUBDOMAIN_MAX_LENGTH,
    DNS_SUBDOMAIN_PATTERN,
    GROUP,
    HOST_MAX_LENGTH,
    HOST_PATTERN,
    INT64,
    NAMESPACED_CATEGORY,
    SERVER_COLUMNS,
    SERVER_REF_RULE,
    USER_MAX_LENGTH,
    USER_PATTERN,
    DeletionPolicy,
    Model,
    ObjectMeta,
    SecretKeySelector,
    ServerRef,
    cel_format,
    cel_list,
)

KIND: Final = "DatabaseUser"
PLURAL: Final = "databaseusers"
SINGULAR: Final = "databaseuser"
SHORT_NAMES: Final = ("dbu",)
CATEGORIES: Final = ("dbuser", CATEGORY, NAMESPACED_CATEGORY)  # "dbuser": as in the first release
CRD_NAME: Final = f"{PLURAL}.{GROUP}"


# Columns of `kubectl get dbu` (additionalPrinterColumns of the CRD).
PRINTER_COLUMNS: Final[tuple[dict[str, object], ...]] = (
    {"name": "User", "type": "string", "jsonPath": ".status.user", "description": "MySQL user name"},
    {"name": "Host", "type": "string", "jsonPath": ".spec.host", "description": "MySQL host"},
    {
        "name": "Ready",
        "type": "string",
        "jsonPath": '.status.conditions[?(@.type=="Ready")].status',
        "description": "Whether the account is in line with the spec",
    },
    {
        "name": "Reason",
        "type": "string",
        "jsonPath": '.status.conditions[?(@.type=="Ready")].reason',
        "description": "Why the account is (not) ready",
    },
    {
        "name": "Service Account",
        "type": "string",
        "jsonPath": ".spec.authentication.workload.serviceAccountName",
        "description": "The ServiceAccount whose pods log in with their certificate (workload identity)",
        "priority": 1,
    },
    *SERVER_COLUMNS,
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
)


ManagementPolicy = Literal["Manage", "Observe", "Paused"]
"""How far the operator acts on the accounts: Manage them, only Observe them, or leave them alone (Paused)."""

MAX_HOSTS: Final = 16
HOSTS_REPEAT_MESSAGE: Final = (
    "hosts must not repeat spec.host or one another (MySQL compares hosts without regard to case)"
)

_PASSWORDLESS_CEL: Final = cel_list(PASSWORDLESS_PLUGINS)
PASSWORD_REQUIRED_MESSAGE: Final = (
    "spec.password or spec.generatedPassword is required unless spec.authentication.plugin takes no "
    "password (" + ", ".join(PASSWORDLESS_PLUGINS) + ") or spec.authentication.workload is set"
)
_PLUGIN_CEL: Final = "has(self.authentication) && has(self.authentication.plugin)"
_PASSWORDLESS_PLUGIN_CEL: Final = f"{_PLUGIN_CEL} && self.authentication.plugin in {_PASSWORDLESS_CEL}"
NO_PASSWORD_MESSAGE: Final = (
    "the plugin {plugin} takes no password: leave spec.password and spec.generatedPassword out"  # noqa: S105
)
# Roles of a DatabaseUser: names of DatabaseRoles (Kubernetes object names) in its namespace.
MAX_ROLES: Final = 32
DEFAULT_ROLES_MESSAGE: Final = "every default role must be listed in roles"
_RoleName = Annotated[str, Field(max_length=DNS_SUBDOMAIN_MAX_LENGTH, pattern=DNS_SUBDOMAIN_PATTERN)]
# A host of spec.hosts: the pattern and length of spec.host.
_HostItem = Annotated[str, Field(max_length=HOST_MAX_LENGTH, pattern=HOST_PATTERN)]


PASSWORD_SOURCE_MESSAGE: Final = "set exactly one of spec.password and spec.generatedPassword"  # noqa: S105
CONNECTION_SECRET_NAME_MESSAGE: Final = "spec.connectionSecret.name must differ from the password's Secret"  # noqa: S105


class DatabaseUserSpec(Model):
    """The MySQL account wanted: its name and host, where its password comes from, its privileges and
    limits, whether it must use TLS, and what becomes of it when the resource is deleted."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "!has(self.defaultRoles)"
                    " || self.defaultRoles.all(r, has(self.roles) && r in self.roles)",
                    "message": DEFAULT_ROLES_MESSAGE,
                    "fieldPath": ".defaultRoles",
                },
                {
                    "rule": "has(self.user) == has(oldSelf.user)"
                    " && (!has(self.user) || self.user == oldSelf.user)",
                    "message": "spec.user is immutable",
                    "fieldPath": ".user",
                },
                {
                    "rule": "self.host == oldSelf.host",
                    "message": "spec.host is immutable",
                    "fieldPath": ".host",
                },
                SERVER_REF_RULE,
                {
                    "rule": "has(self.password) || has(self.generatedPassword)"
                    f" || ({WORKLOAD_CEL}) || ({_PASSWORDLESS_PLUGIN_CEL})",
                    "message": PASSWORD_REQUIRED_MESSAGE,
                    "fieldPath": ".password",
                    "reason": "FieldValueRequired",
                },
                {
                    "rule": "!has(self.password) || !has(self.generatedPassword)",
                    "message": PASSWORD_SOURCE_MESSAGE,
                },
                {
                    "rule": "!(has(self.password) || has(self.generatedPassword))"
                    f" || !({_PASSWORDLESS_PLUGIN_CEL})",
                    "message": "a plugin that takes no password: leave spec.password and"
                    " spec.generatedPassword out",
                    "messageExpression": cel_format(NO_PASSWORD_MESSAGE, plugin="self.authentication.plugin"),
                    "fieldPath": ".password",
                },
                *WORKLOAD_RULES,
                {
                    "rule": "!has(self.hosts) || self.hosts.all(h, h.lowerAscii() != self.host.lowerAscii())"
                    " && self.hosts.all(a, self.hosts.exists_one(b, a.lowerAscii() == b.lowerAscii()))",
                    "message": HOSTS_REPEAT_MESSAGE,
                    "fieldPath": ".hosts",
                },
            ]
        }
    )

    user: str | None = Field(default=None, max_length=USER_MAX_LENGTH, pattern=USER_PATTERN)
    """MySQL user name of the account: 1 to 32 letters, digits, '_', '.' or '-', not starting with '.' or
    '-'. Defaults to metadata.name, which must then be at most 32 characters. Immutable."""

    host: str = Field(default="%", max_length=HOST_MAX_LENGTH, pattern=HOST_PATTERN)
    """MySQL host part of the account: the client hosts it may connect from, as MySQL matches them ('%' for
    any host, '10.0.%', an IP address, '10.0.0.0/255.0.0.0', or a host name). Defaults to '%'. Immutable."""

    server_ref: ServerRef | None = None
    """The server resource (MySQLServer or ClusterMySQLServer) the account lives on. Unset: the server the
    operator's settings name. Immutable."""

    # No schema defaults on lists, limits and requireTLS: describe shows only what was set (absent == empty).
    hosts: list[_HostItem] = Field(
        default_factory=list, max_length=MAX_HOSTS, json_schema_extra={"x-kubernetes-list-type": "set"}
    )
    """More hosts of the same user, each its own MySQL account 'user'@'host' with the same password,
    privileges and limits (at most 16; same rules as host; no repeat of host, case aside). Unlike host, the
    list may change: a host removed from it has its account dropped (deletionPolicy Delete, if this resource
    owns it) or released (Retain: left in MySQL, no longer managed). Defaults to none: host alone."""

    password: SecretKeySelector | None = None
    """The Secret key that holds the account's password, in the namespace of the DatabaseUser. The operator
    sets the account's password to this value, and applies every change of the Secret. Required, unless
    authentication.plugin takes no password (auth_socket, unix_socket, AWSAuthenticationPlugin) or
    generatedPassword is set: exclusive with it."""

    generated_password: GeneratedPassword | None = None
    """Let the operator generate the password and keep it in a Secret it owns (never regenerated, except by
    a rotation). Exclusive with password."""

    connection_secret: ConnectionSecret | None = None
    """A Secret the operator writes and keeps in sync with what an application needs to connect: host,
    port, username, password, database, DATABASE_URL, JDBC_URL and templated keys."""

    privileges: list[Grant] = Field(
        # No default in the schema: an account without grants shows no empty "Privileges:" in describe.
        default_factory=list,
        max_length=MAX_GRANTS,
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "self.all(a, has(a.columns) || self.exists_one(b, !has(b.columns)"
                    f" && {GRANT_DATABASE_CEL.format('a')} == {GRANT_DATABASE_CEL.format('b')}"
                    " && a.table == b.table && has(a.routine) == has(b.routine)"
                    " && (!has(a.routine) || a.routine == b.routine)))",
                    "message": ONE_ENTRY_MESSAGE,
                    # No reason FieldValueDuplicate: the API server would report "Duplicate value" without it.
                }
            ]
        },
    )
    """Privileges of the account, one entry per database and table (and routine): each grants a list of
    privileges on every database (database "*"), on one database, on one table of a database, on columns
    of a table (columns), or on a stored procedure or function (routine). The operator grants exactly these
    and revokes any other, at every level. Defaults to none (the account can only log in)."""

    max_user_connections: int = Field(
        default_factory=int, ge=0, le=USER_CONNECTIONS_MAX, json_schema_extra=INT64
    )
    """Most connections the account may have open at once (MAX_USER_CONNECTIONS), at most 2147483647. 0, the
    default, means no limit of the account's own (the server's max_user_connections applies)."""

    max_queries_per_hour: int = Field(default_factory=int, ge=0, le=LIMIT_MAX, json_schema_extra=INT64)
    """Most statements the account may run per hour (MAX_QUERIES_PER_HOUR). 0, the default, means
    unlimited."""

    max_updates_per_hour: int = Field(default_factory=int, ge=0, le=LIMIT_MAX, json_schema_extra=INT64)
    """Most statements that modify data the account may run per hour (MAX_UPDATES_PER_HOUR). 0, the default,
    means unlimited."""

    max_connections_per_hour: int = Field(default_factory=int, ge=0, le=LIMIT_MAX, json_schema_extra=INT64)
    """Most times the account may connect per hour (MAX_CONNECTIONS_PER_HOUR). 0, the default, means
    unlimited."""

    require_tls: bool = Field(default_factory=bool, alias="requireTLS", strict=True)
    """Whether the account may only connect over TLS: true is REQUIRE SSL, false (the default) REQUIRE
    NONE (unless tls asks for more)."""

    comment: str | None = Field(default=None, max_length=COMMENT_MAX_LENGTH, pattern=COMMENT_PATTERN)
    """A note for the DBAs who look at the account on the server (MySQL 8.0.21+: COMMENT, shown in
    information_schema.USER_ATTRIBUTES next to the owner the operator records there), e.g. "billing API,
    team payments". At most 256 printable characters. MariaDB and older MySQL cannot store it (Ready=False,
    reason CommentNotSupported). Unset (the default), the account's comment is left as it is; "" removes
    it."""

    tls: TLSIdentity | None = None
    """What the account must show over TLS besides TLS itself: a client certificate (x509), its issuer
    and/or subject, a cipher (REQUIRE X509, ISSUER, SUBJECT, CIPHER). Implies requireTLS. Defaults to
    nothing more than requireTLS says."""

    account: AccountSpec | None = None
    """The account's lock and password policy: locked (ACCOUNT LOCK), when its password expires
    (passwordExpire), on MySQL a lock after failed logins (failedLoginAttempts, passwordLockTime), and a time
    from which it is locked (expiresAt). Unset: unlocked, a password that never expires in effect, no
    failed-login lock."""

    authentication: Authentication | None = None
    """How the account authenticates: its plugin. Unset (the default), an account is created with the
    server's default plugin and any plugin it has is kept."""

    rotation: Rotation | None = None
    """How password changes reach the account: DualPassword (the old password stays valid until it is
    safe to discard it) or Immediate, and a schedule for generated passwords."""

    deletion_policy: DeletionPolicy = "Delete"
    """What becomes of the MySQL account when this resource is deleted. Delete (the default) drops the
    account, if this resource owns it (the operator created it, or adopted it with the annotation
    mysql.dbuser-operator.dev/adopt: "true"), then releases the resource. Retain leaves the account in MySQL
    and releases the resource at once, even while MySQL is unreachable."""

    roles: list[_RoleName] = Field(
        default_factory=list, max_length=MAX_ROLES, json_schema_extra={"x-kubernetes-list-type": "set"}
    )
    """Roles granted to the account: names of DatabaseRoles in the namespace of this DatabaseUser (served by
    the same operator). The operator grants exactly these roles and revokes any other role the account
    holds. Defaults to none."""

    default_roles: list[_RoleName] = Field(
        default_factory=list, max_length=MAX_ROLES, json_schema_extra={"x-kubernetes-list-type": "set"}
    )
    """Roles active by default when the account logs in (SET DEFAULT ROLE), each also listed in roles.
    MySQL allows several; MariaDB one (more is refused with Ready=False, reason TooManyDefaultRoles).
    Defaults to none: the account activates roles itself with SET ROLE."""

    @model_validator(mode="after")
    def _password_source(self) -> DatabaseUserSpec:
        """The CEL rules on password, generatedPassword and authentication.plugin, with their messages."""
        plugin = self.authentication.plugin if self.authentication is not None else None
        workload = self.authentication is not None and self.authentication.workload is not None
        given = self.password is not None or self.generated_password is not None
        if self.password is not None and self.generated_password is not None:
            raise ValueError(PASSWORD_SOURCE_MESSAGE)
        if workload:
            if given:
                raise ValueError(WORKLOAD_NO_PASSWORD_MESSAGE)
            if self.tls is not None and (self.tls.x509 or self.tls.issuer or self.tls.subject):
                raise ValueError(WORKLOAD_TLS_MESSAGE)
            if self.rotation is not None:
                raise ValueError(WORKLOAD_ROTATION_MESSAGE)
            return self
        if not given and plugin not in PASSWORDLESS_PLUGINS:
            raise ValueError(PASSWORD_REQUIRED_MESSAGE)
        if given and plugin in PASSWORDLESS_PLUGINS:
            raise ValueError(NO_PASSWORD_MESSAGE.format(plugin=plugin))
        return self

    management_policy: ManagementPolicy = "Manage"
    """How far the operator acts. Manage (the default): create the accounts and keep them in line with the
    spec. Observe: only read the live accounts into status.observed and report whether they match the spec
    (Ready reason Observed or Diverged), writing nothing to MySQL, whoever owns them; deleting the resource
    leaves them. Paused: do nothing at all, not even drift repair, until the policy changes (condition
    Paused); deleting a Paused resource waits for Manage, or for the release annotation."""

    @model_validator(mode="after")
    def _hosts_unique(self) -> DatabaseUserSpec:
        """The CEL rule on hosts, with its message."""
        seen = [self.host.lower(), *(host.lower() for host in self.hosts)]
        if len(set(seen)) != len(seen):
            raise ValueError(HOSTS_REPEAT_MESSAGE)
        return self

    def account_hosts(self) -> list[str]:
        """Every host of the user's accounts: host first, then hosts, in their order."""
        return [self.host, *self.hosts]

    @field_validator("privileges")
    @classmethod
    def _one_entry_per_database_and_table(cls, grants: list[Grant]) -> list[Grant]:
        levels = [
            (grant.level_key(), grant.table, grant.routine and (grant.routine.type, grant.routine.name))
            for grant in grants
            if grant.columns is None
        ]
        if len(set(levels)) != len(levels):
            raise ValueError(ONE_ENTRY_MESSAGE)
        return grants

    @field_validator("roles", "default_roles")
    @classmethod
    def _role_set(cls, names: list[str]) -> list[str]:
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"duplicate roles: {', '.join(duplicates)}")
        return names

    @model_validator(mode="after")
    def _default_roles_granted(self) -> DatabaseUserSpec:
        if not set(self.default_roles) <= set(self.roles):
            raise ValueError(DEFAULT_ROLES_MESSAGE)
        return self


class DatabaseUser(Model):
    """A MySQL or MariaDB user account managed by dbuser-operator: created in the operator's MySQL server,
    kept in line with the spec and with its password Secret, and dropped when this resource is deleted
    (unless its deletionPolicy is Retain)."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "has(self.spec.user) || size(self.metadata.name) <= 32",
                    "message": "metadata.name is longer than 32 characters: set spec.user",
                    # Reported as "spec.user: Required value: …" (metadata.name is no valid fieldPath).
                    "fieldPath": ".spec.user",
                    "reason": "FieldValueRequired",
                },
                {
                    "rule": "!has(self.spec.connectionSecret) || (has(self.spec.password)"
                    " ? self.spec.connectionSecret.name != self.spec.password.name"
                    " : !has(self.spec.generatedPassword) || self.spec.connectionSecret.name !="
                    " (has(self.spec.generatedPassword.secretName) ? self.spec.generatedPassword.secretName"
                    " : self.metadata.name + '-password'))",
                    "message": CONNECTION_SECRET_NAME_MESSAGE,
                    "fieldPath": ".spec.connectionSecret.name",
                },
                *certificate_secret_cel(),
            ]
        }
    )

    api_version: str = API_VERSION
    kind: str = KIND
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: DatabaseUserSpec
    """The account wanted: its MySQL user name and host, the Secret key that holds its password, its
    privileges and limits, TLS, and its deletion policy."""

    status: DatabaseUserStatus | None = None
    """The account's state as the operator last observed it (written by the operator only)."""

    @model_validator(mode="after")
    def _connection_secret_apart(self) -> DatabaseUser:
        connection = self.spec.connection_secret
        if connection is not None and connection.name == self.password_secret_name():
            raise ValueError(CONNECTION_SECRET_NAME_MESSAGE)
        certificate = self.spec.tls.certificate if self.spec.tls is not None else None
        problem = certificate_secret_problem(
            self.metadata.name or "",
            certificate,
            self.password_secret_name(),
            connection.name if connection is not None else None,
        )
        if problem is not None:
            raise ValueError(problem)
        return self

    def password_secret_name(self) -> str | None:
        """The Secret the password comes from: spec.password's, or the generated password's."""
        if self.spec.password is not None:
            return self.spec.password.name
        if self.spec.generated_password is not None:
            return self.spec.generated_password.secret_name_for(self.metadata.name or "")
        return None

    def mysql_name(self) -> str:
        """The MySQL user name: spec.user, or else metadata.name."""
        user = self.spec.user or self.metadata.name
        if not user:
            raise ValueError("a DatabaseUser without spec.user needs metadata.name")
        return user
