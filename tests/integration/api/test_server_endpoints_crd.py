"""Endpoints on a real API server: a server resource's spec.endpoints and a DatabaseUser's
spec.connectionSecret.endpoint(s) as written with kubectl apply — the well-formed accepted (the port's
default filled in), the malformed refused at admission, as the models refuse them."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from dbuser_operator.api.v1alpha1 import ConnectionSecret
from dbuser_operator.api.v1alpha1.mysqlserver import MySQLServerSpec
from tests.conftest import Runner

pytestmark = pytest.mark.integration

CREDENTIALS = {"user": {"name": "admin", "key": "user"}, "password": {"name": "admin", "key": "password"}}


def server(name: str, endpoints: list[dict[str, Any]]) -> dict[str, Any]:
    spec = {"host": "mysql.databases.svc", "credentials": CREDENTIALS, "endpoints": endpoints}
    return {
        "apiVersion": "mysql.dbuser-operator.dev/v1alpha1",
        "kind": "MySQLServer",
        "metadata": {"name": name},
        "spec": spec,
    }


def user(name: str, connection: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "mysql.dbuser-operator.dev/v1alpha1",
        "kind": "DatabaseUser",
        "metadata": {"name": name},
        "spec": {"password": {"name": "pw", "key": "password"}, "connectionSecret": connection},
    }


def apply(kubectl: Runner, tmp_path: Path, namespace: str, obj: dict[str, Any]) -> tuple[int, str]:
    manifest = tmp_path / f"{obj['metadata']['name']}.yaml"
    manifest.write_text(yaml.safe_dump(obj))
    result = kubectl("apply", "-n", namespace, "-f", str(manifest), check=False)
    return result.returncode, result.stdout + result.stderr


async def test_well_formed_endpoints_are_accepted_with_the_ports_default(
    crds: list[str], kubectl: Runner, tmp_path: Path, namespace: str
) -> None:
    name = f"ep-{uuid.uuid4().hex[:8]}"
    endpoints: list[dict[str, Any]] = [
        {"name": "primary", "host": "mysql-proxy.databases.svc", "tls": {"mode": "REQUIRED"}},
        {"name": "read-only", "host": "fd00::7", "port": 6033},
    ]
    code, output = apply(kubectl, tmp_path, namespace, server(name, endpoints))
    assert code == 0, output
    stored = yaml.safe_load(kubectl("get", "mysqlserver", name, "-n", namespace, "-o", "yaml").stdout)
    assert stored["spec"]["endpoints"][0]["port"] == 3306
    assert MySQLServerSpec.model_validate(stored["spec"]).endpoints is not None
    wanted = {"name": "db", "endpoint": "read-only", "endpoints": ["primary"]}
    code, output = apply(kubectl, tmp_path, namespace, user(f"u-{name}", wanted))
    assert code == 0, output


MALFORMED: dict[str, tuple[list[dict[str, Any]], str]] = {
    "a name twice": (
        [{"name": "a", "host": "x"}, {"name": "a", "host": "y"}],
        "Duplicate value",
    ),
    "an upper-case name": ([{"name": "Primary", "host": "x"}], "should match"),
    "an underscore in a name": ([{"name": "read_only", "host": "x"}], "should match"),
    "no host": ([{"name": "a"}], "Required value"),
    "a host with a space": ([{"name": "a", "host": "x y"}], "should match"),
    "port 0": ([{"name": "a", "host": "x", "port": 0}], "should be greater than or equal to 1"),
    "an unknown TLS mode": ([{"name": "a", "host": "x", "tls": {"mode": "required"}}], "Unsupported value"),
    "TLS without a mode": ([{"name": "a", "host": "x", "tls": {}}], "Required value"),
    "17 endpoints": ([{"name": f"e{i}", "host": "x"} for i in range(17)], "Too many"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
async def test_malformed_endpoints_are_refused_by_kubectl_apply(
    crds: list[str], kubectl: Runner, tmp_path: Path, namespace: str, case: str
) -> None:
    endpoints, complaint = MALFORMED[case]
    name = f"bad-{uuid.uuid4().hex[:8]}"
    code, output = apply(kubectl, tmp_path, namespace, server(name, endpoints))
    assert code != 0
    assert complaint in output, output
    with pytest.raises(ValidationError):
        MySQLServerSpec.model_validate(server(name, endpoints)["spec"])


@pytest.mark.parametrize(
    "connection",
    [
        {"name": "db", "endpoint": "Primary"},
        {"name": "db", "endpoint": "../other"},
        {"name": "db", "endpoints": ["a", "a"]},
        {"name": "db", "endpoints": [f"e{i}" for i in range(17)]},
    ],
)
async def test_a_malformed_endpoint_name_in_a_connection_secret_is_refused(
    crds: list[str], kubectl: Runner, tmp_path: Path, namespace: str, connection: dict[str, Any]
) -> None:
    code, output = apply(kubectl, tmp_path, namespace, user(f"bad-{uuid.uuid4().hex[:8]}", connection))
    assert code != 0
    assert "spec.connectionSecret.endpoint" in output, output
    with pytest.raises(ValidationError):
        ConnectionSecret.model_validate(connection)
