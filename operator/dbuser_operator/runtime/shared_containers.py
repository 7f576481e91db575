"""Equal small containers of different cached objects made one object.

Thousands of cached objects hold equal small dicts and lists: the same labels, finalizers and grants, the
same server reference, the same Progressing condition written in the same second. Each is a few hundred
bytes as its own dict or list. :func:`compact_shared` rebuilds a parsed JSON value bottom-up (keys and
short strings interned) and, for each container of at most :data:`MAX_ITEMS` items whose values are all
short strings, numbers, booleans, null or such containers themselves, returns the equal container it has
seen before instead, if :class:`Containers` still knows it. What it remembers is bounded (least recently
seen goes first): containers seen often stay, one-offs (a user's own password reference) pass through.
Every dict kept shares its key table with the others of its keys (:mod:`.shared_keys`).

The key of a container is its content, frozen: atoms other than strings carry their type (``false`` is
not ``0``), and a dict is told from a list. A container with a long string (a long message, Secret data)
is never shared: those are unique to their object. Strings up to :data:`SHARED_LENGTH` are interned: a
UID is repeated in the references to its object, a finalizer or an API version in every object.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Final

from dbuser_operator.runtime.shared_keys import SHAPES_SEEN

MAX_ITEMS: Final = 8
SHARED_LENGTH: Final = 64  # strings up to this length are interned (names, UIDs, reasons, finalizers)
REMEMBERED: Final = 1024  # containers kept for sharing (a 10 000-user fleet repeats about 400)


class _Unique:
    """The frozen key of a value that is never shared."""


UNIQUE: Final = _Unique()


class Containers:
    """The containers seen lately, by content: the first of equal ones is handed out for the others."""

    def __init__(self, size: int = REMEMBERED) -> None:
        self.size = size
        self._known: OrderedDict[Hashable, Any] = OrderedDict()

    def __len__(self) -> int:
        return len(self._known)

    def share(self, container: Any, frozen: Hashable, keep: Callable[[Any], Any] = lambda kept: kept) -> Any:
        """The container known under ``frozen``, else ``keep(container)`` (now known)."""
        known = self._known.get(frozen)
        if known is not None:
            self._known.move_to_end(frozen)
            return known
        container = self._known[frozen] = keep(container)
        if len(self._known) > self.size:
            self._known.popitem(last=False)
        return container


SHARED_CONTAINERS: Final = Containers()


def compact_shared(value: Any, containers: Containers) -> tuple[Any, Hashable]:
    """``value`` with keys and short strings interned and small containers shared; and its frozen key
    (:data:`UNIQUE` when it is not shareable)."""
    if isinstance(value, dict):
        return _dict(value, containers)
    if isinstance(value, list):
        return _list(value, containers)
    if isinstance(value, str):
        if len(value) > SHARED_LENGTH:
            return value, UNIQUE
        interned = sys.intern(value)
        return interned, interned
    return value, (type(value), value)


def _dict(value: dict[str, Any], containers: Containers) -> tuple[Any, Hashable]:
    items: dict[str, Any] = {}
    parts: list[tuple[str, Hashable]] = []
    shareable = len(value) <= MAX_ITEMS
    for name, item in value.items():
        key = sys.intern(name)
        items[key], frozen = compact_shared(item, containers)
        shareable = shareable and frozen is not UNIQUE
        if shareable:
            parts.append((key, frozen))
    if not shareable:
        return SHAPES_SEEN.share_keys(items), UNIQUE
    whole = (dict, tuple(parts))
    return containers.share(items, whole, SHAPES_SEEN.share_keys), whole


def _list(value: list[Any], containers: Containers) -> tuple[Any, Hashable]:
    elements: list[Any] = []
    parts: list[Hashable] = []
    shareable = len(value) <= MAX_ITEMS
    for item in value:
        element, frozen = compact_shared(item, containers)
        elements.append(element)
        shareable = shareable and frozen is not UNIQUE
        if shareable:
            parts.append(frozen)
    elements = elements[:]  # a slice is allocated to size: an appended list keeps room to grow
    if not shareable:
        return elements, UNIQUE
    whole = (list, tuple(parts))
    return containers.share(elements, whole), whole
