"""The ``DatabaseUser`` API, version v1alpha1: the single source of truth of the CRD.

The CRD in ``crds/`` is generated from these models (``python -m dbuser_operator.api.crd``), the way
controller-gen generates it from Go types: attribute docstrings become the field descriptions that
``kubectl explain`` prints, ``Field`` constraints become OpenAPI validation, and ``json_schema_extra`` carries
the ``x-kubernetes-*`` extensions (CEL rules, list types).

Parsing an object from the API: ``DatabaseUser.model_validate(obj)``; unknown fields are ignored, so an older
operator reads objects written for a newer schema. Writing status: ``status.to_api(stored_status)``, which
keeps the stored fields the model does not know. Optional fields with a meaningful
default (privileges, limits, TLS, deletion policy) carry that default in the schema too: the API server fills
it in, so ``kubectl get -o yaml`` shows the effective value and the operator always reads one. The models
check what the CRD checks (patterns, ranges, enums, and the CEL rules, with the same messages), nothing more:
every object the API server admits parses. Booleans are strict: "false" is no boolean to the API server.
"""

from __future__ import annotations

import re
import string
from typing import Annotated, Any, Final, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator, model_validator
from pydantic.alias_generators import to_camel

from dbuser_operator.api.duration import DURATION_MAX_LENGTH, DURATION_PATTERN
from dbuser_operator.mysql import grants

GROUP: Final = "mysql.dbuser-operator.dev"
VERSION: Final = "v1alpha1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
KIND: Final = "DatabaseUser"
PLURAL: Final = "databaseusers"
SINGULAR: Final = "databaseuser"
SHORT_NAMES: Final = ("dbu",)
CATEGORIES: Final = ("dbuser",)
CRD_NAME: Final = f"{PLURAL}.{GROUP}"

# Annotations of a DatabaseUser that the operator reads (their value must be "true").
ADOPT_ANNOTATION: Final = f"{GROUP}/adopt"
"""Value "true": take over an account that already exists in MySQL but that the operator did not create.
Once adopted, the account belongs to this resource: it is brought in line with the spec, and deletionPolicy
Delete drops it."""

RELEASE_ANNOTATION: Final = f"{GROUP}/release"
"""Value "true": when the resource is deleted, remove the finalizer without dropping the account, e.g. while
MySQL is down and the account must stay or will be cleaned up by hand. Recorded as a Warning Event."""

ROTATE_ANNOTATION: Final = f"{GROUP}/rotate"
"""A new value (any text, e.g. a timestamp) rotates a generated password once, now; the value handled last
is kept in status.rotation.trigger. Recorded as an Event Rotated."""

CREDENTIAL_VERSION_ANNOTATION: Final = f"{GROUP}/credential-version"
"""On the connection Secret (and mirrored in status.credentialVersion): a counter increased whenever the
password in the Secret changes, for tools and rollouts that restart workloads on a new credential."""

# Columns of `kubectl get dbu` (additionalPrinterColumns of the CRD).
PRINTER_COLUMNS: Final[tuple[dict[str, str], ...]] = (
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
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
)

# Validation shared by the models and the CRD. Go's RE2 and pydantic's Rust regex engine both read these
# ASCII classes as ASCII only, and both anchor `$` at the very end (no trailing newline).
USER_PATTERN: Final = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}$"
USER_MAX_LENGTH: Final = 32
HOST_PATTERN: Final = r"^[A-Za-z0-9._%:/-]{1,255}$"
HOST_MAX_LENGTH: Final = 255
DNS_SUBDOMAIN_PATTERN: Final = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
DNS_SUBDOMAIN_MAX_LENGTH: Final = 253
SECRET_KEY_PATTERN: Final = r"^[-._a-zA-Z0-9]+$"  # noqa: S105 - a pattern, not a secret
CONDITION_TYPE_PATTERN: Final = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
CONDITION_REASON_PATTERN: Final = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"

