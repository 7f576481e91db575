"""Cached dicts of one shape share one key table, as the attribute dicts of a class's instances do.

A dict built by the JSON parser holds its own table of keys and hashes: about 190 bytes for five keys,
470 for twelve, in each of thousands of cached objects whose ``metadata``, ``spec`` or ``status`` have the
same keys in the same order. CPython gives the instances of a class one shared key table, each instance
dict keeping only its values (a *split* dict, PEP 412); the dict outlives its instance and stays an
ordinary ``dict`` in every respect (equality, ``json.dumps``, copies, iteration order), only smaller:
about half the bytes (measured on CPython 3.11 to 3.13: 103 against 188 bytes for two keys, 190 against
472 for twelve). :func:`share_keys` builds such a dict through a class made once per key order, for at
most :data:`SHAPES` orders of at most :data:`MAX_KEYS` keys (the most CPython shares); any other dict is
returned as it is. Changing a split dict is allowed (a new key may turn it back into an ordinary one), but
the informer caches never change their objects.
"""

from __future__ import annotations

from typing import Any, Final

SHAPES: Final = 1024  # key orders given a class (a class is about 1 KB): labels' keys are the users'
MAX_KEYS: Final = 30  # CPython's bound on a class's shared keys


class Shapes:
    """A class per key order seen, bounded: its instances' dicts share one key table."""

    def __init__(self, limit: int = SHAPES) -> None:
        self.limit = limit
        self._classes: dict[tuple[str, ...], type] = {}

    def __len__(self) -> int:
        return len(self._classes)

    def share_keys(self, items: dict[str, Any]) -> dict[str, Any]:
        """A dict equal to ``items`` whose key table is shared with the others of its key order, or
        ``items`` itself when its order has no class and no more may be made."""
        keys = tuple(items)
        shape = self._classes.get(keys)
        if shape is None:
            if len(self._classes) >= self.limit or not 0 < len(keys) <= MAX_KEYS:
                return items
            shape = self._classes[keys] = type("CachedShape", (), {"__module__": __name__})
        values: dict[str, Any] = shape().__dict__
        for key, value in items.items():
            values[key] = value
        return values


SHAPES_SEEN: Final = Shapes()
