"""The labels and annotations of a connection Secret: those the spec asks for, and the removal of those it
asked for before and no longer does, never of those others set.

What the spec set is recorded on the Secret itself, in the annotation
``mysql.dbuser-operator.dev/managed-metadata`` (the keys only, as JSON): a key in that record and no longer
in the spec is removed. The operator's own keys (the managed-by label, the credential-version annotation,
the record itself) are never in the record, so never removed. A Secret written before the record existed
has none: keys removed from the spec before then stay (the record starts with the spec's current keys).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from dbuser_operator.api.v1alpha1 import CREDENTIAL_VERSION_ANNOTATION, MANAGED_METADATA_ANNOTATION
from dbuser_operator.controllers.databaseuser.owned_secrets import MANAGED_BY_LABEL

FIELDS: Final = ("labels", "annotations")
OWN_KEYS: Final = frozenset({MANAGED_BY_LABEL, CREDENTIAL_VERSION_ANNOTATION, MANAGED_METADATA_ANNOTATION})


def record(labels: Mapping[str, str], annotations: Mapping[str, str]) -> str | None:
    """The record of the spec's keys (the operator's own left out); None when there are none."""
    keys = {
        field: sorted(set(wanted) - OWN_KEYS)
        for field, wanted in (("annotations", annotations), ("labels", labels))
    }
    return json.dumps(keys, separators=(",", ":")) if any(keys.values()) else None


def recorded(metadata: Mapping[str, Any]) -> dict[str, set[str]]:
    """The keys the Secret's record lists per field (none for a missing or malformed record)."""
    text = (metadata.get("annotations") or {}).get(MANAGED_METADATA_ANNOTATION)
    try:
        parsed = json.loads(text) if isinstance(text, str) else {}
    except ValueError:
        parsed = {}
    if not isinstance(parsed, dict):
        return {field: set() for field in FIELDS}
    return {
        field: {key for key in parsed.get(field) or [] if isinstance(key, str) and key not in OWN_KEYS}
        for field in FIELDS
    }


def metadata_patch(
    metadata: Mapping[str, Any], labels: Mapping[str, str], annotations: Mapping[str, str]
) -> dict[str, Any]:
    """The ``metadata`` part of a merge patch that sets ``labels`` and ``annotations`` (``annotations``
    with the record already in it, when there is one) and removes the recorded keys no longer wanted;
    empty when nothing differs."""
    before = recorded(metadata)
    patch: dict[str, Any] = {}
    for field, wanted in (("labels", labels), ("annotations", annotations)):
        present = metadata.get(field) or {}
        stale = before[field] - set(wanted)
        if field == "annotations" and MANAGED_METADATA_ANNOTATION not in wanted:
            stale.add(MANAGED_METADATA_ANNOTATION)  # the record goes with the last key it lists
        changes: dict[str, str | None] = {key: None for key in sorted(stale) if key in present}
        changes |= {key: value for key, value in wanted.items() if present.get(key) != value}
        if changes:
            patch[field] = changes
    return patch
