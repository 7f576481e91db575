"""The ``MySQLServer`` and ``ClusterMySQLServer`` APIs, version v1alpha1: a MySQL/MariaDB server the operator
manages accounts in, and which namespaces may do what there.

Same group, version and conventions as the package's (:mod:`dbuser_operator.api.v1alpha1`): the CRDs are
generated from these models, and the models check what the CRDs check, with the same messages. Both kinds
share one spec and one status; they differ in scope. A ``MySQLServer`` is namespaced: its Secrets live in
its namespace, and (without a policy) only DatabaseUsers of that namespace may use it. A
``ClusterMySQLServer`` is cluster-scoped: its Secrets live in the operator's own namespace
(``--cluster-resource-namespace``, as cert-manager's ClusterIssuer), and (without a policy) every namespace
the operator watches may use it.

A DatabaseUser (or DatabaseRole) names its server with ``spec.serverRef`` (immutable); without it, the
server the operator's settings name is used, as before these kinds existed.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field, model_validator

from dbuser_operator.api.v1alpha1.access_report import AccessSummary
from dbuser_operator.api.v1alpha1.meta import (
    API_VERSION,
    CATEGORY,
    DNS_SUBDOMAIN_MAX_LENGTH,
    DNS_SUBDOMAIN_PATTERN,
    GROUP,
    NAMESPACED_CATEGORY,
    Condition,
    Model,
    ObjectMeta,
    SecretKeySelector,
    ServerKind,
    ServerRef,
)
from dbuser_operator.api.v1alpha1.server_policy import ServerPolicy

KIND: Final = "MySQLServer"
PLURAL: Final = "mysqlservers"
SINGULAR: Final = "mysqlserver"
SHORT_NAMES: Final = ("mysqlsrv",)
CLUSTER_KIND: Final = "ClusterMySQLServer"
CLUSTER_PLURAL: Final = "clustermysqlservers"
CLUSTER_SINGULAR: Final = "clustermysqlserver"
CLUSTER_SHORT_NAMES: Final = ("cmysqlsrv",)
CATEGORIES: Final = ("dbuser-servers", CATEGORY, NAMESPACED_CATEGORY)
CLUSTER_CATEGORIES: Final = ("dbuser-servers", CATEGORY)
CRD_NAME: Final = f"{PLURAL}.{GROUP}"
CLUSTER_CRD_NAME: Final = f"{CLUSTER_PLURAL}.{GROUP}"

SERVER_HOST_PATTERN: Final = r"^[A-Za-z0-9]([A-Za-z0-9.:_-]{0,253}[A-Za-z0-9])?$"
"""A host name, an IPv4 address or an IPv6 address (without brackets)."""
SCHEMA_PATTERN: Final = r"^[A-Za-z0-9_]{1,64}$"
MAX_POOL_SIZE: Final = 128
MAX_ENDPOINTS: Final = 16
ENDPOINT_NAME_PATTERN: Final = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
"""An endpoint's name: a DNS label (lower-case letters, digits and '-'), at most ENDPOINT_NAME_MAX_LENGTH."""
ENDPOINT_NAME_MAX_LENGTH: Final = 63
ENDPOINT_NAMES_MESSAGE: Final = "endpoint names must be unique"
SSLModeName = Literal["DISABLED", "PREFERRED", "REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY"]
"""The MySQL client's --ssl-mode values."""
PRINTER_COLUMNS: Final[tuple[dict[str, object], ...]] = (
    {"name": "Host", "type": "string", "jsonPath": ".spec.host", "description": "Server host"},
    {"name": "Port", "type": "integer", "jsonPath": ".spec.port", "description": "Server port"},
    {
        "name": "Ready",
        "type": "string",
        "jsonPath": '.status.conditions[?(@.type=="Ready")].status',
        "description": "Whether the operator can reach and manage the server",
    },
    {
        "name": "Reason",
        "type": "string",
        "jsonPath": '.status.conditions[?(@.type=="Ready")].reason',
        "description": "Why the server is (not) ready",
    },
    {"name": "Flavour", "type": "string", "jsonPath": ".status.flavour", "description": "MySQL or MariaDB"},
    {"name": "Version", "type": "string", "jsonPath": ".status.version", "description": "Server version"},
    {
        "name": "Accounts",
        "type": "integer",
        "jsonPath": ".status.accounts",
        "description": "Accounts the operator manages there",
    },
    {
        "name": "DualPasswords",
        "type": "boolean",
        "jsonPath": ".status.capabilities.dualPasswords",
        "description": "Whether the server keeps a retained password (RETAIN CURRENT PASSWORD)",
        "priority": 1,
    },
    {
        "name": "Roles",
        "type": "boolean",
        "jsonPath": ".status.capabilities.roles",
        "description": "Whether the server has roles",
        "priority": 1,
    },
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
)


