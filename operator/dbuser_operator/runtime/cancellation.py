"""Cancellation that is not lost.

On Python 3.11, ``asyncio.wait_for`` returns its awaitable's result when a cancellation arrives just as
that awaitable completes, and the cancellation is gone (CPython gh-86296, fixed in 3.12). aiomysql opens
connections under ``wait_for``, so a task stopped at that moment goes on. The request is still counted by
``Task.cancelling()``: a loop that runs until cancelled calls :func:`stop_if_cancelled` each turn, and
stops all the same.
"""

from __future__ import annotations

import asyncio


def stop_if_cancelled() -> None:
    """Raise ``CancelledError`` if the current task was asked to stop, even if that was swallowed."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError
