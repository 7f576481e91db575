"""Server policy, v1alpha1: which namespaces may use a MySQLServer or ClusterMySQLServer, and within which
bounds (databases, privileges, roles, plugins, adoption, workload identity, password lifetime) — the
``spec.policy`` of both server kinds."""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import ConfigDict, Field, model_validator

from dbuser_operator.api.duration import DAYS_PATTERN, days_cel, parse_days
from dbuser_operator.api.v1alpha1.account import PASSWORD_LIFETIME_MAX
from dbuser_operator.api.v1alpha1.client_certificate import CertificatePolicy
from dbuser_operator.api.v1alpha1.grants import OBJECT_NAME_MAX_LENGTH, Privilege
from dbuser_operator.api.v1alpha1.meta import Model

DATABASE_PATTERN_PATTERN: Final = r"^(\{namespace\}|[A-Za-z0-9_$*-])+$"
"""A database name pattern: letters, digits, '_', '$', '-', '*' (any run of characters) and the placeholder
{namespace} (the DatabaseUser's namespace, '-' as written)."""
DatabasePattern = Annotated[
    str, Field(max_length=OBJECT_NAME_MAX_LENGTH * 2, pattern=DATABASE_PATTERN_PATTERN)
]
NAME_PATTERN_PATTERN: Final = r"^(\{namespace\}|[A-Za-z0-9_.*-])+$"
"""An account or role name pattern: letters, digits, '_', '.', '-', '*' (any run of characters) and the
placeholder {namespace} (the resource's namespace, '-' as written)."""
NamePattern = Annotated[str, Field(max_length=128, pattern=NAME_PATTERN_PATTERN)]
MAX_POLICY_ENTRIES: Final = 32
MAX_DATABASE_PATTERNS: Final = 32

LABEL_SELECTOR_OPERATORS = Literal["In", "NotIn", "Exists", "DoesNotExist"]
VALUES_REQUIRED_MESSAGE: Final = "values must be non-empty when operator is In or NotIn"
VALUES_FORBIDDEN_MESSAGE: Final = "values must be empty when operator is Exists or DoesNotExist"


class LabelSelectorRequirement(Model):
    """A label selector requirement: a key, an operator and values (metav1.LabelSelectorRequirement)."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "!(self.operator in ['In', 'NotIn'])"
                    " || (has(self.values) && size(self.values) > 0)",
                    "message": VALUES_REQUIRED_MESSAGE,
                    "fieldPath": ".values",
                },
                {
                    "rule": "self.operator in ['In', 'NotIn'] || !has(self.values) || size(self.values) == 0",
                    "message": VALUES_FORBIDDEN_MESSAGE,
                    "fieldPath": ".values",
                },
            ]
        }
    )

    key: str = Field(min_length=1, max_length=316)
    """The label key."""

    operator: LABEL_SELECTOR_OPERATORS
    """In, NotIn, Exists or DoesNotExist."""

    values: list[str] | None = None
    """The values of In and NotIn (non-empty); none for Exists and DoesNotExist."""

    @model_validator(mode="after")
    def _values_match_the_operator(self) -> LabelSelectorRequirement:
        """The CEL rules on values, with their messages (Kubernetes refuses such selectors too)."""
        if self.operator in {"In", "NotIn"} and not self.values:
            raise ValueError(VALUES_REQUIRED_MESSAGE)
        if self.operator in {"Exists", "DoesNotExist"} and self.values:
            raise ValueError(VALUES_FORBIDDEN_MESSAGE)
        return self


class LabelSelector(Model):
    """Namespaces by their labels (metav1.LabelSelector): every requirement must hold; empty selects all."""

    match_labels: dict[str, str] | None = None
    """Labels the namespace must carry, with these values."""

    match_expressions: list[LabelSelectorRequirement] | None = None
    """Requirements on the namespace's labels."""


MAX_PASSWORD_LIFETIME_MESSAGE: Final = (
    f"maxPasswordLifetime is a whole number of days from 1 to {PASSWORD_LIFETIME_MAX} (90d, or 2160h)"
)


