"""The client-certificate step: ``spec.tls.certificate`` has cert-manager issue the account's client
certificate (docs/cert-manager.md).

It runs once the accounts exist and require the subject: the subject, in OpenSSL's one-line form, becomes
the Certificate's ``literalSubject`` (refused with ``CertificateSubjectInvalid`` if it cannot be written so);
a ClusterIssuer, or a subject outside the policy's patterns, is refused with ``CertificateNotAllowed`` before
any Certificate exists (:mod:`~dbuser_operator.controllers.policy.issuers`). Until cert-manager's Secret holds
a certificate of that subject, valid now, with its key, Ready is False (``CertificatePending``, or
``CertificateFailed`` with cert-manager's words) and the later steps wait: the connection Secret never offers
a certificate that cannot log in. With ``spec.tls.issuer`` set, an issued certificate of another issuer is
``CertificateIssuerMismatch``. Once issued, its tls.crt, tls.key and ca.crt go to the connection Secret, and
every renewal (a new Secret version: the watch brings the resource back) is copied there too: nothing is
written to MySQL, since the account requires a subject (and issuer), not one certificate.

Removing ``spec.tls.certificate`` deletes the Certificate and cert-manager's Secret; so does deleting the
resource (``Delete``); ``Retain`` keeps both, the Certificate no longer owned.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final, NoReturn

from dbuser_operator.api.v1alpha1.client_certificate import ClientCertificate, ClientCertificateStatus
from dbuser_operator.certificates.certificate import Progress, Request, pending_request_message
from dbuser_operator.certificates.issued import CertificateUnreadable, IssuedCertificate
from dbuser_operator.certificates.names import NameFormError, literal_subject, parse
from dbuser_operator.controllers.databaseuser.cert_manager import CertManagerObjects, written_for
from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.controllers.databaseuser.owned_secrets import decoded
from dbuser_operator.controllers.kit.errors import ConditionError
from dbuser_operator.controllers.policy.issuers import CertificateRules

KEYS: Final = ("tls.crt", "tls.key", "ca.crt")
"""The keys of cert-manager's Secret that the connection Secret carries (ca.crt where the issuer gives it)."""
PENDING_RECHECK: Final = 15.0
"""Seconds between looks while a certificate is pending (cert-manager's Secret, when it comes, is watched)."""


