"""A DatabaseUser's account beyond its grants and its password: how it authenticates, what it must show
over TLS, its limits, and the account as the server has it (managementPolicy Observe)."""

from __future__ import annotations

from typing import Final, Literal, get_args

from pydantic import ConfigDict, Field, model_validator

from dbuser_operator.api.v1alpha1.meta import INT64, Model
from dbuser_operator.mysql import account_metadata, authentication, tls_identity

# Account limits: MySQL stores them as unsigned 32-bit integers. MariaDB stores max_user_connections as a
# signed one (a larger value is a syntax error there), so that limit stays within what both accept.
LIMIT_MAX: Final = 4294967295
USER_CONNECTIONS_MAX: Final = 2147483647

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

# spec.comment: printable text (Python's str.isprintable: no control, format or separator character but
# the space), bounded.
COMMENT_PATTERN: Final = r"^(?:[^\p{C}\p{Z}]| )*$"
COMMENT_MAX_LENGTH: Final = account_metadata.COMMENT_MAX_LENGTH

X509_ALONE_MESSAGE: Final = (
    "x509 stands alone (MySQL's REQUIRE X509): issuer and subject require a client certificate by themselves"
)


class TLSIdentity(Model):
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


class Authentication(Model):
    """How the account authenticates."""

    plugin: AuthenticationPlugin
    """The authentication plugin: caching_sha2_password (MySQL's default), sha256_password (MySQL,
    deprecated), mysql_native_password (MariaDB's default; removed in MySQL 9), ed25519 (MariaDB, after
    INSTALL SONAME 'auth_ed25519'), auth_socket (MySQL) or unix_socket (MariaDB): the operating system user
    of a local socket connection, AWSAuthenticationPlugin: an AWS IAM token (Amazon RDS). The plugin must be
    active in the server (else Ready=False, reason PluginUnavailable). auth_socket, unix_socket and
    AWSAuthenticationPlugin take no password: spec.password must then be left out. Changing the plugin keeps
    the password."""


class ObservedAccount(Model):
    """One account as the server has it (managementPolicy Observe), never its password or hash."""

    host: str
    """Host of the account."""

    exists: bool
    """Whether the account exists."""

    plugin: str | None = None
    """Its authentication plugin."""

    tls: str | None = None
    """What it requires of the connection: NONE, SSL, X509 or SPECIFIED (an issuer, subject or cipher)."""

    max_user_connections: int | None = Field(default=None, json_schema_extra=INT64)
    """Its MAX_USER_CONNECTIONS."""

    max_queries_per_hour: int | None = Field(default=None, json_schema_extra=INT64)
    """Its MAX_QUERIES_PER_HOUR."""

    max_updates_per_hour: int | None = Field(default=None, json_schema_extra=INT64)
    """Its MAX_UPDATES_PER_HOUR."""

    max_connections_per_hour: int | None = Field(default=None, json_schema_extra=INT64)
    """Its MAX_CONNECTIONS_PER_HOUR."""

    privileges: list[str] = Field(default_factory=list)
    """Its global, database and table privileges, e.g. "SELECT, INSERT ON `app`.*"."""

    roles: list[str] = Field(default_factory=list)
    """The roles granted to it ('role'@'host'), where the server has roles."""

    owner: str | None = None
    """The owner its attributes name (MySQL 8.0.21+): "namespace/name" of a DatabaseUser of this
    namespace, "a DatabaseUser of another namespace", or nothing. Information for people: the operator's
    bookkeeping table decides who owns an account."""

    comment: str | None = None
    """Its comment (MySQL 8.0.21+)."""

    differences: list[str] = Field(default_factory=list)
    """What Manage would change to bring it in line with the spec; empty when it matches."""
