"""What the informers' cache keeps of an object: the same JSON, less memory."""

from __future__ import annotations

import json
from typing import Any

from dbuser_operator.runtime.cache import LAST_APPLIED, compact, strip_unread_compact, thaw


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


def test_equal_small_containers_of_different_objects_are_one_and_unique_ones_are_not() -> None:
    from dbuser_operator.runtime.shared_containers import UNIQUE, Containers, compact_shared  # noqa: PLC0415

    def user(name: str, uid: str) -> dict[str, Any]:
        return json.loads(  # type: ignore[no-any-return]
            json.dumps(
                {
                    "metadata": {"name": name, "uid": uid, "labels": {"target": "bench"}},
                    "spec": {
                        "password": {"name": f"pw-{name}", "key": "password"},
                        "privileges": [{"database": "bench", "privileges": ["SELECT"], "grantOption": False}],
                        "serverRef": {"kind": "MySQLServer", "name": "s1"},
                    },
                    "status": {"conditions": [{"type": "Ready", "message": f"account {name} " + "x" * 80}]},
                }
            )
        )

    containers = Containers(size=16)
    first, _ = compact_shared(user("a", "a" * 36), containers)
    second, _ = compact_shared(user("b", "b" * 36), containers)
    assert first == user("a", "a" * 36)  # the same value
    assert second["metadata"]["labels"] is first["metadata"]["labels"]
    assert second["spec"]["privileges"] is first["spec"]["privileges"]  # nested: the grant and its list
    assert second["spec"]["serverRef"] is first["spec"]["serverRef"]
    assert second["spec"]["password"] is not first["spec"]["password"]  # equal only to itself
    assert second["spec"]["password"] == {"name": "pw-b", "key": "password"}
    assert second["metadata"] is not first["metadata"]  # its own name and UID
    assert second["status"]["conditions"] is not first["status"]["conditions"]  # a long message

    # false is not 0, a list is not a dict, and what is remembered stays bounded.
    zero, _ = compact_shared({"grantOption": 0}, containers)
    assert zero == {"grantOption": 0}
    assert zero["grantOption"] is not False
    assert compact_shared([], containers)[0] == []
    assert compact_shared({}, containers)[0] == {}
    for n in range(100):
        compact_shared({"name": f"pw-{n}"}, containers)
    assert len(containers) == 16
    assert compact_shared({"x": "y" * 80}, containers)[1] is UNIQUE


def test_a_thawed_object_is_equal_and_shares_no_container_with_the_cached_one() -> None:
    labels = {"app": "shop"}
    first = compact({"metadata": {"name": "a", "labels": labels}, "spec": {"hosts": ["%"]}})
    second = compact({"metadata": {"name": "b", "labels": dict(labels)}, "spec": {"hosts": ["%"]}})
    assert first["metadata"]["labels"] is second["metadata"]["labels"]  # shared by the cache

    thawed = thaw(first)
    assert thawed == first
    thawed["metadata"]["labels"]["app"] = "changed"
    thawed["spec"]["hosts"].append("10.0.0.%")
    assert first == {"metadata": {"name": "a", "labels": {"app": "shop"}}, "spec": {"hosts": ["%"]}}
    assert second["metadata"]["labels"] == {"app": "shop"}
    assert second["spec"]["hosts"] == ["%"]


def test_a_new_version_takes_what_did_not_change_from_the_cached_one() -> None:
    """A status write leaves the spec as it was: the new cached version holds the old one's spec (not
    compacted again) and equals what compacting it all would give; what changed, even only in its JSON
    type (``1`` to ``true``), is the new value."""
    from dbuser_operator.runtime.cache import strip_unread_compact_over  # noqa: PLC0415

    def version(resource_version: str, status: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
        obj = parsed("a")
        obj["metadata"]["resourceVersion"] = resource_version
        return {**obj, "spec": spec, "status": status}

    spec = {"user": "app", "hosts": ["%"], "limits": {"maxConnections": 1}}
    cached = strip_unread_compact(version("1", {"phase": "Pending"}, json.loads(json.dumps(spec))))
    new = version("2", {"phase": "Ready"}, json.loads(json.dumps(spec)))
    expected = strip_unread_compact(json.loads(json.dumps(new)))

    result = strip_unread_compact_over(new, cached)

    assert result == expected
    assert list(result) == list(expected)
    assert result["spec"] is cached["spec"]
    assert result["status"] is not cached["status"]
    assert result["metadata"]["resourceVersion"] == "2"

    retyped = {**spec, "limits": {"maxConnections": True}}  # equal in Python (True == 1), not as JSON
    changed = strip_unread_compact_over(version("3", {"phase": "Ready"}, retyped), result)
    assert changed["spec"] is not result["spec"]
    assert changed["spec"]["limits"]["maxConnections"] is True
