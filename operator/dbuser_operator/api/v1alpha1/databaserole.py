"""The ``DatabaseRole`` API, version v1alpha1: a MySQL/MariaDB role and its privileges.

Same group and version as ``DatabaseUser``, and the same conventions (the package's,
:mod:`dbuser_operator.api.v1alpha1`): the CRD is generated from these models, the models check what the CRD
checks, with the same messages. A role's privileges are :class:`~.grants.Grant` entries, as a user's; users
are granted roles through ``DatabaseUser.spec.roles``, which names DatabaseRoles of their own namespace.
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import ConfigDict, Field, field_validator

from dbuser_operator.api.v1alpha1.grants import GRANT_DATABASE_CEL, MAX_GRANTS, ONE_ENTRY_MESSAGE, Grant
from dbuser_operator.api.v1alpha1.meta import (
    CATEGORY,
    GROUP,
    NAMESPACED_CATEGORY,
    SERVER_COLUMNS,
    SERVER_REF_RULE,
    USER_MAX_LENGTH,
    USER_PATTERN,
    VERSION,
    Condition,
    DeletionPolicy,
    Model,
    ObjectMeta,
    ServerRef,
)

KIND: Final = "DatabaseRole"
PLURAL: Final = "databaseroles"
ROLE_DATABASE_REF_MESSAGE: Final = "a DatabaseRole names its database: databaseRef is for DatabaseUser grants"
SINGULAR: Final = "databaserole"
SHORT_NAMES: Final = ("dbrole",)
CATEGORIES: Final = (
    CATEGORY,
    NAMESPACED_CATEGORY,
)  # not "dbuser": `kubectl get dbuser` lists DatabaseUsers as before
CRD_NAME: Final = f"{PLURAL}.{GROUP}"
API_VERSION: Final = f"{GROUP}/{VERSION}"

ROLE_PATTERN: Final = USER_PATTERN
"""A role name: as a user name (both servers keep roles among the accounts)."""
ROLE_MAX_LENGTH: Final = USER_MAX_LENGTH
MAX_ROLES: Final = 32
"""Most roles one DatabaseUser may be granted."""

PRINTER_COLUMNS: Final[tuple[dict[str, object], ...]] = (
    {"name": "Role", "type": "string", "jsonPath": ".status.role", "description": "MySQL role name"},
    {
        "name": "Ready",
        "type": "string",
        "jsonPath": '.status.conditions[?(@.type=="Ready")].status',
        "description": "Whether the role is in line with the spec",
    },
    {
        "name": "Reason",
        "type": "string",
        "jsonPath": '.status.conditions[?(@.type=="Ready")].reason',
        "description": "Why the role is (not) ready",
    },
    *SERVER_COLUMNS,
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
)


class DatabaseRoleSpec(Model):
    """The MySQL role wanted: its name, its privileges, and what becomes of it when the resource is
    deleted."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "has(self.role) == has(oldSelf.role)"
                    " && (!has(self.role) || self.role == oldSelf.role)",
                    "message": "spec.role is immutable",
                    "fieldPath": ".role",
                },
                SERVER_REF_RULE,
            ]
        }
    )

    role: str | None = Field(default=None, max_length=ROLE_MAX_LENGTH, pattern=ROLE_PATTERN)
    """MySQL role name: 1 to 32 letters, digits, '_', '.' or '-', not starting with '.' or '-'. Defaults to
    metadata.name, which must then be at most 32 characters. Immutable. On MySQL the role is the account
    'role'@'%'; on MariaDB a role (host '')."""

    server_ref: ServerRef | None = None
    """The server resource (MySQLServer or ClusterMySQLServer) the role lives on; DatabaseUsers granted the
    role must live on the same one. Unset: the server the operator's settings name. Immutable."""

    privileges: list[Grant] = Field(
        default_factory=list,  # no schema default: describe shows no empty "Privileges:"
        max_length=MAX_GRANTS,
        json_schema_extra={
            "x-kubernetes-validations": [
                {"rule": "self.all(g, !has(g.databaseRef))", "message": ROLE_DATABASE_REF_MESSAGE},
                {
                    "rule": "self.all(a, self.exists_one(b,"
                    f" {GRANT_DATABASE_CEL.format('a')} == {GRANT_DATABASE_CEL.format('b')}"
                    " && a.table == b.table))",
                    "message": ONE_ENTRY_MESSAGE,
                },
            ]
        },
    )
    """Privileges of the role, one entry per database and table, as a DatabaseUser's privileges. The
    operator grants exactly these to the role and revokes any other. Defaults to none."""

    deletion_policy: DeletionPolicy = "Delete"
    """What becomes of the MySQL role when this resource is deleted. Delete (the default) drops the role, if
    this resource owns it (the operator created it, or adopted it with the annotation
    mysql.dbuser-operator.dev/adopt: "true"): every account loses it. Retain leaves it in MySQL."""

    @field_validator("privileges")
    @classmethod
    def _one_entry_per_database_and_table(cls, grants: list[Grant]) -> list[Grant]:
        if any(grant.database_ref is not None for grant in grants):
            raise ValueError(ROLE_DATABASE_REF_MESSAGE)
        levels = [(grant.level_key(), grant.table) for grant in grants]
        if len(set(levels)) != len(levels):
            raise ValueError(ONE_ENTRY_MESSAGE)
        return grants


class DatabaseRoleStatus(Model):
    """The state of the role as the operator last observed it."""

    conditions: list[Condition] = Field(
        default_factory=list,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )
    """Latest observations of the role's state. Ready is True once the role exists in MySQL, belongs to
    this resource, holds no role and has the spec's privileges. UnmanagedHolders is True while accounts the
    operator does not manage hold the role (its message names them; they are left as they are)."""

    observed_generation: int | None = Field(default=None, ge=0, json_schema_extra={"format": "int64"})
    """The metadata.generation that the operator last acted on."""

    role: str | None = None
    """MySQL role name (spec.role, or metadata.name), once the role belongs to this resource."""

    def to_api(self, previous: dict[str, Any] | None = None) -> dict[str, Any]:
        """The status as the API stores it, keeping the stored fields this model does not know."""
        known = {field.alias or name for name, field in type(self).model_fields.items()}
        kept = {key: value for key, value in (previous or {}).items() if key not in known}
        return {**kept, **self.model_dump(by_alias=True, exclude_none=True, mode="json")}


class DatabaseRole(Model):
    """A MySQL or MariaDB role managed by dbuser-operator: created in the operator's MySQL server with the
    spec's privileges, granted to the DatabaseUsers of its namespace that name it in spec.roles, and
    dropped when this resource is deleted (unless its deletionPolicy is Retain)."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "has(self.spec.role) || size(self.metadata.name) <= 32",
                    "message": "metadata.name is longer than 32 characters: set spec.role",
                    "fieldPath": ".spec.role",
                    "reason": "FieldValueRequired",
                }
            ]
        }
    )

    api_version: str = API_VERSION
    kind: str = KIND
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: DatabaseRoleSpec
    """The role wanted: its MySQL name, its privileges and its deletion policy."""

    status: DatabaseRoleStatus | None = None
    """The role's state as the operator last observed it (written by the operator only)."""

    def mysql_name(self) -> str:
        """The MySQL role name: spec.role, or else metadata.name."""
        role = self.spec.role or self.metadata.name
        if not role:
            raise ValueError("a DatabaseRole without spec.role needs metadata.name")
        return role
