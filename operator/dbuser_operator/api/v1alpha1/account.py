"""A DatabaseUser's account beyond its grants and its password: how it authenticates, what it must show
over TLS, its limits, its lock and password policy, and the account as the server has it (managementPolicy
Observe)."""

from __future__ import annotations

from datetime import datetime
from typing import Final, Literal, get_args

from pydantic import ConfigDict, Field, JsonValue, model_validator

from dbuser_operator.api.duration import DAYS_PATTERN, days_cel, parse_days
from dbuser_operator.api.v1alpha1.client_certificate import ClientCertificate
from dbuser_operator.api.v1alpha1.meta import DNS_SUBDOMAIN_PATTERN, INT64, Model
from dbuser_operator.mysql.accounts import account_metadata, authentication, tls_identity

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
CERTIFICATE_SUBJECT_MESSAGE: Final = (
    "tls.certificate needs tls.subject: the certificate is requested with the subject the account requires"
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
                },
                {
                    "rule": "!has(self.certificate) || has(self.subject)",
                    "message": CERTIFICATE_SUBJECT_MESSAGE,
                    "fieldPath": ".certificate",
                },
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

    certificate: ClientCertificate | None = None
    """Have the operator request the client certificate from cert-manager (an Issuer of this namespace, or
    a ClusterIssuer the server's policy admits), with subject as its subject; the connection Secret then
    carries tls.crt, tls.key and ca.crt, renewed by cert-manager without a write to MySQL. Needs subject,
    and an operator started with --cert-manager. Unset: the client brings its own certificate."""

    @model_validator(mode="after")
    def _x509_alone(self) -> TLSIdentity:
        if self.x509 and (self.issuer is not None or self.subject is not None or self.cipher is not None):
            raise ValueError(X509_ALONE_MESSAGE)
        if self.certificate is not None and self.subject is None:
            raise ValueError(CERTIFICATE_SUBJECT_MESSAGE)
        return self


WORKLOAD_NAME_MAX_LENGTH: Final = 64
"""The longest ServiceAccount name a workload identity takes: X.509's upper bound on a common name."""


class WorkloadIdentity(Model):
    """The workload whose pods log in to the account: a ServiceAccount of the DatabaseUser's namespace. Its
    pods log in with the client certificate the operator signs for them (Pod Certificates); the account takes
    no password. See docs/workload-identity.md."""

    service_account_name: str = Field(
        alias="serviceAccountName", max_length=WORKLOAD_NAME_MAX_LENGTH, pattern=DNS_SUBDOMAIN_PATTERN
    )
    """The ServiceAccount's name, in the DatabaseUser's namespace (a ServiceAccount of another namespace
    cannot be named): at most 64 characters, X.509's bound on the certificate's common name."""


AUTHENTICATION_ONE_OF_MESSAGE: Final = "spec.authentication takes exactly one of plugin and workload"


WORKLOAD_NO_PASSWORD_MESSAGE: Final = (
    "a workload identity takes no password: leave spec.password and spec.generatedPassword out"  # noqa: S105
)
WORKLOAD_TLS_MESSAGE: Final = (
    "a workload identity's issuer and subject are the operator's: leave spec.tls.issuer, spec.tls.subject and"
    " spec.tls.x509 out"
)
WORKLOAD_IMMUTABLE_MESSAGE: Final = (
    "spec.authentication.workload is immutable: a ServiceAccount is bound when the DatabaseUser is created"
    " and cannot be bound later, changed or unbound (create another DatabaseUser)"
)
WORKLOAD_ROTATION_MESSAGE: Final = (
    "a workload identity has no password to rotate (the kubelet refreshes its certificate): leave"
    " spec.rotation out"
)
WORKLOAD_CEL: Final = "has(self.authentication) && has(self.authentication.workload)"
_OLD_WORKLOAD_CEL: Final = "has(oldSelf.authentication) && has(oldSelf.authentication.workload)"
WORKLOAD_RULES: Final[tuple[dict[str, JsonValue], ...]] = (
    {
        "rule": f"!({WORKLOAD_CEL}) || !(has(self.password) || has(self.generatedPassword))",
        "message": WORKLOAD_NO_PASSWORD_MESSAGE,
        "fieldPath": ".authentication.workload",
    },
    {
        "rule": f"({WORKLOAD_CEL}) == ({_OLD_WORKLOAD_CEL}) && (!({WORKLOAD_CEL})"
        " || self.authentication.workload.serviceAccountName"
        " == oldSelf.authentication.workload.serviceAccountName)",
        "message": WORKLOAD_IMMUTABLE_MESSAGE,
        "fieldPath": ".authentication",
    },
    {
        "rule": f"!({WORKLOAD_CEL}) || !has(self.rotation)",
        "message": WORKLOAD_ROTATION_MESSAGE,
        "fieldPath": ".rotation",
    },
    {
        "rule": f"!({WORKLOAD_CEL}) || !has(self.tls)"
        " || !((has(self.tls.x509) && self.tls.x509)"
        " || has(self.tls.issuer) || has(self.tls.subject))",
        "message": WORKLOAD_TLS_MESSAGE,
        "fieldPath": ".authentication.workload",
    },
)
"""The DatabaseUser spec's CEL rules of a workload identity (the model checks them too, transitions aside)."""


