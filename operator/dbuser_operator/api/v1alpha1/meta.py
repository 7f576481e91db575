"""What every kind of the API shares: group and version, the base model, object metadata, conditions,
Secret keys, server references, the annotations the operator reads on its resources, the finalizers it
writes on them, and the helpers that write CEL rules. The conventions of the models are the package's
(:mod:`dbuser_operator.api.v1alpha1`).
"""

from __future__ import annotations

import string
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue
from pydantic.alias_generators import to_camel

GROUP: Final = "mysql.dbuser-operator.dev"
VERSION: Final = "v1alpha1"
API_VERSION: Final = f"{GROUP}/{VERSION}"

# Annotations of a DatabaseUser or DatabaseRole that the operator reads (their value must be "true").
ADOPT_ANNOTATION: Final = f"{GROUP}/adopt"
"""Value "true": take over an account that already exists in MySQL but that the operator did not create.
Once adopted, the account belongs to this resource: it is brought in line with the spec, and deletionPolicy
Delete drops it."""

RELEASE_ANNOTATION: Final = f"{GROUP}/release"
"""Value "true": when the resource is deleted, remove the finalizer without dropping the account, e.g. while
MySQL is down and the account must stay or will be cleaned up by hand. Recorded as a Warning Event."""

# The finalizers an operator instance puts on the resources it serves (its own names its target).
LEGACY_FINALIZER = f"{GROUP}/account"  # shared by every instance before finalizers named their target
FINALIZER_PREFIX = f"{GROUP}/account-"
MAX_TARGET_LENGTH = 63 - len("account-")  # the finalizer's name part is at most 63 characters


def target_finalizer(target: str) -> str:
    """The finalizer of the instance that serves ``target``."""
    return f"{FINALIZER_PREFIX}{target}"


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

DeletionPolicy = Literal["Delete", "Retain"]
"""What happens to the MySQL account when its DatabaseUser is deleted."""

INT64: Final[dict[str, Any]] = {"format": "int64"}


class Model(BaseModel):
    """Base of the API models: camelCase on the wire, unknown fields ignored, docstrings as descriptions."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
        use_attribute_docstrings=True,
    )


class SecretKeySelector(Model):
    """A key of a Secret in the namespace of the DatabaseUser."""

    name: str = Field(max_length=DNS_SUBDOMAIN_MAX_LENGTH, pattern=DNS_SUBDOMAIN_PATTERN)
    """Name of the Secret."""

    key: str = Field(max_length=DNS_SUBDOMAIN_MAX_LENGTH, pattern=SECRET_KEY_PATTERN)
    """Key of the Secret's data that holds the value."""


def cel_list(values: tuple[str, ...]) -> str:
    """A CEL list literal of strings (the values hold no quote)."""
    return "[" + ", ".join(f"'{value}'" for value in values) + "]"


def cel_format(template: str, **expressions: str) -> str:
    """A CEL expression that builds the text of ``template``, each ``{name}`` being the CEL expression
    ``expressions[name]``: the messageExpression of a rule whose Python message is ``template``."""
    parts = []
    for literal, name, _, _ in string.Formatter().parse(template):
        if literal:
            parts.append("'" + literal.replace("\\", "\\\\").replace("'", "\\'") + "'")
        if name is not None:
            parts.append(expressions[name])
    return " + ".join(parts)


class Condition(Model):
    """One aspect of the current state of the resource (the shape of metav1.Condition)."""

    type: str = Field(max_length=316, pattern=CONDITION_TYPE_PATTERN)
    """Type of the condition, in CamelCase: Ready tells whether the account is in line with the spec."""

    status: Literal["True", "False", "Unknown"]
    """Status of the condition: True, False or Unknown."""

    observed_generation: int | None = Field(default=None, ge=0, json_schema_extra=INT64)
    """The metadata.generation that the condition was set from."""

    last_transition_time: str = Field(json_schema_extra={"format": "date-time"})
    """When the condition last changed from one status to another (RFC 3339)."""

    reason: str = Field(min_length=1, max_length=1024, pattern=CONDITION_REASON_PATTERN)
    """Why the condition has its status: a CamelCase word for programs."""

    message: str = Field(max_length=32768)
    """Details of the last transition, for humans. May be empty."""


class ObjectMeta(Model):
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


ServerKind = Literal["MySQLServer", "ClusterMySQLServer"]
"""The kinds of server resource a serverRef may name."""

CATEGORY: Final = "dbuser-operator"
"""The category of every kind: `kubectl get dbuser-operator -A` lists them all."""
NAMESPACED_CATEGORY: Final = "dbuser-namespaced"
"""The category of the namespaced kinds: `kubectl get dbuser-namespaced -n team-a`, a namespace's share."""

SERVER_COLUMNS: Final[tuple[dict[str, object], ...]] = (
    {
        "name": "Server",
        "type": "string",
        "jsonPath": ".spec.serverRef.name",
        "description": "The server resource of spec.serverRef (empty: the operator's own server)",
        "priority": 1,
    },
    {
        "name": "Server Kind",
        "type": "string",
        "jsonPath": ".spec.serverRef.kind",
        "description": "MySQLServer (in this namespace) or ClusterMySQLServer",
        "priority": 1,
    },
)
"""The wide columns (`-o wide`) of a kind with a serverRef: which server resource, and of which kind."""

SERVER_REF_IMMUTABLE_MESSAGE: Final = "spec.serverRef is immutable"
SERVER_REF_RULE: Final[dict[str, JsonValue]] = {
    "rule": "has(self.serverRef) == has(oldSelf.serverRef)"
    " && (!has(self.serverRef) || self.serverRef == oldSelf.serverRef)",
    "message": SERVER_REF_IMMUTABLE_MESSAGE,
    "fieldPath": ".serverRef",
}
"""The CEL rule of a spec with a serverRef (transition rules: the models cannot check them)."""


class ServerRef(Model):
    """The server resource an account or role lives on."""

    kind: ServerKind = "MySQLServer"
    """MySQLServer (in the namespace of the referring resource; the default) or ClusterMySQLServer."""

    name: str = Field(max_length=DNS_SUBDOMAIN_MAX_LENGTH, pattern=DNS_SUBDOMAIN_PATTERN)
    """Name of the server resource."""
