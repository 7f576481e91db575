"""``-o json|yaml|wide``: how a command's records are printed. JSON and YAML give every field of a record
(``items``, as ``kubectl get -o json`` lists); wide is the table with its extra columns."""

from __future__ import annotations

import json
from typing import Any

FORMATS = ("json", "yaml", "wide")


def document(items: list[dict[str, Any]], output: str) -> str:
    """The records as one JSON or YAML document."""
    return dump({"items": items}, output)


def dump(data: dict[str, Any], output: str) -> str:
    """``data`` as indented JSON, or as block YAML (yaml is imported only for it)."""
    if output == "json":
        return json.dumps(data, indent=2, ensure_ascii=True)
    import yaml  # noqa: PLC0415 - only -o yaml needs it

    return str(yaml.safe_dump(data, sort_keys=False, allow_unicode=False)).rstrip("\n")
