"""Typed API errors: what ``KubeClient`` raises instead of a bare status code to compare.

``except NotFound`` instead of ``if error.status == 404``. Every class is an ``ApiError``, and ``ApiError``
is kubernetes-asyncio's ``ApiException`` (``.status``, ``.reason``, ``.body`` as before), so code that still
catches ``ApiException`` keeps working.

| class | when |
|---|---|
| ``NotFound`` | 404 |
| ``Conflict`` | 409 (a stale ``resourceVersion``, or the object exists) |
| ``Gone`` | 410 (a resourceVersion or continue token too old: list again) |
| ``Invalid`` | 400, 422 (the request or the object it would make is refused) |
| ``Forbidden`` | 401, 403 (RBAC, authentication) |
| ``Unavailable`` | 429, 5xx, a timeout, a connection error (``status`` None): worth retrying |
| ``ApiError`` | any other error status |

``str()`` of an error is its status, reason and the server's message: never headers or the whole body.
"""

from __future__ import annotations

import json
from typing import Any

from kubernetes_asyncio.client.exceptions import ApiException

__all__ = [
    "ApiError",
    "Conflict",
    "Forbidden",
    "Gone",
    "Invalid",
    "NotFound",
    "Unavailable",
    "api_error",
    "describe",
]


class ApiError(ApiException):
    """An error answer of the API server, or none at all (``Unavailable`` with ``status`` None)."""

    def __init__(
        self,
        status: int | None = None,
        reason: str | None = None,
        body: bytes | None = None,
        headers: Any = None,
    ) -> None:
        super().__init__(status=status, reason=reason)
        self.body = body
        self.headers = headers

    @property
    def message(self) -> str:
        """The ``message`` of the server's Status, if the body is one (else empty)."""
        try:
            status: Any = json.loads(self.body or b"")
        except ValueError:
            return ""
        return str(status.get("message") or "") if isinstance(status, dict) else ""

    def __str__(self) -> str:
        """``404 Not Found: configmaps "x" not found`` (no headers, no body)."""
        head = f"{self.status} {self.reason}" if self.status is not None else str(self.reason)
        message = self.message
        return f"{head}: {message}" if message else head


class NotFound(ApiError):
    """404: the object (or the resource type) does not exist."""


class Conflict(ApiError):
    """409: the object changed since it was read, or already exists."""


class Gone(ApiError):
    """410: the resourceVersion or continue token is too old; list again."""


class Invalid(ApiError):
    """400 or 422: the request, or the object it would produce, is refused."""


class Forbidden(ApiError):
    """401 or 403: not authenticated, or not allowed by RBAC."""


class Unavailable(ApiError):
    """No usable answer now (429, 5xx, a timeout, a connection error): try again later."""


_BY_STATUS: dict[int, type[ApiError]] = {
    400: Invalid,
    401: Forbidden,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: Unavailable,
}


def api_error(
    status: int | None,
    reason: str | None,
    body: bytes | None = None,
    headers: Any = None,
) -> ApiError:
    """The error class for ``status`` (``Unavailable`` for None, 429 and 5xx), built from the answer."""
    if status is None or status >= 500:
        cls: type[ApiError] = Unavailable
    else:
        cls = _BY_STATUS.get(status, ApiError)
    return cls(status, reason, body, headers)


def describe(error: BaseException, *, detail: bool = True) -> str:
    """A short description for logs and probes: ``NotFound: 404 Not Found: secrets "x" not found``.

    API errors say their class, status, reason and the server's message; other exceptions their type and,
    with ``detail``, their text (leave it out where the text is not known to be free of secrets). A group
    of one exception (a task group's) is described by that exception.
    """
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    if isinstance(error, ApiError):
        return f"{type(error).__name__}: {error}"
    if isinstance(error, ApiException):
        return f"ApiException: {error.status} {error.reason}"
    text = str(error) if detail else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
