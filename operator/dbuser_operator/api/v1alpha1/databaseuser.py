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
from dbuser_operator.mysql import authentication, grants, tls_identity

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
        "name": "Server",
        "type": "string",
        "jsonPath": ".spec.serverRef.name",
        "description": "The server resource of spec.serverRef (empty: the operator's own server)",
        "priority": 1,
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

PRIVILEGE_PATTERN: Final = r"^[A-Z][A-Z_]*( [A-Z][A-Z_]*)*$"
PRIVILEGE_MAX_LENGTH: Final = 32  # MySQL's mysql.global_grants.PRIV is CHAR(32)
COLUMN_NAME_PATTERN: Final = r"^[A-Za-z0-9_$-]{1,64}$"
MAX_COLUMNS: Final = 64

Privilege = Annotated[str, Field(max_length=PRIVILEGE_MAX_LENGTH, pattern=PRIVILEGE_PATTERN)]
"""A privilege as MySQL writes it in GRANT: upper-case words of letters and '_' separated by one space
(SELECT, CREATE TEMPORARY TABLES, BACKUP_ADMIN, SLAVE MONITOR), at most 32 characters. ALL means every
privilege of the grant's level (ALL PRIVILEGES). The schema checks the shape; the operator checks the name
against the live server's SHOW PRIVILEGES and the level it is wanted at, and refuses an unknown or
misplaced one with a Ready=False condition that names it (PrivilegeUnknown, PrivilegeMisplaced)."""

PRIVILEGES: Final[tuple[str, ...]] = (
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
)
"""The static privileges whose levels the schema knows (the enum of earlier versions): its rules refuse the
global-only ones elsewhere than on *.*, and on a table anything but the table privileges. Any other name of
the right shape is the server's to judge (MySQL's dynamic privileges, MariaDB's administrative ones: global
only)."""

NOT_LISTED: Final[tuple[str, ...]] = ("ALL PRIVILEGES", "USAGE", "GRANT OPTION", "PROXY")
"""Names of the right shape that are no privilege to list: ALL PRIVILEGES is written ALL, USAGE is no
privilege, GRANT OPTION is grantOption, PROXY is granted on an account."""

COLUMN_PRIVILEGES: Final[tuple[str, ...]] = ("SELECT", "INSERT", "UPDATE", "REFERENCES")
"""The privileges a column grant allows."""

ROUTINE_PRIVILEGES: Final[tuple[str, ...]] = ("ALL", "EXECUTE", "ALTER ROUTINE")
"""The privileges a routine grant allows (ALL meaning EXECUTE and ALTER ROUTINE)."""

GLOBAL_ONLY_PRIVILEGES: Final[tuple[str, ...]] = tuple(
    name for name in PRIVILEGES if name in grants.GLOBAL_ONLY_PRIVILEGES
)
"""The privileges that exist only at the global level: MySQL grants them on *.* alone (database "*")."""

TABLE_PRIVILEGES: Final[tuple[str, ...]] = tuple(
    name for name in PRIVILEGES if name == grants.ALL or name in grants.TABLE_PRIVILEGES
)
"""The privileges that MySQL grants on a single table (ALL meaning all of them)."""

AuthenticationPlugin = Literal[
    "caching_sha2_password",
    "sha256_password",
    "mysql_native_password",
    "ed25519",
    "auth_socket",
    "unix_socket",
    "AWSAuthenticationPlugin",
]
"""An authentication plugin, by the server's name for it."""

AUTHENTICATION_PLUGINS: Final[tuple[AuthenticationPlugin, ...]] = get_args(AuthenticationPlugin)
PASSWORDLESS_PLUGINS: Final[tuple[AuthenticationPlugin, ...]] = tuple(
    name for name in AUTHENTICATION_PLUGINS if name in authentication.PASSWORDLESS
)
"""The plugins that authenticate without a password (the operating system user, an AWS IAM token)."""