# MySQL names databases and tables (a GRANT's object) with up to 64 characters; "*" is every one of them.
OBJECT_NAME_PATTERN: Final = r"^(\*|[A-Za-z0-9_$-]{1,64})$"
OBJECT_NAME_MAX_LENGTH: Final = 64
# Account limits: MySQL stores them as unsigned 32-bit integers. MariaDB stores max_user_connections as a
# signed one (a larger value is a syntax error there), so that limit stays within what both accept.
LIMIT_MAX: Final = 4294967295
USER_CONNECTIONS_MAX: Final = 2147483647
MAX_GRANTS: Final = 64
MAX_PRIVILEGES_PER_GRANT: Final = 32

Privilege = Literal[
    "ALL",
    "ALTER",
    "ALTER ROUTINE",
    "CREATE",
    "CREATE ROUTINE",
    "CREATE TEMPORARY TABLES",
    "CREATE VIEW",
    "DELETE",
    "DROP",
    "EVENT",
    "EXECUTE",
    "INDEX",
    "INSERT",
    "LOCK TABLES",
    "REFERENCES",
    "SELECT",
    "SHOW VIEW",
    "TRIGGER",
    "UPDATE",
    "DELETE HISTORY",  # MariaDB only
    # Global only: granted on *.* alone.
    "CREATE USER",
    "FILE",
    "PROCESS",
    "RELOAD",
    "REPLICATION CLIENT",
    "REPLICATION SLAVE",
    "SHOW DATABASES",
    "SHUTDOWN",
    "SUPER",
    "CREATE TABLESPACE",
    "BINLOG MONITOR",  # MariaDB only
    "SLAVE MONITOR",  # MariaDB only
    "CREATE ROLE",  # MySQL only
    "DROP ROLE",  # MySQL only
]
"""A static privilege as MySQL writes it in GRANT (upper case, words separated by one space). ALL means
every privilege of the grant's level (ALL PRIVILEGES). A few exist on one flavour only (MariaDB's DELETE
HISTORY, BINLOG MONITOR and SLAVE MONITOR; MySQL's CREATE ROLE and DROP ROLE): on the other, the grant is
refused with a Ready=False condition that names them."""

PRIVILEGES: Final[tuple[Privilege, ...]] = get_args(Privilege)
"""Every privilege name the API accepts, in the order of the schema's enum."""

GLOBAL_ONLY_PRIVILEGES: Final[tuple[Privilege, ...]] = tuple(
    name for name in PRIVILEGES if name in grants.GLOBAL_ONLY_PRIVILEGES
)
"""The privileges that exist only at the global level: MySQL grants them on *.* alone (database "*")."""

TABLE_PRIVILEGES: Final[tuple[Privilege, ...]] = tuple(
    name for name in PRIVILEGES if name == grants.ALL or name in grants.TABLE_PRIVILEGES
)
"""The privileges that MySQL grants on a single table (ALL meaning all of them)."""

DeletionPolicy = Literal["Delete", "Retain"]
"""What happens to the MySQL account when its DatabaseUser is deleted."""

RotationStrategy = Literal["DualPassword", "Immediate"]
"""How a new password replaces the old one: DualPassword keeps the old one valid for a while (MySQL 8.0.14+:
RETAIN CURRENT PASSWORD, then DISCARD OLD PASSWORD), Immediate replaces it at once."""

RotationPhase = Literal["Retained", "Discarded"]
"""Where a DualPassword rotation stands: the old password still works (Retained), or no longer (Discarded)."""

_INT64: Final[dict[str, Any]] = {"format": "int64"}


class _Model(BaseModel):
    """Base of the API models: camelCase on the wire, unknown fields ignored, docstrings as descriptions."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
        use_attribute_docstrings=True,
    )


class SecretKeySelector(_Model):
    """A key of a Secret in the namespace of the DatabaseUser."""

    name: str = Field(max_length=DNS_SUBDOMAIN_MAX_LENGTH, pattern=DNS_SUBDOMAIN_PATTERN)
    """Name of the Secret."""

    key: str = Field(max_length=DNS_SUBDOMAIN_MAX_LENGTH, pattern=SECRET_KEY_PATTERN)
    """Key of the Secret's data that holds the value."""


