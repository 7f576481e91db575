"""How ``status --watch`` and ``-o`` print records: one table first, then a row under its headers per
change; a JSON line or a YAML document per record."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import yaml

from dbuser_operator.kubectl_dbu import status, watch
from dbuser_operator.kubectl_dbu.output import document

NOW = datetime(2026, 11, 26, 12, 0, 0, tzinfo=UTC)
OBJ = {
    "metadata": {"name": "app", "namespace": "team-a", "creationTimestamp": "2026-11-26T11:00:00Z"},
    "spec": {},
    "status": {"hosts": ["%", "10.%"], "credentialVersion": 3},
}


def test_the_first_table_and_a_change_line_up() -> None:
    record = status.record(OBJ, None, [], NOW)
    first = watch.first([record], None).splitlines()
    assert first[0].split("   ")[:3] == ["NAMESPACE", "NAME", "READY"]
    change = watch.line(record, None)
    assert change == first[1]
    assert change.split()[:3] == ["team-a", "app", "Unknown"]


def test_wide_adds_hosts_credential_version_and_age() -> None:
    record = status.record(OBJ, None, [], NOW)
    assert status.headers(wide=True)[-4:] == ("HOSTS", "SERVICE ACCOUNT", "CREDENTIAL VERSION", "AGE")
    assert status.cells(record, wide=True)[-4:] == ["%,10.%", "-", "3", "60m"]
    assert len(status.cells(record, wide=False)) == len(status.headers(wide=False))


def test_json_and_yaml_carry_the_same_record() -> None:
    record = status.record(OBJ, None, [], NOW)
    assert json.loads(watch.line(record, "json")) == record
    assert yaml.safe_load(watch.line(record, "yaml").removeprefix("---\n")) == record
    assert json.loads(document([record], "json")) == yaml.safe_load(document([record], "yaml"))