# TLS identities: issuer and subject in OpenSSL's one-line form ("/C=SE/O=Example/CN=app", printable ASCII),
# a cipher by its name.
TLS_NAME_PATTERN: Final = r"^/[ -~]*$"
TLS_NAME_MAX_LENGTH: Final = tls_identity.NAME_MAX_LENGTH
TLS_CIPHER_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9_-]*$"
TLS_CIPHER_MAX_LENGTH: Final = tls_identity.CIPHER_MAX_LENGTH

DeletionPolicy = Literal["Delete", "Retain"]
"""What happens to the MySQL account when its DatabaseUser is deleted."""

ManagementPolicy = Literal["Manage", "Observe", "Paused"]
"""How far the operator acts on the accounts: Manage them, only Observe them, or leave them alone (Paused)."""

MAX_HOSTS: Final = 16
HOSTS_REPEAT_MESSAGE: Final = (
    "hosts must not repeat spec.host or one another (MySQL compares hosts without regard to case)"
)

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
_NOT_LISTED_CEL: Final = _cel_list(NOT_LISTED)
_COLUMN_CEL: Final = _cel_list(COLUMN_PRIVILEGES)
_ROUTINE_CEL: Final = _cel_list(ROUTINE_PRIVILEGES)

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
ONE_ENTRY_MESSAGE: Final = "one entry per database and table (and routine; column grants excepted)"
NOT_LISTED_MESSAGE: Final = (
    "{privilege} is not a privilege to list: write ALL for ALL PRIVILEGES, grantOption for GRANT OPTION; "
    "USAGE and PROXY are not granted here"
)
COLUMNS_NEED_TABLE_MESSAGE: Final = 'a column grant names a table: table must not be "*" with columns'
COLUMNS_PRIVILEGES_MESSAGE: Final = (
    "{privilege} cannot be granted on columns: a column grant allows only " + _english_list(COLUMN_PRIVILEGES)
)
COLUMNS_NO_OPTION_MESSAGE: Final = (
    "a column grant has no grant option: grantOption must be false with columns"
)
ROUTINE_LEVEL_MESSAGE: Final = (
    'a routine grant names a database and nothing else: database must not be "*", table must be "*", no '
    "columns"
)
ROUTINE_PRIVILEGES_MESSAGE: Final = (
    "{privilege} cannot be granted on a routine: a routine grant allows only "
    + _english_list(ROUTINE_PRIVILEGES)
)
ESCAPED_DATABASE_MESSAGE: Final = (
    "database name too long for a database grant: GRANT writes each '_' as '\\_', and the name must stay "
    f"within {OBJECT_NAME_MAX_LENGTH} characters that way"
)

