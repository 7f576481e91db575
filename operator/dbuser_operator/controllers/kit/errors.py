"""What a reconcile reports when it cannot proceed: a reason and a message for the Ready condition."""

from __future__ import annotations

from dbuser_operator.mysql.errors import (
    InvalidNameError,
    MySQLError,
    PrivilegeMisplacedError,
    PrivilegeUnknownError,
)
from dbuser_operator.runtime.controller import ReconcileError


class ConditionError(ReconcileError):
    """A step cannot proceed. ``retry``: back off and try again (else wait for a watched change)."""

    def __init__(self, reason: str, message: str, *, retry: bool = True) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.retry = retry


def mysql_condition(error: MySQLError, context: str) -> ConditionError:
    """The Ready=False report for a MySQL failure: its reason, and the server's words (never a secret).

    A name the server refuses, or a privilege it does not have (there), stays refused: not retried until the
    spec changes.
    """
    permanent = (InvalidNameError, PrivilegeUnknownError, PrivilegeMisplacedError)
    return ConditionError(error.reason, f"{context}: {error}", retry=not isinstance(error, permanent))
