"""A connection Secret's labels and annotations: the spec's set, the spec's former ones removed, others'
never touched."""

from __future__ import annotations

import json

from dbuser_operator.api.v1alpha1 import CREDENTIAL_VERSION_ANNOTATION, MANAGED_METADATA_ANNOTATION
from dbuser_operator.controllers.databaseuser.owned_secrets import MANAGED_BY, MANAGED_BY_LABEL
from dbuser_operator.controllers.databaseuser.secret_metadata import metadata_patch, record, recorded

OURS = {MANAGED_BY_LABEL: MANAGED_BY}


def test_the_record_lists_the_specs_keys_never_the_operators_own() -> None:
    keys = record({"team": "a", MANAGED_BY_LABEL: "x"}, {"owner": "b", CREDENTIAL_VERSION_ANNOTATION: "9"})
    assert json.loads(keys or "") == {"annotations": ["owner"], "labels": ["team"]}
    assert record({}, {}) is None
    assert record(OURS, {}) is None


def test_a_key_removed_from_the_spec_is_removed_and_others_keys_are_left() -> None:
    metadata = {
        "labels": {"team": "a", "tier": "web", "theirs": "x", **OURS},
        "annotations": {
            "owner": "b",
            "theirs": "y",
            CREDENTIAL_VERSION_ANNOTATION: "2",
            MANAGED_METADATA_ANNOTATION: record({"team": "a", "tier": "web"}, {"owner": "b"}),
        },
    }
    # The spec keeps team only.
    kept = record({"team": "a"}, {}) or ""
    wanted = {CREDENTIAL_VERSION_ANNOTATION: "2", MANAGED_METADATA_ANNOTATION: kept}
    patch = metadata_patch(metadata, {"team": "a", **OURS}, wanted)
    assert patch == {
        "labels": {"tier": None},
        "annotations": {"owner": None, MANAGED_METADATA_ANNOTATION: '{"annotations":[],"labels":["team"]}'},
    }


def test_the_record_goes_with_its_last_key_and_nothing_is_written_when_nothing_differs() -> None:
    metadata = {
        "labels": {"team": "a", **OURS},
        "annotations": {
            MANAGED_METADATA_ANNOTATION: record({"team": "a"}, {}),
            CREDENTIAL_VERSION_ANNOTATION: "1",
        },
    }
    wanted = {CREDENTIAL_VERSION_ANNOTATION: "1"}
    assert metadata_patch(metadata, OURS, wanted) == {
        "labels": {"team": None},
        "annotations": {MANAGED_METADATA_ANNOTATION: None},
    }
    same = {**wanted, MANAGED_METADATA_ANNOTATION: record({"team": "a"}, {}) or ""}
    assert metadata_patch(metadata, {"team": "a", **OURS}, same) == {}


def test_a_secret_without_a_record_or_with_a_forged_one_loses_none_of_the_operators_keys() -> None:
    before = {"labels": {"team": "a", **OURS}, "annotations": {CREDENTIAL_VERSION_ANNOTATION: "1"}}
    assert metadata_patch(before, OURS, {CREDENTIAL_VERSION_ANNOTATION: "1"}) == {}  # written before records
    forged = json.dumps({"labels": [MANAGED_BY_LABEL], "annotations": [CREDENTIAL_VERSION_ANNOTATION, 7]})
    nothing: dict[str, set[str]] = {"labels": set(), "annotations": set()}
    assert recorded({"annotations": {MANAGED_METADATA_ANNOTATION: forged}}) == nothing
    assert recorded({"annotations": {MANAGED_METADATA_ANNOTATION: "not json"}}) == nothing
