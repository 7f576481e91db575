"""The multi-step reconcile: an ordered list of steps, each with an *ensure* and a *delete* half.

Creation and updates run the ensure halves in order; deletion runs the delete halves in reverse, and the
finalizer comes off after the last one. Adding a behaviour is adding a step. A step that cannot proceed
raises :class:`ConditionError`: the resource becomes ``Ready=False`` with that reason and message.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

EventType = Literal["Normal", "Warning"]


class Step(Protocol):
    """One behaviour of the reconcile."""

    name: str

    async def ensure(self, ctx: Any) -> None:
        """Bring this aspect in line with the spec."""

    async def delete(self, ctx: Any) -> None:
        """Undo this aspect before the resource goes away."""


@runtime_checkable
class Releasing(Protocol):
    """A step that keeps something for after the resource is gone (deletionPolicy Retain, or released)."""

    async def release(self, ctx: Any) -> None:
        """Let go of what this step made, leaving it in place."""
