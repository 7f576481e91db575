"""Exponential backoff with jitter, for reconnecting to the API server."""

from __future__ import annotations

import random


class Backoff:
    """Delays that double from ``initial`` up to ``cap``, each with up to 100 % random jitter added."""

    def __init__(self, initial: float = 0.8, cap: float = 30.0, factor: float = 2.0) -> None:
        self.initial = initial
        self.cap = cap
        self.factor = factor
        self._next = initial

    def next(self) -> float:
        """The delay to wait now; the one after it is longer."""
        delay = self._next
        self._next = min(self._next * self.factor, self.cap)
        return min(delay * (1 + random.random()), self.cap)  # noqa: S311 - jitter, not cryptography

    def reset(self) -> None:
        """Start again from ``initial`` (after a success)."""
        self._next = self.initial
