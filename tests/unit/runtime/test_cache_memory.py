"""What a cached object costs, counted by tracemalloc (bytes the interpreter allocates: the same on any
machine for one Python version), and the dicts of one shape that share their keys."""

from __future__ import annotations

import copy
import json
import tracemalloc
from typing import Any

from dbuser_operator.runtime.cache import Store, strip_unread_compact
from dbuser_operator.runtime.shared_keys import MAX_KEYS, Shapes

# A settled fleet user as the API server returns it (bench/fleet.py), its unique fields numbered.
USER = """{"apiVersion": "mysql.dbuser-operator.dev/v1alpha1", "kind": "DatabaseUser", "metadata":
{"creationTimestamp": "2026-11-29T07:40:%(s)02dZ", "finalizers": ["mysql.dbuser-operator.dev/account-bench"],
"generation": 1, "labels": {"dbuser-operator.dev/target": "bench"}, "name": "u%(i)06d", "namespace":
"fleet-f82fe0-%(ns)d", "resourceVersion": "%(rv)d", "uid": "2528685c-ee28-4012-811b-%(i)012d",
"managedFields": [{"manager": "bench", "operation": "Update"}]}, "spec": {"deletionPolicy": "Delete",
"host": "%%", "managementPolicy": "Manage", "password": {"key": "password", "name": "pw-u%(i)06d"},
"privileges": [{"database": "bench", "grantOption": false, "privileges": ["SELECT"], "table": "*"}],
"roles": ["r-s%(ns)d"], "serverRef": {"kind": "MySQLServer", "name": "s%(ns)d"}, "user": "f82fe0_%(i)06d"},
"status": {"appliedSecret": {"name": "pw-u%(i)06d", "resourceVersion": "%(i)d", "uid":
"6806bfd6-bb80-4803-916b-%(i)012d"}, "conditions": [{"lastTransitionTime": "2026-11-29T07:43:%(s)02dZ",
"message": "no work pending", "observedGeneration": 1, "reason": "Settled", "status": "False", "type":
"Progressing"}, {"lastTransitionTime": "2026-11-29T07:43:%(s)02dZ", "message": "account 'f82fe0_%(i)06d'@'%%'
matches the spec", "observedGeneration": 1, "reason": "AccountReady", "status": "True", "type": "Ready"}],
"host": "%%", "hosts": ["%%"], "observedGeneration": 1, "privileges": ["SELECT ON `bench`.*"], "user":
"f82fe0_%(i)06d"}}""".replace("\n", " ")

BYTES_PER_USER = 2500  # 2 150 measured on CPython 3.11 (2 890 before the dicts shared their keys)


def user(i: int) -> dict[str, Any]:
    return json.loads(USER % {"i": i, "s": i // 50 % 60, "ns": i % 10, "rv": 20_000 + i})  # type: ignore[no-any-return]


def cached_bytes(store: Store, first: int, count: int) -> int:
    """What ``count`` more users cost in ``store``: tables past 64 KiB (the store's own, the interned
    strings') are left out, they grow by doubling and belong to no object."""
    texts = [json.dumps(user(i)) for i in range(first, first + count)]
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for text in texts:
            store.put(strip_unread_compact(json.loads(text)))
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    grown = after.compare_to(before, "traceback")
    return sum(stat.size_diff for stat in grown if stat.size < 64 * 1024 or stat.count > 1)


def test_a_cached_user_costs_under_its_recorded_bytes() -> None:
    store = Store()
    cached_bytes(store, 0, 5000)  # the shared containers' memory filled: what follows is per object
    per_user = cached_bytes(store, 5000, 1000) / 1000
    assert 500 < per_user < BYTES_PER_USER, per_user


def test_dicts_of_one_shape_share_their_keys_and_are_dicts_in_every_other_respect() -> None:
    shapes = Shapes(limit=2)
    items = {"name": "a", "uid": "1", "labels": {"x": "y"}}
    shared = shapes.share_keys(dict(items))
    other = shapes.share_keys({"name": "b", "uid": "2", "labels": {}})
    assert type(shared) is dict
    assert shared == items
    assert list(shared) == ["name", "uid", "labels"]
    assert json.loads(json.dumps(shared)) == items
    assert copy.deepcopy(shared) == items
    assert len(shapes) == 1
    assert other == {"name": "b", "uid": "2", "labels": {}}
    changed = shapes.share_keys(dict(items))
    changed["new"] = 1
    del changed["uid"]
    assert changed == {"name": "a", "labels": {"x": "y"}, "new": 1}
    assert shared == items  # another dict of the shape is untouched


def test_shapes_are_bounded_and_odd_dicts_pass_through() -> None:
    shapes = Shapes(limit=1)
    shapes.share_keys({"a": 1})
    beyond, wide = {"b": 1}, {f"k{n}": n for n in range(MAX_KEYS + 1)}
    empty: dict[str, int] = {}
    assert shapes.share_keys(beyond) is beyond
    assert len(shapes) == 1
    assert shapes.share_keys(empty) is empty
    assert shapes.share_keys(wide) is wide
    dunder = Shapes().share_keys({"__class__": 1, "__dict__": 2})
    assert dunder == {"__class__": 1, "__dict__": 2}
