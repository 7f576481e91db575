"""``kubectl dbu status --watch``: the status once, then a line for each change of a DatabaseUser (as
``kubectl get -w``), until Ctrl-C. A watch the server ends is opened again where it stopped; one whose
resourceVersion expired (410) lists again and prints every line anew."""

from __future__ import annotations

import json
from typing import Any

from dbuser_operator.kubectl_dbu import status
from dbuser_operator.kubectl_dbu.errors import ApiFailure
from dbuser_operator.kubectl_dbu.kube import Api
from dbuser_operator.kubectl_dbu.names import DATABASE_USERS
from dbuser_operator.kubectl_dbu.output import dump
from dbuser_operator.kubectl_dbu.table import printable, table

GONE = 410


def show(text: str) -> None:
    """Print at once (the reader is a person, or a pipe that waits for each line)."""
    print(printable(text, keep="\n"), flush=True)


def columns(wide: bool) -> tuple[str, ...]:
    """The headers of the watch's one table: every namespace's lines in it."""
    return ("NAMESPACE", *status.headers(wide=wide))


def line(record: dict[str, str], output: str | None) -> str:
    """One record as a watch prints it: a table row under the first table's headers, or one JSON line,
    or one YAML document."""
    if output == "json":
        return json.dumps(record, ensure_ascii=True)
    if output == "yaml":
        return "---\n" + dump(record, "yaml")
    wide = output == "wide"
    return table(columns(wide), [[record["namespace"], *status.cells(record, wide=wide)]]).splitlines()[1]


def first(records: list[dict[str, str]], output: str | None) -> str:
    """What the watch prints first: the table of every record (its headers even with none), or each."""
    if output in {"json", "yaml"}:
        return "\n".join(line(record, output) for record in records)
    wide = output == "wide"
    rows = [[record["namespace"], *status.cells(record, wide=wide)] for record in records]
    return table(columns(wide), rows)


async def run(kube: Api, namespace: str | None, server: str | None, output: str | None) -> int:
    """Print the records, then every change, until interrupted."""
    records, version = await status.records(kube, namespace, server)
    show(first(records, output))
    while True:
        try:
            version = await _follow(kube, namespace, server, output, version)
        except ApiFailure as failure:
            if failure.status != GONE:
                raise
            records, version = await status.records(kube, namespace, server)
            show(first(records, output))


async def _follow(
    kube: Api, namespace: str | None, server: str | None, output: str | None, version: str
) -> str:
    """Print the changes after ``version`` until the watch ends; the last resourceVersion seen."""
    async for event in kube.watch(DATABASE_USERS, namespace, version):
        obj: dict[str, Any] = event.get("object") or {}
        if event.get("type") == "ERROR":
            raise ApiFailure(obj.get("code"), str(obj.get("message") or "watch error"))
        version = (obj.get("metadata") or {}).get("resourceVersion") or version
        if event.get("type") == "BOOKMARK":
            continue
        for record in await status.records_of(kube, namespace, server, [obj]):
            show(line(record, output))
    return version