def _cel_list(values: tuple[str, ...]) -> str:
    """A CEL list literal of strings (the values hold no quote)."""
    return "[" + ", ".join(f"'{value}'" for value in values) + "]"


def _english_list(values: tuple[str, ...]) -> str:
    return f"{', '.join(values[:-1])} and {values[-1]}"


def _cel_format(template: str, **expressions: str) -> str:
    """A CEL expression that builds the text of ``template``, each ``{name}`` being the CEL expression
    ``expressions[name]``: the messageExpression of a rule whose Python message is ``template``."""
    parts = []
    for literal, name, _, _ in string.Formatter().parse(template):
        if literal:
            parts.append("'" + literal.replace("\\", "\\\\").replace("'", "\\'") + "'")
        if name is not None:
            parts.append(expressions[name])
    return " + ".join(parts)


_GLOBAL_ONLY_CEL: Final = _cel_list(GLOBAL_ONLY_PRIVILEGES)
_TABLE_CEL: Final = _cel_list(TABLE_PRIVILEGES)

# The messages of the CEL rules below, which the models' validators raise too.
TABLE_NEEDS_DATABASE_MESSAGE: Final = 'a table grant needs a database: table must be "*" when database is "*"'
ALL_ALONE_MESSAGE: Final = "ALL stands for every privilege of its level: list it alone"
GLOBAL_ONLY_MESSAGE: Final = (
    '{privilege} can only be granted on *.* (database "*"), not on {database}.{table}'
)
TABLE_ONLY_MESSAGE: Final = (
    "{privilege} cannot be granted on a table ({database}.{table}): a table grant allows only "
    + _english_list(TABLE_PRIVILEGES)
)
ONE_ENTRY_MESSAGE: Final = "one entry per database and table"
ESCAPED_DATABASE_MESSAGE: Final = (
    "database name too long for a database grant: GRANT writes each '_' as '\\_', and the name must stay "
    f"within {OBJECT_NAME_MAX_LENGTH} characters that way"
)

_GRANT_RULES: Final[list[JsonValue]] = [
    {
        # A database grant names the database with its wildcards escaped ('_' as '\_', see
        # mysql.identifiers.escape_wildcards; the pattern admits no '%'), which MySQL bounds to 64 too.
        "rule": f"self.table != '*' || size(self.database.replace('_', '__')) <= {OBJECT_NAME_MAX_LENGTH}",
        "message": ESCAPED_DATABASE_MESSAGE,
        "fieldPath": ".database",
    },
    {
        "rule": "self.database != '*' || self.table == '*'",
        "message": TABLE_NEEDS_DATABASE_MESSAGE,
        "fieldPath": ".table",
    },
    {
        "rule": "!('ALL' in self.privileges) || size(self.privileges) == 1",
        "message": ALL_ALONE_MESSAGE,
        "fieldPath": ".privileges",
    },
    {
        "rule": f"self.database == '*' || !self.privileges.exists(p, p in {_GLOBAL_ONLY_CEL})",
        "message": f'{_english_list(GLOBAL_ONLY_PRIVILEGES)} can only be granted on *.* (database "*")',
        "messageExpression": _cel_format(
            GLOBAL_ONLY_MESSAGE,
            privilege=f"self.privileges.filter(p, p in {_GLOBAL_ONLY_CEL})[0]",
            database="self.database",
            table="self.table",
        ),
        "fieldPath": ".privileges",
    },
    {
        "rule": f"self.table == '*' || self.privileges.all(p, p in {_TABLE_CEL})",
        "message": "a table grant allows only " + _english_list(TABLE_PRIVILEGES),
        "messageExpression": _cel_format(
            TABLE_ONLY_MESSAGE,
            privilege=f"self.privileges.filter(p, !(p in {_TABLE_CEL}))[0]",
            database="self.database",
            table="self.table",
        ),
        "fieldPath": ".privileges",
    },
]