class ClientCertificateStep:
    """Requests the client certificate from cert-manager and hands the issued one to the connection Secret."""

    name = "client-certificate"
    after = ("hosts",)  # the accounts require the subject before a certificate of it is handed out

    def __init__(self, objects: CertManagerObjects | None, rules: CertificateRules) -> None:
        self.objects = objects  # None: the operator was started without --cert-manager
        self.rules = rules

    async def ensure(self, ctx: Context) -> None:
        tls = ctx.user.spec.tls
        wanted = tls.certificate if tls is not None else None
        if wanted is None or tls is None or tls.subject is None:
            await self._remove(ctx)
            return
        if self.objects is None:
            raise ConditionError(
                "CertManagerDisabled",
                "spec.tls.certificate: this operator requests no certificates (it was started without "
                "--cert-manager: chart value certManager.enabled)",
                retry=False,
            )
        request = self._request(ctx, wanted, tls.subject)
        secret = self.objects.secret(ctx, request.secret_name)
        if secret is not None and not written_for(secret, request.name):  # before cert-manager writes to it
            key = f"{ctx.user.metadata.namespace}/{request.secret_name}"
            raise ConditionError(
                "SecretNotOwned",
                f"Secret {key} exists and is not cert-manager's Secret of Certificate {request.name}: "
                "choose another spec.tls.certificate.secretName",
                retry=False,
            )
        certificate = await self.objects.ensure(ctx, request)
        status = await _status(ctx, self.objects, request)
        progress = Progress.of(certificate)
        issued = _issued(secret, tls.subject)
        if issued is None or (tls.issuer is not None and issued.issuer != tls.issuer and not progress.ready):
            await self._pending(ctx, certificate, progress)
        if tls.issuer is not None and issued.issuer != tls.issuer:
            raise ConditionError(
                "CertificateIssuerMismatch",
                f"Certificate {request.name} was issued by {issued.issuer[:200]!a}, but spec.tls.issuer "
                f"requires {tls.issuer[:200]!a}: the account would refuse it. Name the issuer whose CA that "
                "is, or set spec.tls.issuer to the certificate's issuer",
                retry=False,
            )
        self._record(ctx, status, issued)
        if progress.failed:  # a renewal failed; the certificate in use is still valid
            ctx.event(
                "Warning", "CertificateFailed", f"Certificate {request.name}: {progress.message}"[:1024]
            )
        ctx.client_certificate = {
            key: value for key in KEYS if secret is not None and (value := decoded(secret, key)) is not None
        }

    def _request(self, ctx: Context, wanted: ClientCertificate, subject: str) -> Request:
        """What to ask of cert-manager; CertificateSubjectInvalid or CertificateNotAllowed when it may not."""
        try:
            literal = literal_subject(parse(subject))
        except NameFormError as error:
            raise ConditionError(
                "CertificateSubjectInvalid",
                f"spec.tls.subject cannot be requested from cert-manager: {error}",
                retry=False,
            ) from None
        namespace = ctx.user.metadata.namespace or ""
        self.rules.check(ctx.server_resource, namespace, wanted, subject)
        name = ctx.user.metadata.name or ""
        return Request(
            name=name,
            secret_name=wanted.secret_name_for(name),
            literal_subject=literal,
            issuer_name=wanted.issuer_ref.name,
            issuer_kind=wanted.issuer_ref.kind,
            duration=wanted.duration,
            renew_before=wanted.renew_before,
        )

    async def _pending(self, ctx: Context, certificate: dict[str, Any], progress: Progress) -> NoReturn:
        """Raise CertificateFailed or CertificatePending with cert-manager's words, looked at again soon."""
        name = certificate["metadata"]["name"]
        message = progress.message
        if not progress.failed and self.objects is not None:
            requests = await self.objects.requests(ctx)
            message = pending_request_message(requests, certificate["metadata"].get("uid", "")) or message
        reason = "CertificateFailed" if progress.failed else "CertificatePending"
        shown = message or "waiting for cert-manager to issue it"
        raise ConditionError(
            reason, f"Certificate {name}: {shown}"[:2048], retry=False, requeue_after=PENDING_RECHECK
        )

    @staticmethod
    def _record(ctx: Context, status: ClientCertificateStatus, issued: IssuedCertificate) -> None:
        """The certificate in use, in status; an Event when it is a new one (issued or renewed)."""
        if status.serial_number != issued.serial_number:
            expiry = issued.not_after.strftime("%Y-%m-%dT%H:%M:%SZ")
            ctx.event(
                "Normal",
                "CertificateIssued",
                f"Certificate {status.certificate}: serial {issued.serial_number}, valid until {expiry}",
            )
        ctx.status.client_certificate = status.model_copy(
            update={
                "issuer": issued.issuer,
                "serial_number": issued.serial_number,
                "not_after": issued.not_after.strftime("%Y-%m-%dT%H:%M:%SZ"),
            }
        )

    async def _remove(self, ctx: Context) -> None:
        """No certificate wanted (now): delete the one recorded, and its Secret."""
        recorded = ctx.status.client_certificate
        if recorded is None:
            return
        if self.objects is not None:
            await self.objects.delete(ctx, recorded.certificate, [recorded.secret_name])
        ctx.status.client_certificate = None

    async def delete(self, ctx: Context) -> None:
        if self.objects is None:
            return
        name = ctx.user.metadata.name or ""
        recorded = ctx.status.client_certificate
        tls = ctx.user.spec.tls
        wanted = tls.certificate if tls is not None else None
        # status's, and the spec's (a pass that made the Certificate may have ended before status was written)
        names = [recorded.secret_name] if recorded is not None else []
        names += [wanted.secret_name_for(name)] if wanted is not None else []
        await self.objects.delete(ctx, name, names)

    async def release(self, ctx: Context) -> None:
        if self.objects is not None:
            await self.objects.release(ctx, ctx.user.metadata.name or "")


def _issued(secret: dict[str, Any] | None, subject: str) -> IssuedCertificate | None:
    """The certificate in cert-manager's Secret if it can log in as the account: of ``subject``, valid now,
    with its key; else None."""
    if secret is None or decoded(secret, "tls.key") is None:
        return None
    pem = decoded(secret, "tls.crt")
    if pem is None:
        return None
    try:
        issued = IssuedCertificate.from_pem(pem.encode())
    except CertificateUnreadable:
        return None
    if issued.subject != subject or not issued.valid_at(datetime.now(UTC)):
        return None
    return issued


async def _status(ctx: Context, objects: CertManagerObjects, request: Request) -> ClientCertificateStatus:
    """The status of the certificate requested, recorded at once; a Secret written under the name the
    spec had before is deleted (its certificate is issued again under the new one)."""
    recorded = ctx.status.client_certificate
    if recorded is not None and recorded.secret_name != request.secret_name:
        await objects.delete_secret(ctx, request.name, recorded.secret_name)
        recorded = None
    status = recorded or ClientCertificateStatus(certificate=request.name, secret_name=request.secret_name)
    ctx.status.client_certificate = status
    return status