class Authentication(Model):
    """How the account authenticates: with a plugin of the server's, or as a workload's identity."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {"rule": "has(self.plugin) != has(self.workload)", "message": AUTHENTICATION_ONE_OF_MESSAGE}
            ]
        }
    )

    plugin: AuthenticationPlugin | None = None
    """The authentication plugin: caching_sha2_password (MySQL's default), sha256_password (MySQL,
    deprecated), mysql_native_password (MariaDB's default; removed in MySQL 9), ed25519 (MariaDB, after
    INSTALL SONAME 'auth_ed25519'), auth_socket (MySQL) or unix_socket (MariaDB): the operating system user
    of a local socket connection, AWSAuthenticationPlugin: an AWS IAM token (Amazon RDS). The plugin must be
    active in the server (else Ready=False, reason PluginUnavailable). auth_socket, unix_socket and
    AWSAuthenticationPlugin take no password: spec.password must then be left out. Changing the plugin keeps
    the password."""

    workload: WorkloadIdentity | None = None
    """The account is a workload's, certificate-only: REQUIRE ISSUER (the operator's signing CA) SUBJECT
    "/O=dbuser-operator/OU=<namespace>/CN=<serviceAccountName>" and no password; the pods of that
    ServiceAccount log in with the certificate their kubelet mounts (a podCertificate projected volume
    signed by the operator). Excludes plugin, spec.password, spec.generatedPassword and spec.tls's issuer,
    subject and x509 (the operator pins them). The server policy must allow it (allowWorkloadIdentity)."""

    @model_validator(mode="after")
    def _one_of(self) -> Authentication:
        if (self.plugin is None) == (self.workload is None):
            raise ValueError(AUTHENTICATION_ONE_OF_MESSAGE)
        return self


PASSWORD_LIFETIME_MAX: Final = 65535
"""The longest password lifetime in days (MySQL keeps it in a SMALLINT UNSIGNED)."""
FAILED_LOGIN_ATTEMPTS_MAX: Final = 32767
PASSWORD_LOCK_TIME_MAX: Final = 32767
"""MySQL's bounds of FAILED_LOGIN_ATTEMPTS and PASSWORD_LOCK_TIME (days)."""

NEVER: Final = "Never"
DEFAULT: Final = "Default"
UNBOUNDED: Final = "Unbounded"
_DAYS: Final = DAYS_PATTERN[2:-2]  # the alternatives, without anchors and group
PASSWORD_EXPIRE_PATTERN: Final = rf"^({NEVER}|{DEFAULT}|{_DAYS})$"
PASSWORD_LOCK_TIME_PATTERN: Final = rf"^({UNBOUNDED}|{_DAYS})$"
PASSWORD_EXPIRE_MESSAGE: Final = (
    f"passwordExpire is Never, Default or a whole number of days from 1 to {PASSWORD_LIFETIME_MAX} "
    "(90d, or a duration of whole days such as 2160h)"
)
PASSWORD_LOCK_TIME_MESSAGE: Final = (
    f"passwordLockTime is Unbounded or a whole number of days from 1 to {PASSWORD_LOCK_TIME_MAX} "
    "(2d, or a duration of whole days such as 48h)"
)
FAILED_LOGIN_PAIR_MESSAGE: Final = "failedLoginAttempts and passwordLockTime go together: set both or neither"
EXPIRES_AT_MESSAGE: Final = "expiresAt is an RFC 3339 time with a time zone, e.g. 2026-12-31T18:00:00Z"


def password_lifetime_days(value: str) -> int | None:
    """The days of a passwordExpire interval; None for Never and Default (ValueError when malformed)."""
    if value in (NEVER, DEFAULT):
        return None
    return parse_days(value, most=PASSWORD_LIFETIME_MAX)


def lock_time_days(value: str) -> int | None:
    """The days of a passwordLockTime; None for Unbounded (ValueError when malformed)."""
    if value == UNBOUNDED:
        return None
    return parse_days(value, most=PASSWORD_LOCK_TIME_MAX)


def parse_expires_at(value: str) -> datetime:
    """expiresAt as an aware time (ValueError when it is not RFC 3339 with a time zone)."""
    try:
        moment = datetime.fromisoformat(value.upper())
    except ValueError:
        raise ValueError(EXPIRES_AT_MESSAGE) from None
    if moment.tzinfo is None:
        raise ValueError(EXPIRES_AT_MESSAGE)
    return moment