# An enum item: its maxLength bounds the estimated cost of the CEL rules that compare it.
_PrivilegeItem = Annotated[Privilege, Field(json_schema_extra={"maxLength": max(map(len, PRIVILEGES))})]


class Grant(_Model):
    """Privileges of the account on one level: global (database "*"), one database (table "*"), or one
    table."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": _GRANT_RULES})

    privileges: list[_PrivilegeItem] = Field(
        min_length=1, max_length=MAX_PRIVILEGES_PER_GRANT, json_schema_extra={"x-kubernetes-list-type": "set"}
    )
    """Privileges granted, as MySQL writes them: upper case, e.g. SELECT, INSERT, UPDATE, DELETE, EXECUTE,
    CREATE TEMPORARY TABLES, LOCK TABLES. ALL means every privilege of the grant's level and is listed alone.
    CREATE USER, FILE, PROCESS, RELOAD, REPLICATION CLIENT, REPLICATION SLAVE, SHOW DATABASES, SHUTDOWN, SUPER
    and CREATE TABLESPACE are global: only on database "*". A table grant allows only ALL, ALTER, CREATE,
    CREATE VIEW, DELETE, DROP, INDEX, INSERT, REFERENCES, SELECT, SHOW VIEW, TRIGGER and UPDATE."""

    database: str = Field(max_length=OBJECT_NAME_MAX_LENGTH, pattern=OBJECT_NAME_PATTERN)
    """Database the privileges apply to: a name of 1 to 64 letters, digits, '_', '$' or '-', or "*" for
    every database (global privileges, GRANT ... ON *.*). The database need not exist. For a grant on the
    whole database (table "*"), each '_' counts twice: GRANT writes it escaped ('\\_')."""

    table: str = Field(default="*", max_length=OBJECT_NAME_MAX_LENGTH, pattern=OBJECT_NAME_PATTERN)
    """Table of the database the privileges apply to (1 to 64 letters, digits, '_', '$' or '-'), or "*" for
    every table of the database. Defaults to "*". A table needs a database other than "*". MySQL (unlike
    MariaDB) refuses to grant on a table that does not exist yet."""

    grant_option: bool = Field(default=False, strict=True)
    """Whether the account may grant these privileges to other accounts (WITH GRANT OPTION). Defaults to
    false."""

    @field_validator("privileges")
    @classmethod
    def _a_set(cls, privileges: list[Privilege]) -> list[Privilege]:
        duplicates = sorted({privilege for privilege in privileges if privileges.count(privilege) > 1})
        if duplicates:
            raise ValueError(f"duplicate privileges: {', '.join(duplicates)}")
        return privileges

    @model_validator(mode="after")
    def _rules(self) -> Grant:
        """The CEL rules of the schema, with their messages."""
        where = {"database": self.database, "table": self.table}
        if self.table == "*" and len(self.database) + self.database.count("_") > OBJECT_NAME_MAX_LENGTH:
            raise ValueError(ESCAPED_DATABASE_MESSAGE)
        if self.database == "*" and self.table != "*":
            raise ValueError(TABLE_NEEDS_DATABASE_MESSAGE)
        if "ALL" in self.privileges and len(self.privileges) > 1:
            raise ValueError(ALL_ALONE_MESSAGE)
        if self.database != "*":
            for privilege in self.privileges:
                if privilege in GLOBAL_ONLY_PRIVILEGES:
                    raise ValueError(GLOBAL_ONLY_MESSAGE.format(privilege=privilege, **where))
        if self.table != "*":
            for privilege in self.privileges:
                if privilege not in TABLE_PRIVILEGES:
                    raise ValueError(TABLE_ONLY_MESSAGE.format(privilege=privilege, **where))
        return self


def _duration(default: str | None) -> Any:
    return Field(default=default, max_length=DURATION_MAX_LENGTH, pattern=DURATION_PATTERN)


class Rotation(_Model):
    """How password changes are rolled out to the account: at once, or with the old password kept valid
    until the applications have moved to the new one."""

    strategy: RotationStrategy | None = None
    """DualPassword: the new password is set with RETAIN CURRENT PASSWORD, so that both work, and the old one
    is discarded only when it is safe (see gracePeriod, waitForConsumers, maxWait). Immediate: the old
    password stops working at once. Unset: DualPassword where the server supports it (MySQL 8.0.14 and
    later), else Immediate. DualPassword on a server without dual passwords (MariaDB) is refused with
    Ready=False, reason DualPasswordUnsupported."""

    period: str | None = _duration(None)
    """For a generated password: rotate it this often, a duration such as 720h (30 days). Unset: only when
    asked (the mysql.dbuser-operator.dev/rotate annotation)."""

    grace_period: str = _duration("5m")
    """DualPassword: the old password stays valid at least this long after a rotation (a duration such as
    5m, 1h30m). Defaults to 5m."""

    max_wait: str = _duration("1h")
    """DualPassword: the old password is discarded at the latest this long after a rotation, even if pods or
    sessions still hold on to it (then with a Warning Event naming them). Defaults to 1h."""

    wait_for_consumers: bool = Field(default=True, strict=True)
    """DualPassword: discard the old password only once every pod in the namespace that uses the Secret
    (env, envFrom, volume or projected volume) started after the rotation, and no session of the account
    older than the rotation is open (up to maxWait). Defaults to true; false waits for gracePeriod only."""


CharacterSet = Literal["Alphanumeric", "AlphanumericSymbols"]
"""The characters of a generated password: letters and digits, or those and URL-safe symbols."""

GENERATED_PASSWORD_MIN_LENGTH: Final = 16
GENERATED_PASSWORD_MAX_LENGTH: Final = 128
MAX_CONNECTION_TEMPLATES: Final = 32
CONNECTION_TEMPLATE_MAX_LENGTH: Final = 4096
MAX_CONNECTION_METADATA: Final = 64
MAX_ROLLOUT_WORKLOADS: Final = 16

PASSWORD_SOURCE_MESSAGE: Final = "set exactly one of spec.password and spec.generatedPassword"  # noqa: S105
CONNECTION_SECRET_NAME_MESSAGE: Final = "spec.connectionSecret.name must differ from the password's Secret"  # noqa: S105
TEMPLATE_KEY_MESSAGE: Final = "template keys must be Secret data keys: letters, digits, '-', '_' or '.'"


class GeneratedPassword(_Model):
    """A password the operator generates and keeps in a Secret it creates and owns."""

    secret_name: str | None = Field(
        default=None, max_length=DNS_SUBDOMAIN_MAX_LENGTH, pattern=DNS_SUBDOMAIN_PATTERN
    )
    """Name of the Secret the operator creates to hold the password, in the namespace of the DatabaseUser.
    Defaults to "<metadata.name>-password". An existing Secret of that name that this DatabaseUser does not
    own is never overwritten (Ready=False, reason SecretNotOwned)."""

    key: str = Field(default="password", max_length=DNS_SUBDOMAIN_MAX_LENGTH, pattern=SECRET_KEY_PATTERN)
    """Key of the Secret's data that holds the password. Defaults to "password"."""

    length: int = Field(default=32, ge=GENERATED_PASSWORD_MIN_LENGTH, le=GENERATED_PASSWORD_MAX_LENGTH)
    """Number of characters, 16 to 128. Defaults to 32."""

    character_set: CharacterSet = "Alphanumeric"
    """Alphanumeric (the default): letters and digits; AlphanumericSymbols: also the symbols - _ . ~ which
    need no escaping in a URL, a shell word or a connection string."""

    def secret_name_for(self, user_name: str) -> str:
        """The Secret's name: secretName, else "<metadata.name>-password"."""
        return self.secret_name or f"{user_name}-password"