class ServerCredentials(Model):
    """The admin account the operator uses on the server: Secret keys of the server's namespace (of the
    operator's namespace for a ClusterMySQLServer). A change of either Secret reconnects, no restart."""

    user: SecretKeySelector
    """The Secret key that holds the admin user name."""

    password: SecretKeySelector
    """The Secret key that holds the admin password."""


class ServerTLS(Model):
    """TLS towards the server, as the MySQL client's --ssl-mode and --ssl-* options."""

    mode: SSLModeName = "PREFERRED"
    """DISABLED, PREFERRED (TLS when the server offers it, the default), REQUIRED (TLS, certificate not
    checked), VERIFY_CA (TLS, certificate signed by ca) or VERIFY_IDENTITY (and issued to the server's
    name)."""

    ca: SecretKeySelector | None = None
    """The Secret key that holds the CA certificate(s) (PEM) that sign the server's certificate; required by
    VERIFY_CA and VERIFY_IDENTITY."""

    client_certificate_secret: str | None = Field(
        default=None, max_length=DNS_SUBDOMAIN_MAX_LENGTH, pattern=DNS_SUBDOMAIN_PATTERN
    )
    """Name of a kubernetes.io/tls Secret (keys tls.crt and tls.key) whose certificate the operator shows
    the server, for an admin account that requires X509."""

    server_name: str | None = Field(default=None, min_length=1, max_length=253)
    """The name VERIFY_IDENTITY checks in the server's certificate (default: host)."""


class EndpointTLS(Model):
    """TLS from applications to an endpoint, as the connection Secret's URLs ask their clients for it."""

    mode: SSLModeName
    """The client's TLS mode, as the MySQL client's --ssl-mode: DISABLED, PREFERRED, REQUIRED, VERIFY_CA or
    VERIFY_IDENTITY. Written into the connection Secret: the key sslMode, ssl-mode=<mode> in DATABASE_URL
    and sslMode=<mode> in JDBC_URL."""


class ServerEndpoint(Model):
    """An address applications connect to (a Service, a proxy, a read-only replica): written into the
    connection Secrets of the DatabaseUsers on this server, never used by the operator itself."""

    name: str = Field(max_length=ENDPOINT_NAME_MAX_LENGTH, pattern=ENDPOINT_NAME_PATTERN)
    """The endpoint's name (a DNS label, e.g. primary, readonly, proxy), which a DatabaseUser's
    spec.connectionSecret.endpoint names."""

    host: str = Field(max_length=255, pattern=SERVER_HOST_PATTERN)
    """Host name or IP address applications connect to."""

    port: int = Field(default=3306, ge=1, le=65535)
    """TCP port applications connect to. Defaults to 3306."""

    tls: EndpointTLS | None = None
    """TLS applications use towards this endpoint. Unset: the URLs name no TLS mode (the client's default,
    as before endpoints existed)."""


