"""One call's time bound, moved along its phases: :class:`CallBound` (for :mod:`.connection`)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from dbuser_operator.mysql.session.pool import Pool
    from dbuser_operator.mysql.session.settings import ConnectionSettings

WHOLE: Final = "whole"  # the call as a whole: statement_timeout
LOGIN: Final = "login"  # a new connection's login: connect_timeout
ANSWER: Final = "answer"  # the answer to a statement: read_timeout


class CallBound:
    """The time bound of one call, moved along its phases: ``statement_timeout`` for the whole call, within
    it ``connect_timeout`` for a new connection's login and ``read_timeout`` for each answer. One timer for
    the call, rescheduled as it goes, not one per phase; it is first set by the first wait (a free
    connection is taken without one). The timer is ``bound``, an :func:`asyncio.timeout` the call runs in:
    it raises :class:`TimeoutError` there, and :meth:`expired` says which phase ran out."""

    __slots__ = ("bound", "end", "phase", "pool", "settings")

    def __init__(self, bound: asyncio.Timeout, settings: ConnectionSettings) -> None:
        self.bound = bound
        self.settings = settings
        self.end = asyncio.get_running_loop().time() + settings.statement_timeout
        self.phase = WHOLE
        self.pool: Pool | None = None  # the pool of the current attempt

    def limit(self, phase: str) -> None:
        """Bound what follows by ``phase``'s timeout from now, never past the call's own end."""
        seconds = self.settings.connect_timeout if phase == LOGIN else self.settings.read_timeout
        when = self.end if phase == WHOLE else asyncio.get_running_loop().time() + seconds
        if when >= self.end:
            phase, when = WHOLE, self.end
        self.phase = phase
        if when != self.bound.when():
            self.bound.reschedule(when)

    def expired(self, phase: str | None = None) -> str:
        """What ran out: the message for a call stopped at ``phase`` (default: the one its bound was for)."""
        settings, phase = self.settings, phase or self.phase
        if phase == LOGIN:
            return f"no login within {settings.connect_timeout:g} s of connecting"
        if phase == ANSWER:
            return f"the server did not answer within {settings.read_timeout:g} s"
        return f"the database did not answer within {settings.statement_timeout:g} s"
