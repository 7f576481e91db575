"""What the informers' cache keeps of an object: the same JSON, less memory; reads are copies."""

from __future__ import annotations

import json

from dbuser_operator.runtime.cache import LAST_APPLIED, Store, encode, strip_unread
from dbuser_operator.runtime.resources import ObjectKey


def parsed(name: str) -> dict:  # type: ignore[type-arg]
    text = json.dumps(
        {
            "metadata": {
                "name": name,
                "uid": f"{name}-0000-0000-0000-000000000000",
                "managedFields": [{"manager": "kubectl"}],
                "annotations": {LAST_APPLIED: "{}", "keep": "me"},
            },
            "status": {"conditions": [{"type": "Ready", "status": "True", "message": "x" * 100}]},
        }
    )
    return json.loads(text)  # type: ignore[no-any-return]


def test_the_cache_keeps_the_object_without_what_nobody_reads_and_every_read_is_a_copy() -> None:
    store = Store()
    store.add_index("name", lambda o: [o["metadata"]["name"]])
    store.put(strip_unread(parsed("a")))
    key = ObjectKey("", "a")
    expected = {
        "metadata": {"name": "a", "uid": "a-0000-0000-0000-000000000000", "annotations": {"keep": "me"}},
        "status": {"conditions": [{"type": "Ready", "status": "True", "message": "x" * 100}]},
    }
    first = store.get(key)
    assert first == expected
    assert first is not store.get(key)
    first["status"]["conditions"].clear()  # a caller's change stays its own
    assert store.get(key) == expected
    assert list(store) == [expected]
    assert store.by_index("name", "a") == [expected]
    assert store.keys_by_index("name", "a") == [key]


def test_the_cached_form_is_compact_json_unicode_included() -> None:
    obj = {"metadata": {"name": "ä", "namespace": "ns"}, "data": {"k": "密码"}}
    assert encode(obj) == '{"metadata":{"name":"ä","namespace":"ns"},"data":{"k":"密码"}}'.encode()
    assert json.loads(encode(obj)) == obj


def test_an_index_value_follows_its_objects_from_one_key_to_many_and_back() -> None:
    def obj(name: str, ref: str) -> dict:  # type: ignore[type-arg]
        return {"metadata": {"namespace": "ns", "name": name}, "ref": ref}

    store = Store()
    store.add_index("ref", lambda o: [o["ref"]] if o["ref"] else [])
    store.put(obj("a", "s"))
    assert [o["metadata"]["name"] for o in store.by_index("ref", "s")] == ["a"]
    store.put(obj("b", "s"))
    store.put(obj("a", "s"))  # replaced: still listed once
    assert sorted(o["metadata"]["name"] for o in store.by_index("ref", "s")) == ["a", "b"]
    store.put(obj("b", "t"))
    assert [o["metadata"]["name"] for o in store.by_index("ref", "s")] == ["a"]
    assert store.indexed("ref", "t")
    store.remove(ObjectKey("ns", "a"))
    assert not store.indexed("ref", "s")
    assert store.by_index("ref", "s") == []
