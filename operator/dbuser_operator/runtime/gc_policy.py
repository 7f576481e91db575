"""CPython's cyclic garbage collector while the caches fill, and after.

Listing fills the caches with millions of containers in seconds. The collector runs a young collection every
700 new containers and a full one each time the old generation has grown by a quarter, each scanning
everything it tracks: at 100 000 ``DatabaseUser``\\ s that was most of the listing's CPU (12 of 16 s in a
loop parsing 200 pages of 500 as the informers do; bench/README.md, "The restart at 100 000"). Cached
objects are JSON, which holds no reference cycles: reference counting frees them, the collector finds
nothing among them. So the collector waits until the caches have synced, and what is alive then is frozen
(``gc.freeze``): later collections never scan the caches' first contents again, only what changes after.
Cyclic garbage made while the caches filled (none from JSON; a full collection to look for it would take
seconds at that size) stays until the manager stops: then :func:`unfrozen` gives every frozen object back
to the collector, so a process that runs managers one after another (the test suite) does not keep each
stopped one's objects.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_then_frozen() -> Iterator[None]:
    """No cyclic collection inside; on leaving, every object alive is frozen and collection resumes."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def unfrozen() -> None:
    """Give every frozen object back to the collector (a stopped manager's caches and tasks can go)."""
    gc.unfreeze()
