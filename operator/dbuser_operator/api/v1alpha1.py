"""The ``DatabaseUser`` API, version v1alpha1: the single source of truth of the CRD.

The CRD in ``crds/`` is generated from these models (``python -m dbuser_operator.api.crd``), the way
controller-gen generates it from Go types: attribute docstrings become the field descriptions that
``kubectl explain`` prints, ``Field`` constraints become OpenAPI validation, and ``json_schema_extra`` carries
the ``x-kubernetes-*`` extensions (CEL rules, list types).

Parsing an object from the API: ``DatabaseUser.model_validate(obj)``; unknown fields are ignored, so an older
operator reads objects written for a newer schema. Writing status:
``status.model_dump(by_alias=True, exclude_none=True, mode="json")``. New optional fields (privileges, limits,
TLS, deletion policy) are added as ``X | None = None`` attributes: nothing else changes.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

GROUP: Final = "mysql.dbuser-operator.dev"
VERSION: Final = "v1alpha1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
KIND: Final = "DatabaseUser"
PLURAL: Final = "databaseusers"
SINGULAR: Final = "databaseuser"
SHORT_NAMES: Final = ("dbu",)
CATEGORIES: Final = ("dbuser",)
CRD_NAME: Final = f"{PLURAL}.{GROUP}"

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


class DatabaseUserSpec(_Model):
    """The MySQL account wanted: its name and host, and where its password comes from."""

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
            ]
        }
    )

    user: str | None = Field(default=None, max_length=USER_MAX_LENGTH, pattern=USER_PATTERN)
    """MySQL user name of the account: 1 to 32 letters, digits, '_', '.' or '-', not starting with '.' or
    '-'. Defaults to metadata.name, which must then be at most 32 characters. Immutable."""

    host: str = Field(default="%", max_length=HOST_MAX_LENGTH, pattern=HOST_PATTERN)
    """MySQL host part of the account: the client hosts it may connect from, as MySQL matches them ('%' for
    any host, '10.0.%', an IP address, '10.0.0.0/255.0.0.0', or a host name). Defaults to '%'. Immutable."""

    password: SecretKeySelector
    """The Secret key that holds the account's password, in the namespace of the DatabaseUser. The operator
    sets the account's password to this value, and applies every change of the Secret."""


class AppliedSecret(_Model):
    """Which version of a Secret was applied to the account (never its value, nor a hash of it)."""

    name: str
    """Name of the Secret."""

    uid: str
    """UID of the Secret."""

    resource_version: str
    """resourceVersion of the Secret whose value was applied."""


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
    kept in line with the spec and with its password Secret, and dropped when this resource is deleted."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "has(self.spec.user) || size(self.metadata.name) <= 32",
                    "message": "metadata.name is longer than 32 characters: set spec.user",
                    # Reported as "spec.user: Required value: …" (metadata.name is no valid fieldPath).
                    "fieldPath": ".spec.user",
                    "reason": "FieldValueRequired",
                }
            ]
        }
    )

    api_version: str = API_VERSION
    kind: str = KIND
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: DatabaseUserSpec
    """The account wanted: its MySQL user name and host, and the Secret key that holds its password."""

    status: DatabaseUserStatus | None = None
    """The account's state as the operator last observed it (written by the operator only)."""

    def effective_user(self) -> str:
        """The MySQL user name: spec.user, or else metadata.name."""
        user = self.spec.user or self.metadata.name
        if not user:
            raise ValueError("a DatabaseUser without spec.user needs metadata.name")
        return user
