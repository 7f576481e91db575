"""Give the C allocator's free memory back to the system once a first pass is over.

Objects of more than 512 bytes (JSON texts of responses and watch events, large dicts and lists, TLS
buffers) come from the C library's ``malloc``, not Python's own allocator. A first pass over thousands of
objects frees most of what it allocated, but glibc keeps freed memory for reuse: only the top of its heap
is returned, and a long-lived block above a free stretch holds it all; each thread (the metrics server's,
the resolver's) has its own arena that keeps what its work freed. ``malloc_trim(0)`` returns the free pages
of every arena. :func:`trim` calls it (glibc only; elsewhere it does nothing) and says what the resident
memory was before and after. It is a process-wide call taking milliseconds, made after the work that frees
most: once per controller when its first pass ends (:mod:`~dbuser_operator.runtime.first_pass`), and after
each periodic drift check (every account of every server read).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from collections.abc import Callable
from functools import cache
from pathlib import Path

STATM = Path("/proc/self/statm")


@cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None where the C library has none (musl, macOS)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
        function: Callable[[int], int] = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    return function


def resident_bytes() -> int | None:
    """The process's resident memory (Linux), or None."""
    try:
        return int(STATM.read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def trim() -> tuple[int | None, int | None]:
    """Return the C allocator's free pages to the system; the resident bytes before and after (None
    where they cannot be read, both None where there is no ``malloc_trim``)."""
    function = _malloc_trim()
    if function is None:
        return None, None
    before = resident_bytes()
    function(0)
    return before, resident_bytes()
