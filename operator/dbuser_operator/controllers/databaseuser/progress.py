"""The ``Progressing`` condition of a DatabaseUser: work underway that finishes by itself, apart from Ready.

``Ready`` says whether the account serves the spec's applications; ``Progressing`` says whether the
operator still has work of its own on the resource, as a Deployment's does:

- ``True``, reason ``TemplatesPending``: the connection Secret's templates are queued to render (renders are
  shared fairly between namespaces); the render's end requeues the resource;
- ``True``, reason ``RotationRetained``: a DualPassword rotation keeps the previous password working until the
  discard step drops it;
- ``False``, reason ``Settled``: nothing pending (Ready says whether the account serves, and if not why).

A pass that stops at pending work (:class:`~..kit.errors.WorkPending`) keeps ``Ready=True`` on a resource
that already serves (Ready was True and the account exists) while what it offers keeps working (the
connection Secret's password still logs in: unchanged, or the previous one a DualPassword rotation retains):
Ready is left exactly as it was, so its ``observedGeneration`` stays the generation last applied whole. A
password changed at once (Immediate) whose connection Secret waits for its render turns Ready to False:
applications reading that Secret cannot log in until it is written. A resource never Ready yet is still
``Ready=False`` with the pending reason until its first render.
"""

from __future__ import annotations

from typing import Final

from dbuser_operator.api.v1alpha1 import DatabaseUserStatus
from dbuser_operator.controllers.databaseuser.context import Context
from dbuser_operator.controllers.kit.errors import ConditionError, WorkPending
from dbuser_operator.controllers.kit.reconcile import READY, Reconciler

PROGRESSING: Final = "Progressing"
SETTLED: Final = "Settled"
ROTATION_RETAINED: Final = "RotationRetained"


def progressing(status: DatabaseUserStatus, error: ConditionError | None) -> tuple[str, str, str]:
    """Progressing's status, reason and message after a pass that ended with ``error`` (None: done)."""
    if isinstance(error, WorkPending):
        return "True", error.reason, error.message
    rotation = status.rotation
    if rotation is not None and rotation.phase == "Retained":
        since = f" (retained since {rotation.retained_since})" if rotation.retained_since else ""
        message = f"password rotated: the previous password still works until the operator discards it{since}"
        return "True", ROTATION_RETAINED, message
    return "False", SETTLED, "no work pending"


def serves(status: DatabaseUserStatus, account_exists: bool | None) -> bool:
    """Whether the account serves already: Ready was True, and this pass did not find the account gone."""
    ready = any(c.type == READY and c.status == "True" for c in status.conditions)
    return ready and account_exists is not False


def keeps_ready(status: DatabaseUserStatus, account_exists: bool | None, error: ConditionError) -> bool:
    """Whether a pass ended by ``error`` leaves Ready as it is: pending work on an account that serves."""
    return isinstance(error, WorkPending) and error.still_serves and serves(status, account_exists)


def record(ctx: Context, error: ConditionError | None = None) -> bool:
    """Set Progressing on ``ctx.status`` for a pass ended by ``error`` (None: done); return whether Ready
    stays as it is."""
    keep = error is not None and keeps_ready(ctx.status, ctx.account_exists, error)
    if error is not None and not keep and not any(c.type == READY for c in ctx.status.conditions):
        Reconciler.set_condition(ctx, READY, "False", error.reason, error.message)  # Ready stays first
    Reconciler.set_condition(ctx, PROGRESSING, *progressing(ctx.status, error))
    return keep
