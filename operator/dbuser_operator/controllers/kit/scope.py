"""Which ``DatabaseUser`` resources one operator instance serves, and the finalizer it marks them with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dbuser_operator.api.v1alpha1.meta import LEGACY_FINALIZER, target_finalizer


@dataclass(frozen=True)
class Scope:
    """The resources labelled ``label: target``; each instance's finalizer names its own target.

    Distinct finalizers let an instance let go of a resource that moved to another target without taking
    away the new instance's hold on it.
    """

    label: str
    target: str

    @property
    def selector(self) -> str:
        """The label selector of the resources served."""
        return f"{self.label}={self.target}"

    def serves(self, obj: dict[str, Any]) -> bool:
        """Whether ``obj`` carries the target label with this instance's value."""
        return (obj["metadata"].get("labels") or {}).get(self.label) == self.target

    @property
    def outside_selector(self) -> str:
        """The label selector of every other resource, those without the label included."""
        return f"{self.label}!={self.target}"

    def holds(self, obj: dict[str, Any]) -> bool:
        """Whether ``obj`` carries this instance's finalizer (or the legacy shared one)."""
        present = obj["metadata"].get("finalizers") or []
        return any(name in present for name in self.finalizers)

    @property
    def finalizer(self) -> str:
        """The finalizer this instance adds, and removes once its delete halves have run."""
        return target_finalizer(self.target)

    @property
    def finalizers(self) -> tuple[str, str]:
        """The finalizers that mean "held by this instance": its own and the legacy shared one."""
        return self.finalizer, LEGACY_FINALIZER
