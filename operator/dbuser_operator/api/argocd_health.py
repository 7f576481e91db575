"""Argo CD health checks (Lua) for each kind, generated from the one list of reasons read as Degraded.

``python -m dbuser_operator.api.argocd_health`` writes ``charts/dbuser-operator/argocd/`` (one
``health/<Kind>.lua`` per kind and ``argocd-cm-patch.yaml``, the five scripts as ``argocd-cm`` keys);
``--check`` writes nothing and exits 1, with a diff, when a file differs from what this module generates.

How a script reads a resource (Argo CD runs it in gopher-lua, Lua 5.1, with ``obj`` the live object):

- ``spec.managementPolicy: Paused`` → Suspended (nothing is done); ``Observe`` → Suspended (nothing is
  written; the message says ``Observed`` or ``Diverged``) unless the refusal is in the kind's Degraded list;
- no ``Ready`` condition yet, or one of an older generation than ``metadata.generation`` → Progressing;
- ``Ready=False`` with a reason of the kind's Degraded list → Degraded: the operator stopped trying and waits
  for a change (of the resource, a Secret, a policy, another resource, or the account in MySQL);
- any other ``Ready=False`` (``DatabaseUnavailable``, ``ServerNotReady``, ``TemplatesPending`` of a
  DatabaseUser never Ready yet, MySQL errors it retries with backoff, …) → Progressing: the operator keeps
  trying, or waits for something that comes by itself;
- ``Ready=True`` → Healthy, except while the operator has work of its own underway: ``Progressing=True``
  (``TemplatesPending``, ``RotationRetained``: a DatabaseUser's) → Progressing with its reason and message
  (a status written before that condition existed: ``status.rotation.phase: Retained`` → Progressing).
  Pending work never turns a serving account's Ready to False, so a Secret edit is not read as failing.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from dbuser_operator.api.crd import check, source_tree
from dbuser_operator.api.v1alpha1 import GROUP

COMMAND = "python -m dbuser_operator.api.argocd_health"

# Reasons both account kinds refuse with until something changes: the spec (InvalidSpec), the server's
# policy (PolicyViolation, AdoptionNotAllowed, NamespacesUnreadable: the operator's RBAC and a restart),
# ownership (claimed by another resource, or not created by the operator), reserved names and privileges
# the operator never grants, and a server resource that is missing or going away.
_REFUSALS: Final = frozenset(
    {
        "InvalidSpec",
        "PolicyViolation",
        "NamespacesUnreadable",
        "AdoptionNotAllowed",
        "ReservedAccount",
        "PrivilegeNotAllowed",
        "PrivilegeUnknown",
        "PrivilegeMisplaced",
        "InvalidName",
        "ServerNotFound",
        "ServerDeleting",
    }
)

# A server resource is checked again every --server-check-period whatever failed; these failures are its
# configuration (spec, Secrets, admin account, TLS), which a new check does not repair. Unreachable (a server
# starting, an outage) and Deleting (waiting for its users) stay Progressing.
_SERVER_REFUSALS: Final = frozenset(
    {
        "InvalidSpec",
        "SecretNotFound",
        "InvalidCredentials",
        "AccessDenied",
        "TLSError",
        "AdminPrivilegeMissing",
    }
)

DEGRADED_REASONS: Final[Mapping[str, frozenset[str]]] = {
    "DatabaseUser": _REFUSALS
    | {
        "AccountExists",
        "AccountClaimed",
        "UserNameTaken",
        "ObserveNotAllowed",
        "SecretNotFound",
        "SecretKeyNotFound",
        "PasswordEmpty",
        "PasswordInvalid",
        "PasswordTooLong",
        "SecretNotOwned",
        "TemplateInvalid",
        "ConnectionSecretInvalid",
        "EndpointNotFound",
        "DualPasswordUnsupported",
        "CommentNotSupported",
        "AccountOptionUnsupported",
        "TooManyDefaultRoles",
        "RoleNotFound",
        "DatabaseNotFound",  # a databaseRef naming no Database of the namespace
        "DatabaseOnAnotherServer",
        "WorkloadIdentityUnavailable",  # no signing CA (--workload-signing-ca), or one it cannot read
        # spec.tls.certificate: cert-manager off, a subject it cannot take, an issuer or subject the policy
        # does not admit, a Certificate not ours, one cert-manager's webhook refuses, the wrong issuer's CA.
        "CertManagerDisabled",
        "CertificateSubjectInvalid",
        "CertificateNotAllowed",
        "CertificateNotOwned",
        "CertificateInvalid",
        "CertificateIssuerMismatch",
    },
    "DatabaseRole": _REFUSALS | {"RoleExists", "RoleClaimed"},
    "Database": _REFUSALS
    | {
        "DatabaseExists",
        "DatabaseClaimed",
        "ReservedDatabase",
        "CharacterSetInvalid",
        "DatabaseNotFound",
        "ObserveNotAllowed",
    },
    "MySQLServer": _SERVER_REFUSALS,
    "ClusterMySQLServer": _SERVER_REFUSALS,
}
"""Per kind, the reasons of Ready=False read as Degraded; any other Ready=False is Progressing."""
KINDS: Final = tuple(DEGRADED_REASONS)

WAITS: Final = frozenset(
    {
        "ServerNotReady",
        "TemplatesPending",
        "DatabaseUnavailable",
        "DatabaseNotReady",
        "RoleNotReady",
        "CertificatePending",
        "CertificateFailed",
    }
)
"""Reasons the operator does not retry with backoff but that clear without a change: the server's return
(ServerNotReady; DatabaseUnavailable once its probe answers), the render's turn or the Database a grant's
databaseRef names (DatabaseNotReady, once it is Ready) requeues the resource, and so does a DatabaseRole
that spec.roles names (RoleNotReady: it exists and owns its MySQL role but is not Ready yet, or is being
deleted; once it is Ready, or gone: then RoleNotFound, Degraded); cert-manager's Secret or Certificate
(CertificatePending, CertificateFailed: cert-manager retries a failure itself) too.
Progressing, like every reason outside DEGRADED_REASONS."""

_SCRIPT = """\
-- Argo CD health check of {group}/{kind}, generated by `{command}`:
-- edit the reasons in dbuser_operator/api/argocd_health.py, not here.
-- Degraded: Ready=False with a reason the operator does not get past without a change.
local degraded = {{
{reasons}
}}
local hs = {{}}
local function describe(c)
  local text = c.reason or "Unknown"
  if c.message ~= nil and c.message ~= "" then
    text = text .. ": " .. c.message
  end
  return text
