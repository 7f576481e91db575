"""The multi-step reconcile: an ordered list of steps, each with an *ensure* and a *delete* half.

Creation and updates run the ensure halves in order; deletion runs the delete halves in reverse, and the
finalizer comes off after the last one. Adding a behaviour is adding a step. A step that cannot proceed
raises :class:`~.errors.ConditionError`: the resource becomes ``Ready=False`` with that reason and message.

A step that reads what another one learns names it in ``after``; :func:`check_order` refuses a list in
which it does not come first, when the pipeline is built (a step that runs steps of its own, such as the
per-host account steps, lists them in ``steps``: they count at its place).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
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


class StepOrderError(ValueError):
    """A pipeline in which a step runs before one whose outcome it reads."""


def flattened(steps: Sequence[Step]) -> Iterator[Step]:
    """``steps`` in the order their ensure halves run, the steps a step runs (``steps``) at its place."""
    for step in steps:
        yield step
        yield from flattened(getattr(step, "steps", ()))


def check_order(steps: Sequence[Step]) -> list[Step]:
    """``steps`` as a list, once every step's ``after`` names steps that run before it; else
    :class:`StepOrderError` naming the step and what it needs."""
    seen: set[str] = set()
    for step in flattened(steps):
        missing = [name for name in getattr(step, "after", ()) if name not in seen]
        if missing:
            raise StepOrderError(f"the {step.name} step must run after the {', '.join(missing)} step(s)")
        seen.add(step.name)
    return list(steps)
