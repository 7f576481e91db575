"""Writes the API server refuses (401, 403): RBAC revoked or narrowed after the caches synced.

The caches keep serving reads and the controllers keep running, so nothing else would notice while every
status, finalizer or Event write fails. The client records each refused write by method and resource (no
namespace, no name: ``PATCH databaseusers/status``) and forgets it when a write of the same method and
resource succeeds; :meth:`WriteDenials.check` is a ``/readyz`` check that names them. A 403 for a write in
a namespace that is being deleted is no permission problem and is not recorded.
"""

from __future__ import annotations

import threading
from typing import Final

from dbuser_operator.runtime.errors import ApiError

_TERMINATING: Final = "because it is being terminated"
_KNOWN_PREFIXES: Final = ("api", "apis")


def resource_of(path: str) -> str:
    """``databaseusers/status`` for ``/apis/g/v/namespaces/ns/databaseusers/x/status``; ``events`` for
    ``/api/v1/namespaces/ns/events``; ``namespaces`` for ``/api/v1/namespaces/ns``."""
    parts = [part for part in path.split("?", 1)[0].split("/") if part]
    if parts and parts[0] in _KNOWN_PREFIXES:
        parts = parts[2:] if parts[0] == "api" else parts[3:]
    if len(parts) >= 3 and parts[0] == "namespaces":  # a namespaced resource: drop the namespace
        parts = parts[2:]
    resource = parts[0] if parts else path
    subresource = parts[2] if len(parts) >= 3 else ""
    return f"{resource}/{subresource}" if subresource else resource


class WriteDenials:
    """The kinds of write the API server refuses now."""

    def __init__(self) -> None:
        self._denied: dict[str, str] = {}
        self._lock = threading.Lock()

    def refused(self, method: str, path: str, error: ApiError) -> None:
        """A write came back 401 or 403."""
        if _TERMINATING in error.message:
            return
        with self._lock:
            self._denied[f"{method} {resource_of(path)}"] = str(error)[:300]

    def succeeded(self, method: str, path: str) -> None:
        """A write went through: writes like it are allowed again."""
        if self._denied:
            with self._lock:
                self._denied.pop(f"{method} {resource_of(path)}", None)

    def check(self) -> str | None:
        """``/readyz``: None while no kind of write is refused, else what is and why."""
        with self._lock:
            if not self._denied:
                return None
            return "the API server refuses writes: " + "; ".join(
                f"{write} ({reason})" for write, reason in sorted(self._denied.items())
            )
