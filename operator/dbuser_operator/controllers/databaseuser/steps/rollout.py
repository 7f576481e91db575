"""Application rollout after a rotation (``spec.connectionSecret.rollout``, opt-in).

When the password changed in this pass (:func:`rotated_in_this_pass`), each named Deployment or
StatefulSet of the resource's namespace gets the new credential version as an annotation of its pod template
(``mysql.dbuser-operator.dev/credential-version``): its controller rolls its pods onto the new password,
within the grace period of a DualPassword rotation. A merge patch with the value already there changes
nothing, so a retried pass is harmless. A workload that is missing, or that the operator may not patch, is
reported as a Warning Event and skipped: the rotation itself does not wait for it.
"""

from __future__ import annotations

from typing import Final

import structlog

from dbuser_operator.api.v1alpha1 import CREDENTIAL_VERSION_ANNOTATION
from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.errors import Forbidden, NotFound
from dbuser_operator.runtime.resources import Resource

log = structlog.get_logger(__name__)

WORKLOADS: Final = {
    "Deployment": Resource("apps", "v1", "deployments", "Deployment"),
    "StatefulSet": Resource("apps", "v1", "statefulsets", "StatefulSet"),
}


def rotated_in_this_pass(ctx: Context) -> bool:
    """Whether this pass changed the password (status.rotation.lastRotationTime moved), or gave the
    connection Secret a new one (its credential version moved: the pass that changed the password died
    before its status write, and this one found the account with that password already)."""
    status = ctx.obj.get("status") or {}
    stored = (status.get("rotation") or {}).get("lastRotationTime")
    current = ctx.status.rotation.last_rotation_time if ctx.status.rotation else None
    if current is not None and current != stored:
        return True
    version, before = ctx.status.credential_version, status.get("credentialVersion")
    return version is not None and before is not None and version != before


def credential_version(ctx: Context) -> str:
    """The version the workloads are annotated with: status.credentialVersion, else the rotation time."""
    version = ctx.status.credential_version
    if version is not None:
        return str(version)
    return ctx.status.rotation.last_rotation_time or "" if ctx.status.rotation else ""


class RolloutStep:
    """Annotates the pod templates of the named workloads after a rotation."""

    name = "rollout"

    def __init__(self, kube: KubeClient) -> None:
        self.kube = kube

    async def ensure(self, ctx: Context) -> None:
        connection = ctx.user.spec.connection_secret
        if connection is None or not connection.rollout or not rotated_in_this_pass(ctx):
            return
        version = credential_version(ctx)
        namespace = ctx.user.metadata.namespace or ""
        patch = {
            "spec": {"template": {"metadata": {"annotations": {CREDENTIAL_VERSION_ANNOTATION: version}}}}
        }
        restarted = []
        for workload in connection.rollout:
            what = f"{workload.kind} {namespace}/{workload.name}"
            try:
                await self.kube.patch(
                    WORKLOADS[workload.kind], workload.name, patch, PatchType.MERGE, namespace=namespace
                )
            except NotFound:
                ctx.event(
                    "Warning", "RolloutTargetNotFound", f"{what} (spec.connectionSecret.rollout) not found"
                )
                continue
            except Forbidden:
                ctx.event("Warning", "RolloutForbidden", f"the operator may not patch {what}")
                continue
            restarted.append(what)
        if restarted:
            log.info("rolled out the new credential", workloads=restarted)
            ctx.event("Normal", "RolloutStarted", f"annotated the pods of {', '.join(restarted)}")

    async def delete(self, ctx: Context) -> None:
        """Nothing to undo."""
