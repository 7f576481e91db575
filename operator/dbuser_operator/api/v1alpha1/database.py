"""The ``Database`` API, version v1alpha1: a MySQL/MariaDB database (schema), its character set and
collation.

Same group, version and conventions as ``DatabaseUser`` and ``DatabaseRole``: the CRD is generated from
these models, the models check what the CRD checks. A database holds data: its deletion policy is Retain
unless Delete is asked for, and the operator drops only a database it created (or adopted).
"""

from __future__ import annotations

import re
from typing import Any, Final

from pydantic import ConfigDict, Field, model_validator

from dbuser_operator.api.v1alpha1.databaseuser import ManagementPolicy
from dbuser_operator.api.v1alpha1.meta import (
    CATEGORY,
    GROUP,
    NAMESPACED_CATEGORY,
    SERVER_COLUMNS,
    SERVER_REF_RULE,
    VERSION,
    Condition,
    DeletionPolicy,
    Model,
    ObjectMeta,
    ServerRef,
)

KIND: Final = "Database"
PLURAL: Final = "databases"
SINGULAR: Final = "database"
SHORT_NAMES: Final = ("dbdb",)
CATEGORIES: Final = (CATEGORY, NAMESPACED_CATEGORY)
CRD_NAME: Final = f"{PLURAL}.{GROUP}"
API_VERSION: Final = f"{GROUP}/{VERSION}"

DATABASE_NAME_PATTERN: Final = r"^[A-Za-z0-9_$-]{1,64}$"
"""A database name: as a grant's database (``grants.OBJECT_NAME_PATTERN``), without ``*``."""
DATABASE_NAME_MAX_LENGTH: Final = 64
CHARACTER_SET_PATTERN: Final = r"^[A-Za-z0-9_]{1,32}$"
"""A character set name (``utf8mb4``, ``latin1``): letters, digits and '_'; both servers' names fit."""
COLLATION_PATTERN: Final = r"^[A-Za-z0-9_]{1,64}$"
"""A collation name (``utf8mb4_0900_ai_ci``, ``utf8mb4_uca1400_ai_ci``)."""
NAME_IMMUTABLE_MESSAGE: Final = "spec.name is immutable"
METADATA_NAME_MESSAGE: Final = (
    "metadata.name is not a database name (at most 64 letters, digits, '_', '$' or '-'): set spec.name"
)

PRINTER_COLUMNS: Final[tuple[dict[str, object], ...]] = (
    {"name": "Database", "type": "string", "jsonPath": ".status.name", "description": "MySQL database name"},
    {
        "name": "Ready",
        "type": "string",
        "jsonPath": '.status.conditions[?(@.type=="Ready")].status',
        "description": "Whether the database is in line with the spec",
    },
    {
        "name": "Reason",
        "type": "string",
        "jsonPath": '.status.conditions[?(@.type=="Ready")].reason',
        "description": "Why the database is (not) ready",
    },
    {
        "name": "Charset",
        "type": "string",
        "jsonPath": ".status.characterSet",
        "description": "The database's character set as observed",
        "priority": 1,
    },
    *SERVER_COLUMNS,
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
)


class DatabaseSpec(Model):
    """The MySQL database wanted: its name, character set and collation, and what becomes of it when the
    resource is deleted."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "has(self.name) == has(oldSelf.name)"
                    " && (!has(self.name) || self.name == oldSelf.name)",
                    "message": NAME_IMMUTABLE_MESSAGE,
                    "fieldPath": ".name",
                },
                SERVER_REF_RULE,
            ]
        }
    )

    name: str | None = Field(default=None, max_length=DATABASE_NAME_MAX_LENGTH, pattern=DATABASE_NAME_PATTERN)
    """MySQL database name: 1 to 64 letters, digits, '_', '$' or '-'. Defaults to metadata.name, which must
    then be such a name. Immutable. mysql, sys, information_schema, performance_schema and the operator's
    bookkeeping schema are refused."""

    character_set: str | None = Field(default=None, max_length=32, pattern=CHARACTER_SET_PATTERN)
    """Default character set of the database (CREATE/ALTER DATABASE ... CHARACTER SET). Unset: the server's
    default at creation, and left as it is afterwards."""

    collation: str | None = Field(default=None, max_length=64, pattern=COLLATION_PATTERN)
    """Default collation of the database (COLLATE). Unset: the character set's default (or the server's)
    at creation, and left as it is afterwards."""

    server_ref: ServerRef | None = None
    """The server resource (MySQLServer or ClusterMySQLServer) the database lives on. Unset: the server the
    operator's settings name. Immutable."""

    deletion_policy: DeletionPolicy = "Retain"
    """What becomes of the database when this resource is deleted. Retain (the default) leaves it and its
    data in MySQL and forgets that the operator owns it. Delete drops it (DROP DATABASE: its tables and
    data are lost), if this resource owns it (the operator created it, or adopted it with the annotation
    mysql.dbuser-operator.dev/adopt: "true")."""

    management_policy: ManagementPolicy = "Manage"
    """How far the operator acts: Manage (create, converge, delete), Observe (read the database into status,
    change nothing, never drop it), or Paused (do nothing at all)."""


class DatabaseStatus(Model):
    """The state of the database as the operator last observed it."""

    conditions: list[Condition] = Field(
        default_factory=list,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )
    """Latest observations of the database's state. Ready is True once the database exists, belongs to this
    resource and has the spec's character set and collation."""

    observed_generation: int | None = Field(default=None, ge=0, json_schema_extra={"format": "int64"})
    """The metadata.generation that the operator last acted on."""

    name: str | None = None
    """MySQL database name (spec.name, or metadata.name), once the database belongs to this resource."""

    character_set: str | None = None
    """The database's default character set, as read from information_schema.SCHEMATA."""

    collation: str | None = None
    """The database's default collation, as read from information_schema.SCHEMATA."""

    def to_api(self, previous: dict[str, Any] | None = None) -> dict[str, Any]:
        """The status as the API stores it, keeping the stored fields this model does not know."""
        known = {field.alias or name for name, field in type(self).model_fields.items()}
        kept = {key: value for key, value in (previous or {}).items() if key not in known}
        return {**kept, **self.model_dump(by_alias=True, exclude_none=True, mode="json")}


class Database(Model):
    """A MySQL or MariaDB database managed by dbuser-operator: created on its server with the spec's
    character set and collation, and left in place when this resource is deleted (unless its
    deletionPolicy is Delete)."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "has(self.spec.name) || self.metadata.name.matches('^[A-Za-z0-9_$-]{1,64}$')",
                    "message": METADATA_NAME_MESSAGE,
                    "fieldPath": ".spec.name",
                    "reason": "FieldValueRequired",
                }
            ]
        }
    )

    api_version: str = API_VERSION
    kind: str = KIND
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: DatabaseSpec
    """The database wanted: its MySQL name, character set, collation and policies."""

    status: DatabaseStatus | None = None
    """The database's state as the operator last observed it (written by the operator only)."""

    @model_validator(mode="after")
    def _named(self) -> Database:
        unnamed = self.spec.name is None and self.metadata.name is not None
        if unnamed and re.fullmatch(DATABASE_NAME_PATTERN, self.metadata.name or "") is None:
            raise ValueError(METADATA_NAME_MESSAGE)
        return self

    def mysql_name(self) -> str:
        """The MySQL database name: spec.name, or else metadata.name."""
        name = self.spec.name or self.metadata.name
        if not name:
            raise ValueError("a Database without spec.name needs metadata.name")
        return name
