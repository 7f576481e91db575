"""Operator configuration: command-line flags, each also settable as ``DBUSER_OPERATOR_<NAME>``.

The MySQL admin password is never a flag (flags show in ``ps``): it comes from
``DBUSER_OPERATOR_MYSQL_PASSWORD`` or from the file ``--mysql-password-file`` names (a mounted Secret).
"""

from __future__ import annotations

import inspect
import os
import socket
from pathlib import Path
from typing import Annotated, Literal, Self

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_core import PydanticCustomError
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from dbuser_operator.api.v1alpha1.meta import MAX_TARGET_LENGTH
from dbuser_operator.api.v1alpha1.mysqlserver import ENDPOINT_NAMES_MESSAGE, MAX_ENDPOINTS, ServerEndpoint
from dbuser_operator.mysql.session.tls import SSLMode, TLSOptions

PASSWORD_ENV = "DBUSER_OPERATOR_MYSQL_PASSWORD"  # noqa: S105 - the variable's name
LABEL_VALUE_PATTERN = r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
LABEL_KEY_PATTERN = rf"^({_DNS_LABEL}(\.{_DNS_LABEL})*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{{0,61}}[A-Za-z0-9])?$"


class Settings(BaseSettings):
    """Manage MySQL and MariaDB user accounts declaratively from Kubernetes.

    The operator watches DatabaseUser resources (short name: dbu) that carry its target label, reads each
    account's password from a Secret, creates or alters the account in its MySQL server, reports progress
    as status conditions and events, and drops the account, behind a finalizer, when the resource is
    deleted. Every flag can also be set as DBUSER_OPERATOR_<FLAG> (upper case, underscores); the MySQL
    admin password comes from DBUSER_OPERATOR_MYSQL_PASSWORD or --mysql-password-file, never a flag.
    """

    model_config = SettingsConfigDict(
        env_prefix="DBUSER_OPERATOR_",
        cli_prog_name="dbuser-operator",
        cli_kebab_case=True,
        cli_implicit_flags=True,
        cli_use_class_docs_for_groups=False,
        extra="ignore",
    )

    target_label: str = Field(
        "dbuser-operator.dev/target",
        max_length=316,
        pattern=LABEL_KEY_PATTERN,
        description="label that assigns a DatabaseUser to an operator instance",
    )
    target: str = Field(
        "default",
        min_length=1,
        max_length=MAX_TARGET_LENGTH,
        pattern=LABEL_VALUE_PATTERN,
        description="value of the target label this instance serves (also names its finalizer, "
        f"mysql.dbuser-operator.dev/account-<target>, hence at most {MAX_TARGET_LENGTH} characters)",
    )
    namespaces: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="namespaces to watch, comma-separated; all namespaces when empty"
    )
    kubeconfig: Path | None = Field(
        None, description="kubeconfig file; in-cluster config when unset and in a pod"
    )

    mysql_host: str = Field("127.0.0.1", description="MySQL server host")
    mysql_port: int = Field(3306, ge=1, le=65535, description="MySQL server port")
    mysql_user: str = Field("root", description="MySQL admin user")
    connection_host: str | None = Field(
        None,
        min_length=1,
        max_length=255,
        description="host applications connect to, written into connection Secrets (default: --mysql-host)",
    )
    connection_port: int | None = Field(
        None, ge=1, le=65535, description="port written into connection Secrets (default: --mysql-port)"
    )
    connection_ssl_mode: SSLMode | None = Field(
        None,
        description="client TLS mode written into connection Secrets (key sslMode, ssl-mode= in "
        "DATABASE_URL, sslMode= in JDBC_URL), as --mysql-ssl-mode; unset: none (the client's default)",
    )
    connection_endpoints: list[ServerEndpoint] = Field(
        default_factory=list,
        max_length=MAX_ENDPOINTS,
        description="named endpoints of the default server for connection Secrets, a JSON list as a "
        'MySQLServer\'s spec.endpoints, e.g. [{"name":"primary","host":"mysql.db.svc"},{"name":"readonly",'
        '"host":"mysql-ro.db.svc","port":3306,"tls":{"mode":"REQUIRED"}}]; instead of --connection-host, '
        "--connection-port and --connection-ssl-mode",
    )
    mysql_password_file: Path | None = Field(
        None, description=f"file holding the admin password (else the {PASSWORD_ENV} environment variable)"
    )
    workload_signing_ca: Path | None = Field(
        None,
        description="directory of the CA that signs workload certificates (tls.crt, tls.key: a mounted "
        "kubernetes.io/tls Secret); unset: no workload identity (spec.authentication.workload is refused)",
    )
    workload_certificate_max_lifetime: float = Field(
        86400.0,
        ge=3600,
        le=7862400,
        description="seconds a workload certificate lasts at most: a pod's request (its podCertificate "
        "volume's maxExpirationSeconds) may ask for less, never more (at least 3600, the API's floor)",
    )
    workload_binding_grace: float = Field(
        10.0,
        ge=0,
        description="seconds a pod's certificate request waits for a DatabaseUser binding its ServiceAccount "
        "(one applied with the Deployment) before it is denied; a denied request is not retried",
    )
    mysql_connect_timeout: float = Field(
        5.0,
        gt=0,
        description="seconds to wait for a MySQL connection, the server's greeting and login included",
    )
    mysql_read_timeout: float = Field(
        10.0,
        gt=0,
        description="seconds to wait for the answer to one MySQL statement before its connection is dropped "
        "and the reconcile retried (raise it if statements legitimately wait longer, e.g. on metadata locks)",
    )
    mysql_ssl_mode: SSLMode | None = Field(
        None,
        description="TLS to MySQL, as the mysql client's --ssl-mode: DISABLED, PREFERRED (TLS if offered, "
        "unverified), REQUIRED (unverified), VERIFY_CA, VERIFY_IDENTITY; unset (null): VERIFY_IDENTITY when "
        "a --mysql-tls-* file or --mysql-tls-required is given, else PREFERRED",
    )
    mysql_tls_ca: Path | None = Field(None, description="CA bundle to verify the MySQL server with")
    mysql_tls_cert: Path | None = Field(
        None, description="client certificate for MySQL (with --mysql-tls-key)"
    )
    mysql_tls_key: Path | None = Field(None, description="client key for MySQL")
    mysql_tls_server_name: str | None = Field(
        None,
        min_length=1,
        description="name VERIFY_IDENTITY checks in the certificate (default: --mysql-host)",
    )
    mysql_tls_required: bool = Field(
        False, description="deprecated: refuse a MySQL connection without TLS (use --mysql-ssl-mode)"
    )

    default_server: bool = Field(
        True,
        description="manage the server the --mysql-* flags name for resources without spec.serverRef; false: "
        "only MySQLServer and ClusterMySQLServer resources (resources without serverRef are refused)",
    )
    cluster_resource_namespace: str = Field(
        default_factory=lambda: os.environ.get("POD_NAMESPACE", "default"),
        min_length=1,
        max_length=63,
        description="namespace of the Secrets of ClusterMySQLServers (default: $POD_NAMESPACE, else default)",
    )
    server_check_period: float = Field(
        30.0, gt=0, description="seconds between health checks of each MySQLServer and ClusterMySQLServer"
    )
    server_probe_period: float = Field(
        3.0,
        gt=0,
        description="seconds between liveness probes of each server in use (every second while one does not "
        "answer); a change marks its resources and server resource within seconds",
    )

    ownership_schema: str = Field(
        "dbuser_operator",
        description="MySQL schema of the operator's bookkeeping table (which accounts it owns)",
    )
    reserved_users: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="more MySQL user names never to manage, comma-separated (root, mysql.*, mariadb.sys, "
        "debian-sys-maint and the admin user always are)",
    )
    allowed_global_privileges: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["PROCESS", "REPLICATION CLIENT", "SHOW DATABASES"],
        description="privileges a DatabaseUser may be granted on *.*, comma-separated (others would let an "
        "account take over other accounts)",
    )
    cert_manager: bool = Field(
        False,
        description="request the client certificates of DatabaseUsers' spec.tls.certificate from "
        "cert-manager (its CRDs must be installed, and the operator may manage Certificates)",
    )
    cert_manager_cluster_issuers: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="ClusterIssuers any namespace may request client certificates from, comma-separated, "
        "where no server policy decides (the default server, a server resource without spec.policy); "
        "default none",
    )
    resync_period: float = Field(
        300.0, ge=0, description="seconds between drift checks of every owned account (0: never)"
    )
    max_concurrent_reconciles: int = Field(
        16, ge=1, le=64, description="reconciles that may run at once (and MySQL connections in the pool)"
    )
    metrics_bind_address: str = Field("0.0.0.0:8080", description="host:port of /metrics")
    health_probe_bind_address: str = Field("0.0.0.0:8081", description="host:port of /healthz, /readyz")
    shutdown_timeout: float = Field(30.0, ge=0, description="seconds in-flight reconciles get to finish")

    leader_elect: bool = Field(False, description="elect a leader among replicas (enable with replicas > 1)")
    leader_election_id: str = Field("dbuser-operator", description="name of the Lease")
    leader_election_namespace: str = Field(
        default_factory=lambda: os.environ.get("POD_NAMESPACE", "default"),
        description="namespace of the Lease (default: $POD_NAMESPACE, else default)",
    )
    leader_election_identity: str = Field(
        default_factory=lambda: os.environ.get("POD_NAME") or socket.gethostname(),
        description="this replica's identity (default: $POD_NAME, else the host name)",
    )
    leader_election_lease_duration: float = Field(
        15.0, gt=0, description="advanced: seconds a standby waits before taking over an unrenewed lease"
    )
    leader_election_renew_deadline: float = Field(
        10.0, gt=0, description="advanced: seconds the leader keeps trying to renew before it gives up"
    )
    leader_election_retry_period: float = Field(
        2.0, gt=0, description="advanced: seconds between attempts to acquire or renew the lease"
    )

    log_format: Literal["json", "console"] = Field("json", description="json lines, or key-value for humans")
    log_level: Literal["debug", "info", "warning", "error"] = Field("info", description="lowest level logged")

    @field_validator("mysql_ssl_mode", "connection_ssl_mode", mode="before")
    @classmethod
    def _mode_in_any_case(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _one_way_to_name_endpoints(self) -> Self:
        names = [endpoint.name for endpoint in self.connection_endpoints]
        if len(set(names)) != len(names):
            raise PydanticCustomError("endpoints", "--connection-endpoints: " + ENDPOINT_NAMES_MESSAGE)
        single = (self.connection_host, self.connection_port, self.connection_ssl_mode)
        if names and any(value is not None for value in single):
            raise PydanticCustomError(
                "endpoints",
                "--connection-endpoints replaces --connection-host, --connection-port and "
                "--connection-ssl-mode: set one or the other",
            )
        return self

    @model_validator(mode="after")
    def _consistent_tls(self) -> Self:
        problems = self.mysql_tls_options().problems(_TLS_FLAGS)
        if problems:
            raise PydanticCustomError("tls_settings", "; ".join(problems))
        return self

    def missing_files(self) -> list[str]:
        """The file flags that name no file, each ``--flag: no such file: path`` (or ``not a file``).

        Checked at start by the command line (exit code 2, one line each), not while parsing: parsing looks
        at no file system (the chart's tests parse flags whose files exist only in a pod).
        """
        problems = []
        for name in _FILE_FLAGS:
            path: Path | None = getattr(self, name)
            if path is not None and not path.is_file():
                problem = "not a file" if path.exists() else "no such file"
                problems.append(f"--{name.replace('_', '-')}: {problem}: {path}")
        return problems

    def mysql_tls_options(self) -> TLSOptions:
        """The TLS flags, for the MySQL layer."""
        return TLSOptions(
            self.mysql_ssl_mode,
            self.mysql_tls_ca,
            self.mysql_tls_cert,
            self.mysql_tls_key,
            self.mysql_tls_required,
            self.mysql_tls_server_name,
        )

    def mysql_tls_hints(self) -> list[str]:
        """TLS flags that work but deserve a change (logged at start)."""
        return self.mysql_tls_options().hints(_TLS_FLAGS)

    @field_validator(
        "namespaces",
        "reserved_users",
        "allowed_global_privileges",
        "cert_manager_cluster_issuers",
        mode="before",
    )
    @classmethod
    def _split_namespaces(cls, value: object) -> object:
        if isinstance(value, str):
            return [name.strip() for name in value.split(",") if name.strip()]
        return value

    def mysql_password(self) -> SecretStr:
        """The admin password, from the file or the environment; empty when neither is set."""
        if self.mysql_password_file is not None:
            return SecretStr(self.mysql_password_file.read_text().rstrip("\r\n"))
        return SecretStr(os.environ.get(PASSWORD_ENV, ""))


_FILE_FLAGS = ("kubeconfig", "mysql_password_file", "mysql_tls_ca", "mysql_tls_cert", "mysql_tls_key")

_TLS_FLAGS = {
    "mode": "--mysql-ssl-mode",
    "ca": "--mysql-tls-ca",
    "cert": "--mysql-tls-cert",
    "key": "--mysql-tls-key",
    "required": "--mysql-tls-required",
    "server_name": "--mysql-tls-server-name",
}

Settings.__doc__ = inspect.cleandoc(Settings.__doc__ or "")  # the --help description, without indentation
