"""Workload identity on the DatabaseUser side: the account a ServiceAccount's pods log in to with the client
certificate the operator signs for them (docs/workload-identity.md).

The account is certificate-only: it requires the signing CA's subject as its issuer and the ServiceAccount's
subject (:func:`~dbuser_operator.workload.identity.client_subject` of the DatabaseUser's own namespace:
``spec.authentication.workload`` names no namespace, so no tenant can name another's), and its password is
empty (:func:`~dbuser_operator.mysql.accounts.authentication.certificate_only`). The CA is
``--workload-signing-ca``'s, read when first needed and again whenever its certificate file changes (a
mounted Secret is replaced in place): a new CA subject reaches every account through the drift check.
Without the flag, or with a CA that cannot be read, a workload DatabaseUser is refused
(``WorkloadIdentityUnavailable``) before any SQL.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from dbuser_operator.api.v1alpha1 import DatabaseUser, WorkloadStatus
from dbuser_operator.controllers.kit.errors import ConditionError
from dbuser_operator.mysql.accounts.tls_identity import TLSIdentity
from dbuser_operator.workload import ca
from dbuser_operator.workload.identity import client_subject

UNAVAILABLE: Final = "WorkloadIdentityUnavailable"
NOT_CONFIGURED: Final = (
    "the operator has no signing CA (--workload-signing-ca, the chart's workload signing CA Secret): it "
    "cannot pin the issuer of a workload's certificate, so no certificate-only account is made"
)


@dataclass(frozen=True)
class Workload:
    """A DatabaseUser's workload: its ServiceAccount, the subject its pods' certificates carry and the
    issuer (the signing CA's subject) the account requires."""

    service_account: str
    subject: str
    issuer: str

    def identity(self, cipher: str | None = None) -> TLSIdentity:
        """What the account requires (REQUIRE ISSUER … SUBJECT … [CIPHER …])."""
        return TLSIdentity(issuer=self.issuer, subject=self.subject, cipher=cipher or "")

    def status(self) -> WorkloadStatus:
        """``status.workload``."""
        return WorkloadStatus(
            service_account_name=self.service_account, subject=self.subject, issuer=self.issuer
        )


def service_account_of(user: DatabaseUser) -> str | None:
    """The ServiceAccount ``spec.authentication.workload`` binds (None: a password or plugin account)."""
    method = user.spec.authentication
    return method.workload.service_account_name if method is not None and method.workload else None


class SigningCASource:
    """The signing CA's subject, from ``directory`` (None: no workload identity in this operator)."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self._seen: tuple[int, int, int] | None = None  # the certificate file's inode, size and mtime
        self._issuer: str | None = None

    def issuer(self) -> str:
        """The issuer every workload account requires; ConditionError(WorkloadIdentityUnavailable) when
        the operator has no signing CA (not retried: the operator's flags change with a restart, which
        reconciles everything) or cannot read it (retried: a mounted Secret is fixed in place)."""
        if self.directory is None:
            raise ConditionError(UNAVAILABLE, NOT_CONFIGURED, retry=False)
        try:
            found = os.stat(self.directory / ca.CERTIFICATE_FILE)
            seen = (found.st_ino, found.st_size, found.st_mtime_ns)
            if seen != self._seen or self._issuer is None:
                self._issuer, self._seen = ca.load(self.directory).issuer, seen
        except (OSError, ca.SigningCAError) as error:
            self._issuer = self._seen = None
            why = str(error) if isinstance(error, ca.SigningCAError) else type(error).__name__
            raise ConditionError(UNAVAILABLE, f"the signing CA cannot be used: {why}") from None
        return self._issuer

    def workload_of(self, user: DatabaseUser) -> Workload | None:
        """``user``'s workload (None when it binds no ServiceAccount); ConditionError as :meth:`issuer`."""
        account = service_account_of(user)
        if account is None:
            return None
        subject = client_subject(user.metadata.namespace or "", account)
        return Workload(account, subject, self.issuer())