end
local spec = obj.spec or {{}}
local status = obj.status or {{}}
local policy = spec.managementPolicy
if policy == "Paused" then
  hs.status = "Suspended"
  hs.message = "managementPolicy Paused: the operator changes nothing"
  return hs
end
if obj.metadata.deletionTimestamp ~= nil then
  hs.status = "Progressing"
  hs.message = "being deleted"
  return hs
end
local ready = nil
local progressing = nil
for _, c in ipairs(status.conditions or {{}}) do
  if c.type == "Ready" then
    ready = c
  elseif c.type == "Progressing" then
    progressing = c
  end
end
if ready == nil then
  hs.status = "Progressing"
  hs.message = "waiting for the operator's first status"
  return hs
end
local generation = obj.metadata.generation
if generation ~= nil and ready.observedGeneration ~= nil and ready.observedGeneration < generation then
  hs.status = "Progressing"
  hs.message = "generation " .. tostring(generation) .. " not reconciled yet (Ready is of generation "
    .. tostring(ready.observedGeneration) .. ")"
  return hs
end
if ready.status == "False" and degraded[ready.reason] then
  hs.status = "Degraded"
  hs.message = describe(ready)
  return hs
end
if policy == "Observe" then
  hs.status = "Suspended"
  hs.message = "managementPolicy Observe: " .. describe(ready)
  return hs
end
if ready.status == "True" then
  if progressing ~= nil and progressing.status == "True" then
    hs.status = "Progressing"
    hs.message = describe(progressing)
    return hs
  end
  if progressing == nil and status.rotation ~= nil and status.rotation.phase == "Retained" then
    hs.status = "Progressing"
    hs.message = "password rotated: the previous password still works until the operator discards it"
    if status.rotation.retainedSince ~= nil then
      hs.message = hs.message .. " (retained since " .. status.rotation.retainedSince .. ")"
    end
    return hs
  end
  hs.status = "Healthy"
  hs.message = describe(ready)
  return hs
end
hs.status = "Progressing"
hs.message = describe(ready)
return hs
"""


def script(kind: str) -> str:
    """The Lua health check of ``kind``."""
    reasons = "\n".join(f"  {reason} = true," for reason in sorted(DEGRADED_REASONS[kind]))
    return _SCRIPT.format(group=GROUP, kind=kind, command=COMMAND, reasons=reasons)


def config_key(kind: str) -> str:
    """The ``argocd-cm`` key of ``kind``'s health check."""
    return f"resource.customizations.health.{GROUP}_{kind}"


def generate() -> dict[str, str]:
    """The files of ``charts/dbuser-operator/argocd/``, by path relative to it."""
    files = {f"health/{kind}.lua": script(kind) for kind in KINDS}
    lines = [
        f"# Generated by `{COMMAND}`. Merge into Argo CD's argocd-cm:",
        "#   kubectl -n argocd patch configmap argocd-cm --type merge --patch-file argocd-cm-patch.yaml",
        "data:",
    ]
    for kind in KINDS:
        lines.append(f"  {config_key(kind)}: |")
        lines.extend(f"    {line}" if line else "" for line in script(kind).splitlines())
    files["argocd-cm-patch.yaml"] = "\n".join(lines) + "\n"
    return files


def main(argv: Sequence[str] | None = None) -> int:
    """Write (or ``--check``) the health checks; returns the exit code."""
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--output", type=Path, help="directory of the files (default: charts/dbuser-operator/argocd/)"
    )
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 with a diff when stale")
    args = parser.parse_args(argv)
    directory: Path | None = args.output
    if directory is None:
        root = source_tree()
        if root is None:
            parser.error("not running from a source tree: give --output")
        directory = root / "charts" / "dbuser-operator" / "argocd"
    files = generate()
    if args.check:
        diffs = check(directory, files)
        for diff in diffs:
            sys.stdout.write(diff)
        if diffs:
            print(f"stale health checks in {directory}: run `{COMMAND}`", file=sys.stderr)
            return 1
        return 0
    for name, text in files.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