class RolloutTarget(_Model):
    """A workload in the namespace of the DatabaseUser whose pods use the connection Secret."""

    kind: Literal["Deployment", "StatefulSet"]
    """Kind of the workload: Deployment or StatefulSet."""

    name: str = Field(max_length=DNS_SUBDOMAIN_MAX_LENGTH, pattern=DNS_SUBDOMAIN_PATTERN)
    """Name of the workload."""


class ConnectionSecret(_Model):
    """A Secret the operator writes with everything an application needs to connect as this account."""

    name: str = Field(max_length=DNS_SUBDOMAIN_MAX_LENGTH, pattern=DNS_SUBDOMAIN_PATTERN)
    """Name of the Secret, in the namespace of the DatabaseUser. The operator creates and owns it; an
    existing Secret of that name that this DatabaseUser does not own is never overwritten (Ready=False,
    reason SecretNotOwned). Keys: host, port, username, password, database (when there is one), DATABASE_URL
    (mysql://user:password@host:port/database, every part percent-encoded), JDBC_URL, and the template
    keys."""

    labels: dict[str, str] | None = Field(default=None, max_length=MAX_CONNECTION_METADATA)
    """Labels of the Secret, besides app.kubernetes.io/managed-by: dbuser-operator."""

    annotations: dict[str, str] | None = Field(default=None, max_length=MAX_CONNECTION_METADATA)
    """Annotations of the Secret, besides mysql.dbuser-operator.dev/credential-version."""

    database: str | None = Field(default=None, max_length=OBJECT_NAME_MAX_LENGTH, pattern=OBJECT_NAME_PATTERN)
    """The database of the database key and of the URLs. Defaults to the database of the grants when they
    name exactly one; else there is none."""

    templates: dict[str, str] | None = Field(
        default=None,
        max_length=MAX_CONNECTION_TEMPLATES,
        json_schema_extra={
            "additionalProperties": {"type": "string", "maxLength": CONNECTION_TEMPLATE_MAX_LENGTH},
            "x-kubernetes-validations": [
                {"rule": f"self.all(k, k.matches('{SECRET_KEY_PATTERN}'))", "message": TEMPLATE_KEY_MESSAGE}
            ],
        },
    )
    """More keys, each rendered from a Jinja2 template over host, port, username, password, database,
    DATABASE_URL and JDBC_URL, e.g. "{{ username }}:{{ password }}@tcp({{ host }}:{{ port }})/{{ database }}".
    Rendered in Jinja2's sandbox, bounded in time and size; a template that fails, or reaches for anything
    but these values, sets Ready=False (reason TemplateInvalid). A template may replace a standard key."""

    rollout: list[RolloutTarget] | None = Field(default=None, max_length=MAX_ROLLOUT_WORKLOADS)
    """Deployments and StatefulSets, in the namespace of the DatabaseUser, whose pod template is annotated
    with the new credential version after the password changes, so that their pods restart onto it."""

    @field_validator("templates")
    @classmethod
    def _template_keys(cls, templates: dict[str, str] | None) -> dict[str, str] | None:
        for key, template in (templates or {}).items():
            if not re.fullmatch(SECRET_KEY_PATTERN, key):
                raise ValueError(TEMPLATE_KEY_MESSAGE)
            if len(template) > CONNECTION_TEMPLATE_MAX_LENGTH:
                raise ValueError(f"a template is at most {CONNECTION_TEMPLATE_MAX_LENGTH} characters")
        return templates


