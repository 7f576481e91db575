"""What the informers' cache keeps of an object: the same JSON, less memory."""

from __future__ import annotations

import json

from dbuser_operator.runtime.cache import LAST_APPLIED, strip_unread_compact


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


def test_the_cached_copy_equals_the_object_without_what_nobody_reads_and_shares_strings() -> None:
    first, second = strip_unread_compact(parsed("a")), strip_unread_compact(parsed("b"))
    assert first == {
        "metadata": {"name": "a", "uid": "a-0000-0000-0000-000000000000", "annotations": {"keep": "me"}},
        "status": {"conditions": [{"type": "Ready", "status": "True", "message": "x" * 100}]},
    }
    key_of = {id(key) for key in first["metadata"]}
    assert {id(key) for key in second["metadata"]} == key_of  # one "name", one "uid", …
    condition, other = first["status"]["conditions"][0], second["status"]["conditions"][0]
    assert condition["status"] is other["status"]  # short values are shared
    assert condition["message"] is not other["message"]  # long ones are not worth a lookup


def test_an_index_value_follows_its_objects_from_one_key_to_many_and_back() -> None:
    from dbuser_operator.runtime.cache import Store  # noqa: PLC0415
    from dbuser_operator.runtime.resources import ObjectKey  # noqa: PLC0415

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
