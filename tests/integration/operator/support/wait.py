"""The one wait of the tests: ask again until the answer is yes, or fail saying what the last answer was."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, overload

T = TypeVar("T")


@overload
async def eventually(
    check: Callable[[], Awaitable[T]], *, limit: float = ..., interval: float = ..., message: str = ...
) -> T: ...


@overload
async def eventually(
    check: Callable[[], T], *, limit: float = ..., interval: float = ..., message: str = ...
) -> T: ...


async def eventually(
    check: Callable[[], Any],
    *,
    limit: float = 30.0,
    interval: float = 0.05,
    message: str = "the condition was never met",
) -> Any:
    """Call ``check`` (sync or async) until it returns a truthy value, and return that value.

    ``check`` says no by returning a falsy value or by raising ``AssertionError`` (an ``assert`` inside it,
    whose text says what it saw); any other exception ends the wait at once. ``check`` runs at least once,
    and once more after ``limit`` seconds, so a slow call never cuts the last chance short. On timeout,
    raises ``AssertionError`` with ``message`` and the last answer."""
    deadline = time.monotonic() + limit
    while True:
        expired = time.monotonic() >= deadline
        try:
            result = check()
            value = await result if inspect.isawaitable(result) else result
        except AssertionError as error:
            last = f"{type(error).__name__}: {error}" if str(error) else "AssertionError"
        else:
            if value:
                return value
            last = f"returned {value!r}"
        if expired:
            raise AssertionError(f"{message} (within {limit:g} s; last: {last})")
        await asyncio.sleep(interval)


async def becomes(
    read: Callable[[], Any],
    wanted: object,
    *,
    limit: float = 30.0,
    interval: float = 0.05,
    message: str = "the value never became the one wanted",
) -> None:
    """Wait (:func:`eventually`) until ``read()`` (sync or async) returns ``wanted``; on timeout the failure
    names the last value read."""

    async def check() -> bool:
        result = read()
        value = await result if inspect.isawaitable(result) else result
        assert value == wanted, f"{value!r}, not {wanted!r}"
        return True

    await eventually(check, limit=limit, interval=interval, message=message)