class DatabaseUserSpec(_Model):
    """The MySQL account wanted: its name and host, where its password comes from, its privileges and
    limits, whether it must use TLS, and what becomes of it when the resource is deleted."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
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
                {
                    "rule": "has(self.password) != has(self.generatedPassword)",
                    "message": PASSWORD_SOURCE_MESSAGE,
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

    password: SecretKeySelector | None = None
    """The Secret key that holds the account's password, in the namespace of the DatabaseUser. The operator
    sets the account's password to this value, and applies every change of the Secret. Exclusive with
    generatedPassword."""

    generated_password: GeneratedPassword | None = None
    """Let the operator generate the password and keep it in a Secret it owns (never regenerated, except by
    a rotation). Exclusive with password."""

    connection_secret: ConnectionSecret | None = None
    """A Secret the operator writes and keeps in sync with what an application needs to connect: host,
    port, username, password, database, DATABASE_URL, JDBC_URL and templated keys."""

    privileges: list[Grant] = Field(
        default=[],  # pydantic copies it for every instance; unlike a factory, it shows in the schema
        max_length=MAX_GRANTS,
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "self.all(a, self.exists_one(b, a.database == b.database && a.table == b.table))",
                    "message": ONE_ENTRY_MESSAGE,
                    # No reason FieldValueDuplicate: the API server would report "Duplicate value" without it.
                }
            ]
        },
    )
    """Privileges of the account, one entry per database and table: each grants a list of privileges on
    every database (database "*"), on one database, or on one table of a database. The operator grants
    exactly these and revokes any other. Defaults to none (the account can only log in)."""

    max_user_connections: int = Field(default=0, ge=0, le=USER_CONNECTIONS_MAX, json_schema_extra=_INT64)
    """Most connections the account may have open at once (MAX_USER_CONNECTIONS), at most 2147483647. 0, the
    default, means no limit of the account's own (the server's max_user_connections applies)."""

    max_queries_per_hour: int = Field(default=0, ge=0, le=LIMIT_MAX, json_schema_extra=_INT64)
    """Most statements the account may run per hour (MAX_QUERIES_PER_HOUR). 0, the default, means
    unlimited."""

    max_updates_per_hour: int = Field(default=0, ge=0, le=LIMIT_MAX, json_schema_extra=_INT64)
    """Most statements that modify data the account may run per hour (MAX_UPDATES_PER_HOUR). 0, the default,
    means unlimited."""

    max_connections_per_hour: int = Field(default=0, ge=0, le=LIMIT_MAX, json_schema_extra=_INT64)
    """Most times the account may connect per hour (MAX_CONNECTIONS_PER_HOUR). 0, the default, means
    unlimited."""

    require_tls: bool = Field(default=False, alias="requireTLS", strict=True)
    """Whether the account may only connect over TLS: true is REQUIRE SSL, false (the default) REQUIRE
    NONE."""

    rotation: Rotation | None = None
    """How password changes reach the account: DualPassword (the old password stays valid until it is
    safe to discard it) or Immediate, and a schedule for generated passwords."""

    deletion_policy: DeletionPolicy = "Delete"
    """What becomes of the MySQL account when this resource is deleted. Delete (the default) drops the
    account, if this resource owns it (the operator created it, or adopted it with the annotation
    mysql.dbuser-operator.dev/adopt: "true"), then releases the resource. Retain leaves the account in MySQL
    and releases the resource at once, even while MySQL is unreachable."""

    @model_validator(mode="after")
    def _one_password_source(self) -> DatabaseUserSpec:
        if (self.password is None) == (self.generated_password is None):
            raise ValueError(PASSWORD_SOURCE_MESSAGE)
        return self

    @field_validator("privileges")
    @classmethod
    def _one_entry_per_database_and_table(cls, grants: list[Grant]) -> list[Grant]:
        levels = [(grant.database, grant.table) for grant in grants]
        if len(set(levels)) != len(levels):
            raise ValueError(ONE_ENTRY_MESSAGE)
        return grants


class AppliedSecret(_Model):
    """Which version of a Secret was applied to the account (never its value, nor a hash of it)."""

    name: str
    """Name of the Secret."""

    uid: str
    """UID of the Secret."""

    resource_version: str
    """resourceVersion of the Secret whose value was applied."""


class RotationStatus(_Model):
    """The last password rotation of the account (no password and no hash of one)."""

    phase: RotationPhase | None = None
    """DualPassword: Retained while the previous password still works, Discarded once it no longer does."""

    strategy: RotationStrategy | None = None
    """The strategy the last rotation used (the spec's, or the server's default)."""

    last_rotation_time: str | None = Field(default=None, json_schema_extra={"format": "date-time"})
    """When the password last changed (RFC 3339)."""

    next_rotation_time: str | None = Field(default=None, json_schema_extra={"format": "date-time"})
    """When a generated password with a rotation period is rotated next (RFC 3339)."""

    retained_since: str | None = Field(default=None, json_schema_extra={"format": "date-time"})
    """DualPassword: when the previous password was retained (RFC 3339); the grace period and the maximum
    wait count from here."""

    trigger: str | None = None
    """The value of the mysql.dbuser-operator.dev/rotate annotation handled last."""

    session_watermark: int | None = Field(default=None, ge=0, json_schema_extra=_INT64)
    """DualPassword: the highest MySQL connection id when the previous password was retained; sessions of
    the account up to it predate the rotation."""


class Condition(_Model):
    """One aspect of the current state of the resource (the shape of metav1.Condition)."""

    type: str = Field(max_length=316, pattern=CONDITION_TYPE_PATTERN)
    """Type of the condition, in CamelCase: Ready tells whether the account is in line with the spec."""

    status: Literal["True", "False", "Unknown"]
    """Status of the condition: True, False or Unknown."""

    observed_generation: int | None = Field(default=None, ge=0, json_schema_extra=_INT64)
    """The metadata.generation that the condition was set from."""

    last_transition_time: str = Field(json_schema_extra={"format": "date-time"})
    """When the condition last changed from one status to another (RFC 3339)."""

    reason: str = Field(min_length=1, max_length=1024, pattern=CONDITION_REASON_PATTERN)
    """Why the condition has its status: a CamelCase word for programs."""

    message: str = Field(max_length=32768)
    """Details of the last transition, for humans. May be empty."""


class DatabaseUserStatus(_Model):
    """The state of the account as the operator last observed it."""

    conditions: list[Condition] = Field(
        default_factory=list,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )
    """Latest observations of the account's state. Ready is True once the account exists in MySQL and
    matches the spec."""

    observed_generation: int | None = Field(default=None, ge=0, json_schema_extra=_INT64)
    """The metadata.generation that the operator last acted on."""

    user: str | None = None
    """MySQL user name of the account (spec.user, or metadata.name)."""

    host: str | None = None
    """MySQL host part of the account."""

    applied_secret: AppliedSecret | None = None
    """The version of the password Secret last applied to the account."""

    rotation: RotationStatus | None = None
    """The last password rotation: its phase (Retained, Discarded), strategy and times."""

    credential_version: int | None = Field(default=None, ge=1, json_schema_extra=_INT64)
    """The credential version of the connection Secret (its annotation
    mysql.dbuser-operator.dev/credential-version): increased whenever the password in it changes."""

    def to_api(self, previous: dict[str, Any] | None = None) -> dict[str, Any]:
        """The status as the API stores it (camelCase, None left out), keeping the fields of ``previous``
        (the stored status) that this model does not know: a newer operator's are not erased."""
        known = {field.alias or name for name, field in type(self).model_fields.items()}
        kept = {key: value for key, value in (previous or {}).items() if key not in known}
        return {**kept, **self.model_dump(by_alias=True, exclude_none=True, mode="json")}


class ObjectMeta(_Model):
    """The parts of the object metadata the operator reads (the CRD leaves metadata to the API server)."""

    name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    generation: int | None = None
    resource_version: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    finalizers: list[str] | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None


class DatabaseUser(_Model):
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
        return self

    def password_secret_name(self) -> str | None:
        """The Secret the password comes from: spec.password's, or the generated password's."""
        if self.spec.password is not None:
            return self.spec.password.name
        if self.spec.generated_password is not None:
            return self.spec.generated_password.secret_name_for(self.metadata.name or "")
        return None

    def effective_user(self) -> str:
        """The MySQL user name: spec.user, or else metadata.name."""
        user = self.spec.user or self.metadata.name
        if not user:
            raise ValueError("a DatabaseUser without spec.user needs metadata.name")
        return user