_GRANT_RULES: Final[list[JsonValue]] = [
    {
        # A database grant names the database with its wildcards escaped ('_' as '\_', see
        # mysql.identifiers.escape_wildcards; the pattern admits no '%'), which MySQL bounds to 64 too.
        "rule": f"self.table != '*' || has(self.routine)"
        f" || size(self.database.replace('_', '__')) <= {OBJECT_NAME_MAX_LENGTH}",
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
    {
        "rule": f"!self.privileges.exists(p, p in {_NOT_LISTED_CEL})",
        "message": NOT_LISTED_MESSAGE.format(privilege=_english_list(NOT_LISTED)),
        "messageExpression": _cel_format(
            NOT_LISTED_MESSAGE, privilege=f"self.privileges.filter(p, p in {_NOT_LISTED_CEL})[0]"
        ),
        "fieldPath": ".privileges",
    },
    {
        "rule": "!has(self.columns) || self.table != '*'",
        "message": COLUMNS_NEED_TABLE_MESSAGE,
        "fieldPath": ".columns",
    },
    {
        "rule": "!has(self.columns) || !self.grantOption",
        "message": COLUMNS_NO_OPTION_MESSAGE,
        "fieldPath": ".grantOption",
    },
    {
        "rule": f"!has(self.columns) || self.privileges.all(p, p in {_COLUMN_CEL})",
        "message": COLUMNS_PRIVILEGES_MESSAGE.format(privilege="a privilege"),
        "messageExpression": _cel_format(
            COLUMNS_PRIVILEGES_MESSAGE, privilege=f"self.privileges.filter(p, !(p in {_COLUMN_CEL}))[0]"
        ),
        "fieldPath": ".privileges",
    },
    {
        "rule": "!has(self.routine) || (self.database != '*' && self.table == '*' && !has(self.columns))",
        "message": ROUTINE_LEVEL_MESSAGE,
        "fieldPath": ".routine",
    },
    {
        "rule": f"!has(self.routine) || self.privileges.all(p, p in {_ROUTINE_CEL})",
        "message": ROUTINE_PRIVILEGES_MESSAGE.format(privilege="a privilege"),
        "messageExpression": _cel_format(
            ROUTINE_PRIVILEGES_MESSAGE, privilege=f"self.privileges.filter(p, !(p in {_ROUTINE_CEL}))[0]"
        ),
        "fieldPath": ".privileges",
    },
]


# An enum item: its maxLength bounds the estimated cost of the CEL rules that compare it.
_PrivilegeItem = Privilege

RoutineType = Literal["PROCEDURE", "FUNCTION"]
"""A stored procedure or a stored function."""


class Routine(_Model):
    """A stored procedure or function of the grant's database."""

    type: RoutineType
    """PROCEDURE or FUNCTION."""

    name: str = Field(max_length=OBJECT_NAME_MAX_LENGTH, pattern=COLUMN_NAME_PATTERN)
    """Name of the routine: 1 to 64 letters, digits, '_', '$' or '-' (the servers compare routine names
    without regard to case). It must exist when the grant is made (RoutineNotFound otherwise)."""


class Grant(_Model):
    """Privileges of the account on one level: global (database "*"), one database (table "*"), one
    table, columns of a table (columns), or one stored procedure or function (routine)."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": _GRANT_RULES})

    privileges: list[_PrivilegeItem] = Field(
        min_length=1, max_length=MAX_PRIVILEGES_PER_GRANT, json_schema_extra={"x-kubernetes-list-type": "set"}
    )
    """Privileges granted, as MySQL writes them: upper-case words, e.g. SELECT, INSERT, UPDATE, DELETE,
    EXECUTE, CREATE TEMPORARY TABLES, LOCK TABLES, and any other the server lists in SHOW PRIVILEGES (MySQL's
    dynamic BACKUP_ADMIN, REPLICATION_SLAVE_ADMIN…, MariaDB's SLAVE MONITOR, BINLOG MONITOR…: global only).
    ALL means every privilege of the grant's level and is listed alone. CREATE USER, FILE, PROCESS, RELOAD,
    REPLICATION CLIENT, REPLICATION SLAVE, SHOW DATABASES, SHUTDOWN, SUPER and CREATE TABLESPACE are global:
    only on database "*". A table grant allows only ALL, ALTER, CREATE, CREATE VIEW, DELETE, DROP, INDEX,
    INSERT, REFERENCES, SELECT, SHOW VIEW, TRIGGER and UPDATE. A name the server does not have, or not at
    this level, makes the resource Ready=False (PrivilegeUnknown, PrivilegeMisplaced)."""

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

    columns: (
        list[Annotated[str, Field(max_length=OBJECT_NAME_MAX_LENGTH, pattern=COLUMN_NAME_PATTERN)]] | None
    ) = Field(
        default=None,
        min_length=1,
        max_length=MAX_COLUMNS,
        json_schema_extra={"x-kubernetes-list-type": "set"},
    )
    """Columns of the table the privileges apply to, instead of the whole table (GRANT SELECT (a, b) ON
    db.table): 1 to 64 letters, digits, '_', '$' or '-' each. Only SELECT, INSERT, UPDATE and REFERENCES,
    without grantOption; the table and columns must exist (ColumnNotFound otherwise). Several entries with
    columns may name the same table."""

    routine: Routine | None = None
    """A stored procedure or function of the database the privileges apply to (GRANT EXECUTE ON PROCEDURE
    db.name): only EXECUTE, ALTER ROUTINE or ALL; table stays "*"."""

    @field_validator("privileges")
    @classmethod
    def _a_set(cls, privileges: list[Privilege]) -> list[Privilege]:
        duplicates = sorted({privilege for privilege in privileges if privileges.count(privilege) > 1})
        if duplicates:
            raise ValueError(f"duplicate privileges: {', '.join(duplicates)}")
        return privileges

    @field_validator("columns")
    @classmethod
    def _columns(cls, columns: list[str] | None) -> list[str] | None:
        duplicates = sorted({column for column in columns or [] if (columns or []).count(column) > 1})
        if duplicates:
            raise ValueError(f"duplicate columns: {', '.join(duplicates)}")
        return columns

    @model_validator(mode="after")
    def _rules(self) -> Grant:
        """The CEL rules of the schema, with their messages."""
        where = {"database": self.database, "table": self.table}
        escaped = len(self.database) + self.database.count("_")
        if self.table == "*" and self.routine is None and escaped > OBJECT_NAME_MAX_LENGTH:
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
        self._listed_and_narrow_levels()
        return self

    def _listed_and_narrow_levels(self) -> None:
        """The rules on names that are no privilege, column grants and routine grants."""
        for privilege in self.privileges:
            if privilege in NOT_LISTED:
                raise ValueError(NOT_LISTED_MESSAGE.format(privilege=privilege))
        if self.columns is not None:
            if self.table == "*":
                raise ValueError(COLUMNS_NEED_TABLE_MESSAGE)
            if self.grant_option:
                raise ValueError(COLUMNS_NO_OPTION_MESSAGE)
            for privilege in self.privileges:
                if privilege not in COLUMN_PRIVILEGES:
                    raise ValueError(COLUMNS_PRIVILEGES_MESSAGE.format(privilege=privilege))
        if self.routine is not None:
            if self.database == "*" or self.table != "*" or self.columns is not None:
                raise ValueError(ROUTINE_LEVEL_MESSAGE)
            for privilege in self.privileges:
                if privilege not in ROUTINE_PRIVILEGES:
                    raise ValueError(ROUTINE_PRIVILEGES_MESSAGE.format(privilege=privilege))


X509_ALONE_MESSAGE: Final = (
    "x509 stands alone (MySQL's REQUIRE X509): issuer and subject require a client certificate by themselves"
)


class TLSIdentity(_Model):
    """What the account must show over TLS besides TLS itself: any client certificate that the server's CA
    trusts (x509), or a certificate of this issuer and/or subject, and/or this cipher. Any of them implies
    requireTLS."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "!self.x509 || (!has(self.issuer) && !has(self.subject) && !has(self.cipher))",
                    "message": X509_ALONE_MESSAGE,
                    "fieldPath": ".x509",
                }
            ]
        }
    )

    x509: bool = Field(default=False, strict=True)
    """REQUIRE X509: the client must present a certificate signed by a CA the server trusts. Stands alone
    (issuer and subject imply it). Defaults to false."""

    issuer: str | None = Field(default=None, max_length=TLS_NAME_MAX_LENGTH, pattern=TLS_NAME_PATTERN)
    """REQUIRE ISSUER: the client certificate's issuer, in OpenSSL's one-line form as the server compares
    it: "/C=SE/O=Example/CN=Example CA" (printable ASCII; other bytes of a name are written \\xHH)."""

    subject: str | None = Field(default=None, max_length=TLS_NAME_MAX_LENGTH, pattern=TLS_NAME_PATTERN)
    """REQUIRE SUBJECT: the client certificate's subject, in OpenSSL's one-line form:
    "/O=Example/CN=app" (printable ASCII; other bytes of a name are written \\xHH)."""

    cipher: str | None = Field(default=None, max_length=TLS_CIPHER_MAX_LENGTH, pattern=TLS_CIPHER_PATTERN)
    """REQUIRE CIPHER: the TLS cipher the connection must use, by its OpenSSL name (e.g.
    TLS_AES_256_GCM_SHA384). On MySQL, a cipher requirement needs a client certificate too."""

    @model_validator(mode="after")
    def _x509_alone(self) -> TLSIdentity:
        if self.x509 and (self.issuer is not None or self.subject is not None or self.cipher is not None):
            raise ValueError(X509_ALONE_MESSAGE)
        return self


