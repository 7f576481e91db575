"""Where a DatabaseUser's password comes from and where it goes: a generated password, its rotation, the
connection Secret and the workloads rolled out onto it, and what the status records of them."""

from __future__ import annotations

import re
from typing import Annotated, Any, Final, Literal

from pydantic import Field, field_validator

from dbuser_operator.api.duration import DURATION_MAX_LENGTH, DURATION_PATTERN
from dbuser_operator.api.v1alpha1.grants import OBJECT_NAME_MAX_LENGTH, OBJECT_NAME_PATTERN
from dbuser_operator.api.v1alpha1.meta import (
    DNS_SUBDOMAIN_MAX_LENGTH,
    DNS_SUBDOMAIN_PATTERN,
    GROUP,
    INT64,
    SECRET_KEY_PATTERN,
    Model,
)
from dbuser_operator.api.v1alpha1.mysqlserver import (
    ENDPOINT_NAME_MAX_LENGTH,
    ENDPOINT_NAME_PATTERN,
    MAX_ENDPOINTS,
)

# Annotations the operator reads on a DatabaseUser (rotate) or writes on its connection Secret.
ROTATE_ANNOTATION: Final = f"{GROUP}/rotate"
"""A new value (any text, e.g. a timestamp) rotates a generated password once, now; the value handled last
is kept in status.rotation.trigger. Recorded as an Event Rotated."""

CREDENTIAL_VERSION_ANNOTATION: Final = f"{GROUP}/credential-version"
"""On the connection Secret (and mirrored in status.credentialVersion): a counter increased whenever the
password in the Secret changes, for tools and rollouts that restart workloads on a new credential."""

MANAGED_METADATA_ANNOTATION: Final = f"{GROUP}/managed-metadata"
"""On the connection Secret: the keys of the labels and annotations spec.connectionSecret set there, as JSON
({"annotations": [...], "labels": [...]}), so that one removed from the spec is removed from the Secret and
those others set are left alone. Absent when the spec sets none."""

RotationStrategy = Literal["DualPassword", "Immediate"]
"""How a new password replaces the old one: DualPassword keeps the old one valid for a while (MySQL 8.0.14+:
RETAIN CURRENT PASSWORD, then DISCARD OLD PASSWORD), Immediate replaces it at once."""

RotationPhase = Literal["Retained", "Discarded"]
"""Where a DualPassword rotation stands: the old password still works (Retained), or no longer (Discarded)."""


def _duration(default: str | None) -> Any:
    return Field(default=default, max_length=DURATION_MAX_LENGTH, pattern=DURATION_PATTERN)


class Rotation(Model):
    """How password changes are rolled out to the account: at once, or with the old password kept valid
    until the applications have moved to the new one."""

    strategy: RotationStrategy | None = None
    """DualPassword: the new password is added next to the old one, so that both work (MySQL: RETAIN
    CURRENT PASSWORD; MariaDB: a second authentication of the same plugin, mysql_native_password or
    ed25519), and the old one is discarded only when it is safe (see gracePeriod, waitForConsumers,
    maxWait). Immediate: the old password stops working at once. Unset: DualPassword where the server
    supports it (MySQL 8.0.21 and later, MariaDB 10.11 and later), else Immediate. DualPassword on a server
    without it (an older MariaDB, or another plugin) is refused with Ready=False, reason
    DualPasswordUnsupported."""

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

EndpointName = Annotated[str, Field(max_length=ENDPOINT_NAME_MAX_LENGTH, pattern=ENDPOINT_NAME_PATTERN)]

TEMPLATE_KEY_MESSAGE: Final = "template keys must be Secret data keys: letters, digits, '-', '_' or '.'"


class GeneratedPassword(Model):
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


class RolloutWorkload(Model):
    """A workload in the namespace of the DatabaseUser whose pods use the connection Secret."""

    kind: Literal["Deployment", "StatefulSet"]
    """Kind of the workload: Deployment or StatefulSet."""

    name: str = Field(max_length=DNS_SUBDOMAIN_MAX_LENGTH, pattern=DNS_SUBDOMAIN_PATTERN)
    """Name of the workload."""


