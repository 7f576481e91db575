"""Read your own writes: a pass never works from a cached object older than what an earlier pass wrote.

The informer's cache learns of a write when the watch delivers it, some milliseconds (under load, longer)
after the write returned. A pass that starts in between — its key queued again by the watch event of the
finalizer the last pass added, by a Secret event, or by the drift check — would read the object as it was
before the last pass: its status without what that pass recorded (the Secret version applied, a
rotation's phase) and redo that work, e.g. set the password again and read its fingerprint back, taking a
password somebody set by hand meanwhile for the operator's own. :class:`WrittenVersions` remembers, per
key, the resourceVersions the last pass's writes replaced; a pass whose cached object still has one of
them waits for the cache instead (the watch event of the write queues the key again; a short requeue is
the fallback). The set of resourceVersions, not an ordering of them: resourceVersions are opaque.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Final

from dbuser_operator.runtime.resources import ObjectKey

STALE_RETRY: Final = 0.2  # seconds: when a pass waits for the cache, look again after this at the latest
PATIENCE: Final = 30.0  # seconds: a cache that has not caught up by then is trusted again (never stuck)


@dataclass(frozen=True, slots=True)
class _Replaced:
    versions: frozenset[str]
    at: float  # time.monotonic() of the pass that wrote


class WrittenVersions:
    """The resourceVersions this controller's last write to each key replaced (a few strings per key)."""

    def __init__(self, patience: float = PATIENCE) -> None:
        self.patience = patience
        self._replaced: dict[ObjectKey, _Replaced] = {}
        self._swept = time.monotonic()

    def stale(self, key: ObjectKey, resource_version: str | None) -> bool:
        """Whether the cached object of ``key`` (at ``resource_version``) predates a write of this
        controller; once it does not (the cache caught up, or somebody wrote since), the key is forgotten."""
        replaced = self._replaced.get(key)
        if replaced is None:
            return False
        if resource_version in replaced.versions and time.monotonic() - replaced.at < self.patience:
            return True
        del self._replaced[key]
        return False

    def record(self, key: ObjectKey, versions: list[str]) -> None:
        """A pass wrote ``key``, replacing the object at each of ``versions`` (nothing if none). Entries past
        their patience are swept once per patience: only the keys written lately are kept."""
        now = time.monotonic()
        if now - self._swept >= self.patience:
            self._swept = now
            for old in [k for k, replaced in self._replaced.items() if now - replaced.at >= self.patience]:
                del self._replaced[old]
        if versions:
            self._replaced[key] = _Replaced(frozenset(versions), now)

    def forget(self, key: ObjectKey) -> None:
        """``key`` is gone from the cache."""
        self._replaced.pop(key, None)

    def __len__(self) -> int:
        return len(self._replaced)