class MySQLServerSpec(Model):
    """How to reach the server as its admin, where the operator keeps its bookkeeping there, and who may
    use it."""

    host: str = Field(max_length=255, pattern=SERVER_HOST_PATTERN)
    """Host name or IP address of the server."""

    port: int = Field(default=3306, ge=1, le=65535)
    """TCP port of the server. Defaults to 3306."""

    credentials: ServerCredentials
    """The admin account: Secret keys holding its user name and password."""

    tls: ServerTLS | None = None
    """TLS towards the server. Defaults to PREFERRED: TLS when the server offers it."""

    endpoints: list[ServerEndpoint] | None = Field(
        default=None,
        max_length=MAX_ENDPOINTS,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )
    """The addresses applications connect to (at most 16, names unique), distinct from host and port (the
    operator's admin connection). A DatabaseUser's connection Secret names one in
    spec.connectionSecret.endpoint, by default the first. Unset: connection Secrets carry host and port."""

    pool_size: int | None = Field(default=None, ge=1, le=MAX_POOL_SIZE)
    """Most connections the operator opens to the server at once. Defaults to the operator's
    --max-concurrent-reconciles."""

    bookkeeping_schema: str | None = Field(default=None, max_length=64, pattern=SCHEMA_PATTERN)
    """The schema where the operator records which accounts it owns on this server (and its leader
    epoch). Defaults to the operator's --ownership-schema. Immutable in practice: changing it forgets
    ownership."""

    policy: ServerPolicy | None = None
    """Which namespaces may use the server and within which bounds. Unset: a MySQLServer serves its own
    namespace only, a ClusterMySQLServer every namespace the operator watches, both without bounds beyond
    the operator's own."""

    @model_validator(mode="after")
    def _endpoint_names_unique(self) -> MySQLServerSpec:
        """What the CRD's list map (keyed by name) checks, with a message."""
        names = [endpoint.name for endpoint in self.endpoints or []]
        if len(set(names)) != len(names):
            raise ValueError(ENDPOINT_NAMES_MESSAGE)
        return self


class ServerCapabilities(Model):
    """What the server can do, as detected from the live server (never from configuration)."""

    dual_passwords: bool | None = None
    """Whether the server can keep the old password next to the new one (MySQL 8.0.21+, MariaDB 10.11+):
    rotation strategy DualPassword."""

    roles: bool | None = None
    """Whether the server has roles."""

    many_default_roles: bool | None = None
    """Whether an account may have several default roles (MySQL; MariaDB has one)."""

    plugins: list[str] | None = None
    """The active authentication plugins."""


class MySQLServerStatus(Model):
    """The server as the operator last checked it."""

    conditions: list[Condition] = Field(
        default_factory=list,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )
    """Latest observations. Ready is True when the operator can log in as the admin and use the
    bookkeeping schema."""

    observed_generation: int | None = Field(default=None, ge=0, json_schema_extra={"format": "int64"})
    """The metadata.generation the operator last acted on."""

    flavour: Literal["MySQL", "MariaDB"] | None = None
    """MySQL or MariaDB, from the live server."""

    version: str | None = None
    """The server's version, e.g. 9.7.0 or 11.8.3."""

    capabilities: ServerCapabilities | None = None
    """What the server can do."""

    accounts: int | None = Field(default=None, ge=0, json_schema_extra={"format": "int64"})
    """How many accounts and roles the operator's bookkeeping records there."""

    access: AccessSummary | None = None
    """Who can reach what: every account and role on the server, its owner or Unmanaged, drift (bounded)."""


class _Server(Model):
    """What both kinds have."""

    api_version: str = API_VERSION
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: MySQLServerSpec
    """How to reach the server, and who may use it."""

    status: MySQLServerStatus | None = None
    """The server as the operator last checked it (written by the operator only)."""


class MySQLServer(_Server):
    """A MySQL or MariaDB server whose accounts dbuser-operator manages, for DatabaseUsers and DatabaseRoles
    that name it in spec.serverRef (kind MySQLServer): those of its own namespace, or as its policy says."""

    kind: str = KIND


class ClusterMySQLServer(_Server):
    """A MySQL or MariaDB server whose accounts dbuser-operator manages, for DatabaseUsers and DatabaseRoles
    of any namespace its policy allows that name it in spec.serverRef (kind ClusterMySQLServer)."""

    kind: str = CLUSTER_KIND


__all__ = ["ServerKind", "ServerRef"]  # defined with DatabaseUser, which names its server