class AccountSpec(Model):
    """The account's lock and password policy. Every field is optional; the defaults leave an account as
    the operator has always made it: unlocked, a password that does not expire, no failed-login lock."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "!has(self.passwordExpire)"
                    f" || self.passwordExpire in ['{NEVER}', '{DEFAULT}']"
                    f" || ({days_cel('self.passwordExpire', 1, PASSWORD_LIFETIME_MAX)})",
                    "message": PASSWORD_EXPIRE_MESSAGE,
                    "fieldPath": ".passwordExpire",
                },
                {
                    "rule": f"!has(self.passwordLockTime) || self.passwordLockTime == '{UNBOUNDED}' || "
                    f"({days_cel('self.passwordLockTime', 1, PASSWORD_LOCK_TIME_MAX)})",
                    "message": PASSWORD_LOCK_TIME_MESSAGE,
                    "fieldPath": ".passwordLockTime",
                },
                {
                    "rule": "has(self.failedLoginAttempts) == has(self.passwordLockTime)",
                    "message": FAILED_LOGIN_PAIR_MESSAGE,
                    "fieldPath": ".failedLoginAttempts",
                },
            ]
        }
    )

    locked: bool = Field(default=False, strict=True)
    """ACCOUNT LOCK: nobody can log in as the account, and its open sessions are ended; the account, its
    grants and its password stay. A way to suspend an application without deleting anything. Defaults to
    false: the account is unlocked (ACCOUNT UNLOCK), a lock made by hand included."""

    password_expire: str | None = Field(default=None, max_length=16, pattern=PASSWORD_EXPIRE_PATTERN)
    """When the server expires the account's password: Never (PASSWORD EXPIRE NEVER), Default (the
    server's default_password_lifetime) or a whole number of days after each password change (90d, or a
    duration of whole days such as 2160h; PASSWORD EXPIRE INTERVAL n DAY). The operator does not rotate a
    password because it will expire: pair an interval with rotation.period. Unset: the password never
    expires in effect — the account keeps the server's default while that default is 0 (never), and gets
    PASSWORD EXPIRE NEVER as soon as the server's default_password_lifetime would expire it."""

    failed_login_attempts: int | None = Field(default=None, ge=1, le=FAILED_LOGIN_ATTEMPTS_MAX)
    """MySQL 8.0.19 and later: lock the account for passwordLockTime after this many consecutive failed
    logins (FAILED_LOGIN_ATTEMPTS, 1 to 32767). Goes with passwordLockTime. Refused on MariaDB (Ready=False,
    reason AccountOptionUnsupported): MariaDB has only the server-wide max_password_errors. Unset: no
    failed-login lock."""

    password_lock_time: str | None = Field(default=None, max_length=16, pattern=PASSWORD_LOCK_TIME_PATTERN)
    """MySQL 8.0.19 and later: how long failedLoginAttempts locks the account, in whole days (2d, 48h;
    1 to 32767) or Unbounded (until an administrator unlocks it) (PASSWORD_LOCK_TIME). Goes with
    failedLoginAttempts."""

    expires_at: str | None = Field(default=None, max_length=64, json_schema_extra={"format": "date-time"})
    """A time (RFC 3339, e.g. 2026-12-31T18:00:00Z) from which the account is locked (ACCOUNT LOCK, its
    sessions ended), as the operator's clock tells: time-bound access for people and jobs. Ready then has
    reason AccountExpired. Moving it later, or removing it, unlocks the account again. Unset: never."""

    @model_validator(mode="after")
    def _checked(self) -> AccountSpec:
        """The CEL rules, with their messages."""
        if self.password_expire is not None:
            try:
                password_lifetime_days(self.password_expire)
            except ValueError:
                raise ValueError(PASSWORD_EXPIRE_MESSAGE) from None
        if self.password_lock_time is not None:
            try:
                lock_time_days(self.password_lock_time)
            except ValueError:
                raise ValueError(PASSWORD_LOCK_TIME_MESSAGE) from None
        if (self.failed_login_attempts is None) != (self.password_lock_time is None):
            raise ValueError(FAILED_LOGIN_PAIR_MESSAGE)
        if self.expires_at is not None:
            parse_expires_at(self.expires_at)
        return self


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

    locked: bool | None = None
    """Whether it is locked (ACCOUNT LOCK)."""

    password_expire: str | None = None
    """When its password expires: Never, Default (the server's default_password_lifetime) or Nd."""

    failed_login_attempts: int | None = Field(default=None, json_schema_extra=INT64)
    """MySQL: its FAILED_LOGIN_ATTEMPTS (0: none)."""

    password_lock_time: str | None = None
    """MySQL: its PASSWORD_LOCK_TIME, Nd or Unbounded (with failedLoginAttempts)."""

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
