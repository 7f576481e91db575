"""The local run points the sample MySQLServer at its own server, and names the right client."""

from __future__ import annotations

from typing import Any

import yaml

from dbuser_operator.envtest import MySQLServer
from dbuser_operator.local import client_command, point_samples_at
from tests.conftest import REPO

SERVER = MySQLServer("127.0.0.1", 41000, "envtest_admin", "s3cret-pw", origin="local")


def samples() -> list[dict[str, Any]]:
    """The documents of config/samples/kustomization.yaml, as kustomize renders them (no namespace)."""
    folder = REPO / "config" / "samples"
    kustomization = yaml.safe_load((folder / "kustomization.yaml").read_text())
    return [
        doc for name in kustomization["resources"] for doc in yaml.safe_load_all((folder / name).read_text())
    ]


def by_kind(documents: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    return next(doc for doc in documents if doc["kind"] == kind and doc["metadata"]["name"] == name)


def test_the_sample_server_and_its_admin_secret_name_the_local_server() -> None:
    documents = point_samples_at(samples(), SERVER, "-----BEGIN CERTIFICATE-----\n")
    spec = by_kind(documents, "MySQLServer", "reporting")["spec"]
    assert (spec["host"], spec["port"]) == ("127.0.0.1", 41000)
    secret_name = spec["credentials"]["password"]["name"]
    assert spec["tls"] == {"mode": "VERIFY_IDENTITY", "ca": {"name": secret_name, "key": "ca.crt"}}
    secret = by_kind(documents, "Secret", secret_name)
    assert secret["stringData"] == {
        "user": "envtest_admin",
        "password": "s3cret-pw",
        "ca.crt": "-----BEGIN CERTIFICATE-----\n",
    }
    # The other objects are as the samples have them.
    assert by_kind(documents, "Secret", "app-db-password") == by_kind(samples(), "Secret", "app-db-password")
    assert by_kind(documents, "DatabaseUser", "app") == by_kind(samples(), "DatabaseUser", "app")


def test_the_callers_objects_are_left_as_they_are() -> None:
    original = samples()
    point_samples_at(original, SERVER, "ca")
    assert original == samples()


def test_a_server_without_a_ca_keeps_the_samples_tls() -> None:
    documents = point_samples_at(samples(), SERVER, None)
    spec = by_kind(documents, "MySQLServer", "reporting")["spec"]
    assert "tls" not in spec
    assert "ca.crt" not in by_kind(documents, "Secret", "reporting-mysql-admin")["stringData"]


def test_the_client_matches_the_flavour_among_the_installed_ones() -> None:
    both = {"mysql": "/usr/bin/mysql", "mariadb": "/usr/bin/mariadb"}.get
    assert client_command("mysql", both) == "mysql"
    assert client_command("mariadb", both) == "mariadb"
    only_mariadb = {"mariadb": "/usr/bin/mariadb"}.get
    assert client_command("mysql", only_mariadb) == "mariadb"  # MariaDB's client speaks to MySQL too
    only_mysql = {"mysql": "/usr/bin/mysql"}.get
    assert client_command("mariadb", only_mysql) == "mysql"
    none: dict[str, str] = {}
    assert client_command("mysql", none.get) == "mysql"  # none installed: the flavour's own
    assert client_command("mariadb", none.get) == "mariadb"