class Authentication(_Model):
    """How the account authenticates."""

    plugin: AuthenticationPlugin
    """The authentication plugin: caching_sha2_password (MySQL's default), sha256_password (MySQL,
    deprecated), mysql_native_password (MariaDB's default; removed in MySQL 9), ed25519 (MariaDB, after
    INSTALL SONAME 'auth_ed25519'), auth_socket (MySQL) or unix_socket (MariaDB): the operating system user
    of a local socket connection, AWSAuthenticationPlugin: an AWS IAM token (Amazon RDS). The plugin must be
    active in the server (else Ready=False, reason PluginUnavailable). auth_socket, unix_socket and
    AWSAuthenticationPlugin take no password: spec.password must then be left out. Changing the plugin keeps
    the password."""


_PASSWORDLESS_CEL: Final = _cel_list(PASSWORDLESS_PLUGINS)
PASSWORD_REQUIRED_MESSAGE: Final = (
    "spec.password or spec.generatedPassword is required unless spec.authentication.plugin takes no "
    "password (" + ", ".join(PASSWORDLESS_PLUGINS) + ")"
)
NO_PASSWORD_MESSAGE: Final = (
    "the plugin {plugin} takes no password: leave spec.password and spec.generatedPassword out"  # noqa: S105
)
# Roles of a DatabaseUser: names of DatabaseRoles (Kubernetes object names) in its namespace.
MAX_ROLES: Final = 32
DEFAULT_ROLES_MESSAGE: Final = "every default role must be listed in roles"
_RoleName = Annotated[str, Field(max_length=DNS_SUBDOMAIN_MAX_LENGTH, pattern=DNS_SUBDOMAIN_PATTERN)]
# A host of spec.hosts: the pattern and length of spec.host.
_HostItem = Annotated[str, Field(max_length=HOST_MAX_LENGTH, pattern=HOST_PATTERN)]


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


