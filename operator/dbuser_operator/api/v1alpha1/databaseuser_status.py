"""The ``DatabaseUser``'s status: the accounts as the operator last observed them."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from dbuser_operator.api.v1alpha1.account import ObservedAccount
from dbuser_operator.api.v1alpha1.client_certificate import ClientCertificateStatus
from dbuser_operator.api.v1alpha1.credentials import AppliedSecret, RotationStatus
from dbuser_operator.api.v1alpha1.meta import (
    DNS_SUBDOMAIN_MAX_LENGTH,
    DNS_SUBDOMAIN_PATTERN,
    INT64,
    Condition,
    Model,
)


class WorkloadStatus(Model):
    """The workload identity in force: whose pods log in, with a certificate of which subject and issuer."""

    service_account_name: str = Field(alias="serviceAccountName")
    """The ServiceAccount (of the DatabaseUser's namespace) whose pods log in to the account."""

    subject: str
    """The subject the account requires (REQUIRE SUBJECT), in OpenSSL's one-line form:
    /O=dbuser-operator/OU=<namespace>/CN=<serviceAccountName>."""

    issuer: str
    """The issuer the account requires (REQUIRE ISSUER): the operator's signing CA's subject."""


class DatabaseUserStatus(Model):
    """The state of the account as the operator last observed it."""

    conditions: list[Condition] = Field(
        default_factory=list,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )
    """Latest observations of the account's state. Ready is True once the account exists in MySQL and
    matches the spec."""

    observed_generation: int | None = Field(default=None, ge=0, json_schema_extra=INT64)
    """The metadata.generation that the operator last acted on."""

    operator_version: str | None = None
    """The operator version whose pass last wrote this status. A new leader skips the first-pass reconcile
    of a converged resource only when its own version wrote it: after an upgrade every resource is
    reconciled once."""

    user: str | None = None
    """MySQL user name of the account (spec.user, or metadata.name)."""

    host: str | None = None
    """MySQL host part of the account."""

    applied_secret: AppliedSecret | None = None
    """The version of the password Secret last applied to the account."""

    authentication_plugin: str | None = None
    """The authentication plugin in force on the account, when spec.authentication names one."""

    workload: WorkloadStatus | None = None
    """The workload identity in force, when spec.authentication.workload binds a ServiceAccount: the
    account takes that ServiceAccount's pod certificates, and no password."""
    hosts: list[str] | None = None
    """Hosts of the accounts this resource owns, as the operator's bookkeeping table records them at the
    end of the last pass: spec.host and spec.hosts, and a removed host whose account could not be dropped
    yet (the operator keeps trying)."""

    observed: list[ObservedAccount] | None = None
    """Under managementPolicy Observe: each account as the server has it, and how it differs from the
    spec."""

    privileges: list[str] | None = None
    """The privileges the account was last brought in line with, one line per grant as MySQL writes them
    (e.g. "SELECT, INSERT ON `app`.*", "SELECT (a, b) ON `app`.`t`", "EXECUTE ON PROCEDURE `app`.`p`").
    Absent when the account has none."""

    rotation: RotationStatus | None = None
    """The last password rotation: its phase (Retained, Discarded), strategy and times."""

    credential_version: int | None = Field(default=None, ge=1, json_schema_extra=INT64)
    """The credential version of the connection Secret (its annotation
    mysql.dbuser-operator.dev/credential-version): increased whenever the password in it changes."""

    connection_secret: str | None = Field(
        default=None, max_length=DNS_SUBDOMAIN_MAX_LENGTH, pattern=DNS_SUBDOMAIN_PATTERN
    )
    """Name of the connection Secret the operator last wrote: once spec.connectionSecret is renamed or
    removed, the Secret of this name is deleted (if this DatabaseUser owns it)."""

    connection_secret_version: AppliedSecret | None = None
    """The version of the connection Secret (one with templates) that the last pass wrote or found in
    line: a new leader's first pass takes the template keys of a Secret still at this version as they are,
    without rendering them. Absent without templates."""

    client_certificate: ClientCertificateStatus | None = None
    """The client certificate cert-manager issued for spec.tls.certificate: its Certificate and Secret, the
    issuer and expiry of the one in use. Once spec.tls.certificate is removed, that Certificate and Secret
    are deleted."""

    def to_api(self, previous: dict[str, Any] | None = None) -> dict[str, Any]:
        """The status as the API stores it (camelCase, None left out), keeping the fields of ``previous``
        (the stored status) that this model does not know: a newer operator's are not erased."""
        known = {field.alias or name for name, field in type(self).model_fields.items()}
        kept = {key: value for key, value in (previous or {}).items() if key not in known}
        return {**kept, **self.model_dump(by_alias=True, exclude_none=True, mode="json")}
