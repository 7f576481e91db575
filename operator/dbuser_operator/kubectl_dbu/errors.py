"""The plugin's failures: a message for the user and a non-zero exit, no traceback. The API's answers are
typed here, not by the runtime's errors (those are kubernetes-asyncio's exceptions: importing them imports
the whole client)."""

from __future__ import annotations

import json


class CommandError(Exception):
    """A command cannot do what was asked; ``str()`` says why."""


class ApiFailure(Exception):
    """An error answer of the API server (``status``), or none (``Unavailable``, status None)."""

    def __init__(self, status: int | None, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class NotFound(ApiFailure):
    """404."""


class Forbidden(ApiFailure):
    """401, 403: RBAC or authentication."""


class Unavailable(ApiFailure):
    """No answer (timeout, connection refused, TLS), or 429/5xx."""


def api_failure(status: int, reason: str, body: bytes) -> ApiFailure:
    """The typed failure for an error status, with the ``message`` of the server's Status if it sent one."""
    try:
        answer = json.loads(body or b"{}")
    except ValueError:
        answer = {}
    message = answer.get("message") if isinstance(answer, dict) else None
    text = str(message) if message else f"({status}) {reason}"
    if status == 404:
        return NotFound(status, text)
    if status in {401, 403}:
        return Forbidden(status, text)
    if status == 429 or status >= 500:
        return Unavailable(status, text)
    return ApiFailure(status, text)