class NamespacePolicy(Model):
    """What the namespaces one selector picks may do on the server."""

    model_config = ConfigDict(
        json_schema_extra={
            "x-kubernetes-validations": [
                {
                    "rule": "!has(self.maxPasswordLifetime) || "
                    f"({days_cel('self.maxPasswordLifetime', 1, PASSWORD_LIFETIME_MAX)})",
                    "message": MAX_PASSWORD_LIFETIME_MESSAGE,
                    "fieldPath": ".maxPasswordLifetime",
                }
            ]
        }
    )

    namespace_selector: LabelSelector
    """The namespaces this entry is for, by their labels ({} selects every namespace). A namespace no entry
    selects may not use the server; one that several select follows the first."""

    databases: list[DatabasePattern] | None = Field(
        default=None, max_length=MAX_DATABASE_PATTERNS, json_schema_extra={"x-kubernetes-list-type": "set"}
    )
    """Database name patterns the grants of these namespaces may name: '*' matches any run of characters,
    {namespace} is the namespace's name (e.g. "{namespace}_*"). Unset: any database. Grants on *.* are
    governed by allowGlobalPrivileges, not by these patterns."""

    privileges: list[Privilege] | None = Field(
        default=None, json_schema_extra={"x-kubernetes-list-type": "set"}
    )
    """The privilege ceiling: the only privileges grants may list (ALL only if listed here). Unset: any
    privilege the operator otherwise admits."""

    allow_global_privileges: bool = False
    """Whether grants on *.* are allowed (within the ceiling and the operator's --allowed-global-privileges).
    Defaults to false."""

    allow_grant_option: bool = False
    """Whether grants may carry grantOption (WITH GRANT OPTION: the account may pass its privileges on to
    other accounts). Defaults to false; the ceiling does not admit it, not even ALL, as MySQL's ALL does not
    include GRANT OPTION."""

    allow_roles: bool = True
    """Whether DatabaseUsers may be granted roles (spec.roles) and DatabaseRoles may be made. Defaults to
    true."""

    allow_plugins: bool = False
    """Whether DatabaseUsers may choose an authentication plugin (spec.authentication). Defaults to false:
    the server's default plugin."""

    allow_workload_identity: bool = False
    """Whether DatabaseUsers may bind their account to a ServiceAccount of their namespace
    (spec.authentication.workload: certificate-only, signed by the operator for that ServiceAccount's pods).
    Defaults to false."""

    allow_adoption: bool = False
    """Whether DatabaseUsers and DatabaseRoles may take over (the adopt annotation) an account or role the
    operator did not create, or whose DatabaseUser is gone. Defaults to false. Even then, only one whose
    name adoptableNames admits and that holds nothing beyond this entry: its privileges, the roles granted
    to it (recursively, with theirs), proxy grants and its authentication plugin."""

    adoptable_names: list[NamePattern] | None = Field(
        default=None, max_length=MAX_DATABASE_PATTERNS, json_schema_extra={"x-kubernetes-list-type": "set"}
    )
    """Patterns of the account and role names these namespaces may adopt: '*' matches any run of
    characters, {namespace} is the namespace's name (e.g. "{namespace}_*"). Unset: any name (within
    allowAdoption and the bounds of what the account holds)."""

    max_password_lifetime: str | None = Field(default=None, max_length=16, pattern=DAYS_PATTERN)
    """Passwords must expire within this many days (90d, or a duration of whole days such as 2160h): a
    DatabaseUser must set spec.account.passwordExpire to an interval no longer than this; Never, Default
    and unset are refused (PolicyViolation). Unset: no requirement."""

    certificates: CertificatePolicy | None = None
    """The client certificates their DatabaseUsers may request from cert-manager (spec.tls.certificate):
    which ClusterIssuers, and which subjects. Unset: Issuers of their own namespace only, any subject."""

    @model_validator(mode="after")
    def _lifetime_in_days(self) -> NamespacePolicy:
        """The CEL rule on maxPasswordLifetime, with its message."""
        if self.max_password_lifetime is not None:
            try:
                parse_days(self.max_password_lifetime, most=PASSWORD_LIFETIME_MAX)
            except ValueError:
                raise ValueError(MAX_PASSWORD_LIFETIME_MESSAGE) from None
        return self


class ServerPolicy(Model):
    """Which namespaces may use the server, and within which bounds. Checked before any SQL: a resource
    outside it gets Ready=False, reason PolicyViolation, naming the rule; tightening the policy makes
    existing resources report it and stop converging, never revokes or drops anything."""

    namespaces: list[NamespacePolicy] = Field(min_length=1, max_length=MAX_POLICY_ENTRIES)
    """One entry per group of namespaces, by label selector; the first entry that selects a namespace is
    the one it follows."""