ServerKind = Literal["MySQLServer", "ClusterMySQLServer"]
"""The kinds of server resource a serverRef may name."""

SERVER_REF_IMMUTABLE_MESSAGE: Final = "spec.serverRef is immutable"
SERVER_REF_RULE: Final[dict[str, JsonValue]] = {
    "rule": "has(self.serverRef) == has(oldSelf.serverRef)"
    " && (!has(self.serverRef) || self.serverRef == oldSelf.serverRef)",
    "message": SERVER_REF_IMMUTABLE_MESSAGE,
    "fieldPath": ".serverRef",
}
"""The CEL rule of a spec with a serverRef (transition rules: the models cannot check them)."""


class ServerRef(_Model):
    """The server resource an account or role lives on."""

    kind: ServerKind = "MySQLServer"
    """MySQLServer (in the namespace of the referring resource; the default) or ClusterMySQLServer."""

    name: str = Field(max_length=DNS_SUBDOMAIN_MAX_LENGTH, pattern=DNS_SUBDOMAIN_PATTERN)
    """Name of the server resource."""


class DatabaseUserSpec(_Model):
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
                    "rule": "has(self.password) || has(self.generatedPassword) || (has(self.authentication)"
                    f" && self.authentication.plugin in {_PASSWORDLESS_CEL})",
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
                    " || !has(self.authentication)"
                    f" || !(self.authentication.plugin in {_PASSWORDLESS_CEL})",
                    "message": "a plugin that takes no password: leave spec.password and"
                    " spec.generatedPassword out",
                    "messageExpression": _cel_format(
                        NO_PASSWORD_MESSAGE, plugin="self.authentication.plugin"
                    ),
                    "fieldPath": ".password",
                },
                {
                    "rule": "self.hosts.all(h, h.lowerAscii() != self.host.lowerAscii())"
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

    hosts: list[_HostItem] = Field(
        default=[], max_length=MAX_HOSTS, json_schema_extra={"x-kubernetes-list-type": "set"}
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
                    " && a.database == b.database && a.table == b.table && has(a.routine) == has(b.routine)"
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
    NONE (unless tls asks for more)."""

    tls: TLSIdentity | None = None
    """What the account must show over TLS besides TLS itself: a client certificate (x509), its issuer
    and/or subject, a cipher (REQUIRE X509, ISSUER, SUBJECT, CIPHER). Implies requireTLS. Defaults to
    nothing more than requireTLS says."""

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
        default=[], max_length=MAX_ROLES, json_schema_extra={"x-kubernetes-list-type": "set"}
    )
    """Roles granted to the account: names of DatabaseRoles in the namespace of this DatabaseUser (served by
    the same operator). The operator grants exactly these roles and revokes any other role the account
    holds. Defaults to none."""

    default_roles: list[_RoleName] = Field(
        default=[], max_length=MAX_ROLES, json_schema_extra={"x-kubernetes-list-type": "set"}
    )
    """Roles active by default when the account logs in (SET DEFAULT ROLE), each also listed in roles.
    MySQL allows several; MariaDB one (more is refused with Ready=False, reason TooManyDefaultRoles).
    Defaults to none: the account activates roles itself with SET ROLE."""

    @model_validator(mode="after")
    def _password_source(self) -> DatabaseUserSpec:
        """The CEL rules on password, generatedPassword and authentication.plugin, with their messages."""
        plugin = self.authentication.plugin if self.authentication is not None else None
        given = self.password is not None or self.generated_password is not None
        if self.password is not None and self.generated_password is not None:
            raise ValueError(PASSWORD_SOURCE_MESSAGE)
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
            (grant.database, grant.table, grant.routine and (grant.routine.type, grant.routine.name))
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


class ObservedAccount(_Model):
    """One account as the server has it (managementPolicy Observe), never its password or hash."""

    host: str
    """Host of the account."""

    exists: bool
    """Whether the account exists."""

    plugin: str | None = None
    """Its authentication plugin."""

    tls: str | None = None
    """What it requires of the connection: NONE, SSL, X509 or SPECIFIED (an issuer, subject or cipher)."""

    max_user_connections: int | None = Field(default=None, json_schema_extra=_INT64)
    """Its MAX_USER_CONNECTIONS."""

    max_queries_per_hour: int | None = Field(default=None, json_schema_extra=_INT64)
    """Its MAX_QUERIES_PER_HOUR."""

    max_updates_per_hour: int | None = Field(default=None, json_schema_extra=_INT64)
    """Its MAX_UPDATES_PER_HOUR."""

    max_connections_per_hour: int | None = Field(default=None, json_schema_extra=_INT64)
    """Its MAX_CONNECTIONS_PER_HOUR."""

    privileges: list[str] = Field(default_factory=list)
    """Its global, database and table privileges, e.g. "SELECT, INSERT ON `app`.*"."""

    roles: list[str] = Field(default_factory=list)
    """The roles granted to it ('role'@'host'), where the server has roles."""

    differences: list[str] = Field(default_factory=list)
    """What Manage would change to bring it in line with the spec; empty when it matches."""


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

    authentication_plugin: str | None = None
    """The authentication plugin in force on the account, when spec.authentication names one."""
    hosts: list[str] | None = None
    """Hosts of the accounts this resource owns, as the operator's bookkeeping table records them at the
    end of the last pass: spec.host and spec.hosts, and a removed host whose account could not be dropped
    yet (the operator keeps trying)."""

    observed: list[ObservedAccount] | None = None
    """Under managementPolicy Observe: each account as the server has it, and how it differs from the
    spec."""

    privileges: list[str] | None = None
    """The privileges the account was last brought in line with, one line per grant as MySQL writes them
    (e.g. "SELECT, INSERT ON `app`.*", "SELECT (a, b) ON `app`.`t`", "EXECUTE ON PROCEDURE `app`.`p`").
    Absent when the account has none."""

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
