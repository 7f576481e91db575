"""The connection examples of docs/workload-identity.md — Python (PyMySQL), Go (go-sql-driver/mysql), Java
(MySQL Connector/J) — run as the page shows them, on the session's flavour (MySQL 9.7, MariaDB 11.8 and
10.11: marked ``mariadb_versions``, so that hack/test.sh runs it on both MariaDB versions): a DatabaseUser
bound to a ServiceAccount, certificates the operator's signer issued to the ServiceAccount's pods (requested
as the kubelet requests them, written as it writes the credential bundle), the connection Secret's values as
the example's environment. Each example logs in, with no password, as the bound account."""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pytest

from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.envtest.pki import CertificateAuthority
from dbuser_operator.runtime.client import KubeClient
from tests.integration.mysql.support import admin
from tests.integration.operator.support.builders import unique
from tests.integration.operator.support.kube import wait_for_ready, wait_for_secret
from tests.integration.operator.support.kubelet import Kubelet
from tests.integration.operator.support.operator import RunningOperator
from tests.integration.operator.workload.documented import (
    Login,
    go_logins,
    java_logins,
    python_logins,
)
from tests.integration.operator.workload.support import bound_user, check_issued

pytestmark = [pytest.mark.integration, pytest.mark.mariadb_versions]

Example = Callable[[Path, Mapping[str, str], Sequence[Path], Path], list[Login]]


def in_process(server_ca: Path, env: Mapping[str, str], bundles: Sequence[Path], _: Path) -> list[Login]:
    return python_logins(server_ca, env, bundles)


EXAMPLES: dict[str, Example] = {"python": in_process, "go": go_logins, "java": java_logins}


async def test_each_documented_client_logs_in_as_the_bound_account_with_the_signers_certificate(
    signer: RunningOperator,
    kube_client: KubeClient,
    mysql: MySQLServer,
    namespace: str,
    node: Kubelet,
    signing_ca: CertificateAuthority,
    tmp_path: Path,
) -> None:
    """Every example, with the Secret's values and a bundle of an ECDSA P-256 key, then one of an RSA 3072
    key put in its place (a refresh, and the other key type): two new connections, each as
    ``<user>@%`` in the Secret's database."""
    name, secret_name, database = unique("wl"), unique("wl-db"), unique("wl_shop").replace("-", "_")
    admin(mysql, f"CREATE DATABASE `{database}`")
    privileges = [{"database": database, "privileges": ["SELECT"]}]
    user = bound_user(name, "app", privileges=privileges, connectionSecret={"name": secret_name})
    await kube_client.create(DATABASE_USERS, user, namespace)
    await wait_for_ready(kube_client, namespace, name)
    secret = await wait_for_secret(kube_client, namespace, secret_name)
    values = {key: base64.b64decode(value).decode() for key, value in secret["data"].items()}
    assert "password" not in values
    assert values["database"] == database

    bundles = []
    for index, key_type in enumerate(("ECDSAP256", "RSA3072")):
        pod = await node.pod(namespace, f"app-{index}", "app")
        credentials = await node.request(pod, key_type=key_type)
        check_issued(await node.decided(namespace, credentials), credentials, signing_ca, namespace, "app")
        bundles.append(credentials.write_bundle(tmp_path / "issued" / f"{key_type}.pem"))

    assert mysql.ca_file is not None, "the local server's CA"
    logged_in = {}
    for language, example in EXAMPLES.items():
        live = tmp_path / language / "credentialbundle.pem"  # the volume's file, where sslCert points
        live.parent.mkdir()
        environment = values | {"sslCert": str(live), "sslKey": str(live)}
        logged_in[language] = example(mysql.ca_file, environment, bundles, tmp_path / language)
    bound = [(f"{name}@%", database)] * len(bundles)
    assert logged_in == dict.fromkeys(EXAMPLES, bound)
    admin(mysql, f"DROP DATABASE `{database}`")
