"""What a reconcile reports when it cannot proceed: a reason and a message for the Ready condition."""

from __future__ import annotations

from dbuser_operator.mysql.errors import (
    InvalidNameError,
    MySQLError,
    PrivilegeMisplacedError,
    PrivilegeUnknownError,
    ServerUnreachableError,
)
from dbuser_operator.runtime.controller import ReconcileError

UNREACHABLE_RECHECK = 60.0  # seconds: a resource blocked by an unreachable server looks again after this
PERMANENT_ERRORS = (InvalidNameError, PrivilegeUnknownError, PrivilegeMisplacedError)
"""MySQL refusals not retried until the spec changes."""


class ConditionError(ReconcileError):
    """A step cannot proceed. ``retry``: back off and try again (else wait for a watched change, or for
    ``requeue_after`` seconds)."""

    def __init__(
        self, reason: str, message: str, *, retry: bool = True, requeue_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.retry = retry
        self.requeue_after = requeue_after


class WorkPending(ConditionError):
    """The pass stopped at work that finishes by itself (a render queued behind others): not a failure.
    A kind may keep a serving resource's Ready as it is and report the work as ``Progressing`` instead
    (:meth:`.reconcile.Reconciler.in_progress`) if what it offers keeps working meanwhile (``still_serves``);
    not retried with backoff: the work's end requeues it."""

    def __init__(self, reason: str, message: str, *, still_serves: bool = True) -> None:
        super().__init__(reason, message, retry=False)
        self.still_serves = still_serves


def mysql_condition(error: MySQLError, context: str) -> ConditionError:
    """The Ready=False report for a MySQL failure: its reason, and the server's words (never a secret).

    A name the server refuses, or a privilege it does not have (there), stays refused: not retried until the
    spec changes. A server found unreachable by its probe is not retried with backoff either (thousands of
    resources would hammer the API server with the same report): its return requeues the resource.
    """
    if isinstance(error, ServerUnreachableError):
        # No backoff while the server's probe says it is down: its return requeues the resource
        # (servers.liveness); the look after UNREACHABLE_RECHECK only guards against a missed one.
        return ConditionError(
            error.reason, f"{context}: {error}", retry=False, requeue_after=UNREACHABLE_RECHECK
        )
    return ConditionError(error.reason, f"{context}: {error}", retry=not isinstance(error, PERMANENT_ERRORS))