class ConnectionSecret(Model):
    """A Secret the operator writes with everything an application needs to connect as this account."""

    name: str = Field(max_length=DNS_SUBDOMAIN_MAX_LENGTH, pattern=DNS_SUBDOMAIN_PATTERN)
    """Name of the Secret, in the namespace of the DatabaseUser. The operator creates and owns it; an
    existing Secret of that name that this DatabaseUser does not own is never overwritten (Ready=False,
    reason SecretNotOwned). Keys: host, port, username, password, database (when there is one), sslMode
    (when the endpoint has a TLS mode), DATABASE_URL (mysql://user:password@host:port/database, every part
    percent-encoded), JDBC_URL, those of the other endpoints, and the template keys. Renamed, the Secret of
    the old name (if this DatabaseUser owns it) is deleted once the new one is written."""

    labels: dict[str, str] | None = Field(default=None, max_length=MAX_CONNECTION_METADATA)
    """Labels of the Secret, besides app.kubernetes.io/managed-by: dbuser-operator. One removed from here
    is removed from the Secret (labels others set are left alone)."""

    annotations: dict[str, str] | None = Field(default=None, max_length=MAX_CONNECTION_METADATA)
    """Annotations of the Secret, besides mysql.dbuser-operator.dev/credential-version. One removed from
    here is removed from the Secret (annotations others set are left alone)."""

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

    endpoint: EndpointName | None = None
    """The endpoint of the server (its spec.endpoints, or the operator's --connection-endpoints for the
    default server) whose address the standard keys carry: host, port, sslMode, DATABASE_URL, JDBC_URL.
    Defaults to the first; when the server has none, its host and port (for the default server,
    --connection-host and --connection-port). A name the server does not have sets Ready=False, reason
    EndpointNotFound, and leaves the Secret as it was."""

    endpoints: list[EndpointName] | None = Field(
        default=None, max_length=MAX_ENDPOINTS, json_schema_extra={"x-kubernetes-list-type": "set"}
    )
    """More endpoints of the server, each written with its name as a prefix ('-' as '_'): e.g. readonly
    gives readonly_host, readonly_port, readonly_sslMode (when it has a TLS mode), readonly_DATABASE_URL and
    readonly_JDBC_URL. Templates may use these keys too."""

    rollout: list[RolloutWorkload] | None = Field(default=None, max_length=MAX_ROLLOUT_WORKLOADS)
    """Deployments and StatefulSets, in the namespace of the DatabaseUser, whose pod template is annotated
    with the new credential version after the password changes, so that their pods restart onto it."""

    @field_validator("endpoints")
    @classmethod
    def _endpoints_once(cls, names: list[str] | None) -> list[str] | None:
        """What the CRD's list type set checks."""
        if names is not None and len(set(names)) != len(names):
            raise ValueError("Duplicate value: endpoints name an endpoint once each")
        return names

    @field_validator("templates")
    @classmethod
    def _template_keys(cls, templates: dict[str, str] | None) -> dict[str, str] | None:
        for key, template in (templates or {}).items():
            if not re.fullmatch(SECRET_KEY_PATTERN, key):
                raise ValueError(TEMPLATE_KEY_MESSAGE)
            if len(template) > CONNECTION_TEMPLATE_MAX_LENGTH:
                raise ValueError(f"a template is at most {CONNECTION_TEMPLATE_MAX_LENGTH} characters")
        return templates


class AppliedSecret(Model):
    """Which version of a Secret was applied to the account (never its value, nor a hash of it)."""

    name: str
    """Name of the Secret."""

    uid: str
    """UID of the Secret."""

    resource_version: str
    """resourceVersion of the Secret whose value was applied."""


class RotationStatus(Model):
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

    session_watermark: int | None = Field(default=None, ge=0, json_schema_extra=INT64)
    """DualPassword: the highest MySQL connection id when the previous password was retained; sessions of
    the account up to it predate the rotation."""
