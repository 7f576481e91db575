"""Workload identity end to end: a DatabaseUser bound to a ServiceAccount, the operator against the real API
server and MySQL server with a signing CA the test controls (the server's ssl_ca), the test playing the
signer (it signs the pods' certificates with that CA, written as the kubelet writes them). Proven on the
server: its tables, and real logins that work only with the ServiceAccount's certificate and no password."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import pytest

from dbuser_operator.api.v1alpha1 import ADOPT_ANNOTATION
from dbuser_operator.controllers.kit.resources import DATABASE_USERS
from dbuser_operator.credentials.endpoints import CREDENTIAL_BUNDLE
from dbuser_operator.envtest import MySQLServer
from dbuser_operator.runtime.client import KubeClient, PatchType
from dbuser_operator.runtime.resources import SECRETS
from dbuser_operator.workload.identity import client_subject
from tests.integration.mysql.support import admin, bundle_login, plain_login
from tests.integration.operator.support.builders import unique
from tests.integration.operator.support.kube import (
    ready,
    secret_exists,
    wait_for_event,
    wait_for_ready,
    wait_for_secret,
    wait_until_gone,
)
from tests.integration.operator.support.mysql import account_exists, is_mariadb, write_statements
from tests.integration.operator.support.operator import RunningOperator
from tests.integration.operator.support.workload import (
    account_columns,
    documented_example,
    workload_user,
)
from tests.support.kube import eventually
from tests.support.pod_certificates import REFUSED, UNTRUSTED, PodCertificates

pytestmark = pytest.mark.integration


def expected_columns(mysql: MySQLServer, issuer: str, subject: str) -> dict[str, str]:
    plugin = "mysql_native_password" if is_mariadb(mysql) else "caching_sha2_password"
    return {
        "plugin": plugin,
        "authentication_string": "",
        "ssl_type": "SPECIFIED",
        "x509_issuer": issuer,
        "x509_subject": subject,
        "ssl_cipher": "",
    }


def decoded(secret: dict[str, Any]) -> dict[str, str]:
    return {key: base64.b64decode(value).decode() for key, value in (secret.get("data") or {}).items()}


async def until(check: Any, what: str) -> None:
    await eventually(check, timeout=30, interval=0.1, what=what)


async def test_a_bound_account_takes_its_workloads_certificate_only_and_goes_with_its_resource(
    workload_operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    pod_certificates: PodCertificates,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    name, secret_name = unique("wl"), unique("wl-db")
    obj = workload_user(name, connectionSecret={"name": secret_name})
    await kube_client.create(DATABASE_USERS, obj, namespace)
    found = await wait_for_ready(kube_client, namespace, name)
    issuer, subject = pod_certificates.ca.subject_oneline, client_subject(namespace, "app")
    assert subject == f"/O=dbuser-operator/OU={namespace}/CN=app"
    status = found["status"]
    assert status["workload"] == {"serviceAccountName": "app", "subject": subject, "issuer": issuer}
    assert not {"appliedSecret", "authenticationPlugin", "rotation"} & set(status)  # no password, no rotation
    assert account_columns(mysql, name) == expected_columns(mysql, issuer, subject)

    # Only the ServiceAccount's certificate of the signing CA, with no password, logs in.
    bundle = pod_certificates.bundle(namespace, "app")
    assert bundle_login(mysql, name, bundle) == f"{name}@%"
    assert bundle_login(mysql, name, bundle, "any password") in REFUSED
    assert bundle_login(mysql, name, None) in REFUSED
    assert bundle_login(mysql, name, None, "any password") in REFUSED
    assert plain_login(mysql, name, "") in REFUSED
    assert bundle_login(mysql, name, pod_certificates.bundle("another-namespace", "app")) in REFUSED
    assert bundle_login(mysql, name, pod_certificates.bundle(namespace, "default")) in REFUSED
    forged = pod_certificates.bundle(namespace, "app", ca=pod_certificates.forger())
    assert bundle_login(mysql, name, forged) in UNTRUSTED

    # The connection Secret: where to connect and where the pod's certificate is, never a password.
    data = decoded(await wait_for_secret(kube_client, namespace, secret_name))
    assert set(data) == {
        "host",
        "port",
        "username",
        "sslMode",
        "sslCert",
        "sslKey",
        "DATABASE_URL",
        "JDBC_URL",
    }
    assert (data["username"], data["sslMode"]) == (name, "REQUIRED")
    assert data["sslCert"] == data["sslKey"] == CREDENTIAL_BUNDLE
    assert data["DATABASE_URL"].startswith(f"mysql://{name}@")
    # A pod does what the Secret says, with its bundle where sslCert points (here: where the test wrote it):
    # the page's Python example, run as it is, with the Secret's keys as its environment.
    assert mysql.ca_file is not None
    example: dict[str, Any] = {}
    exec(documented_example("python", mysql.ca_file), example)  # the documentation's own code
    with monkeypatch.context() as env:
        for key, value in (data | {"sslCert": str(bundle)}).items():
            env.setenv(key, value)
        with example["connect"]() as connection, connection.cursor() as cursor:
            cursor.execute("SELECT CURRENT_USER()")
            assert cursor.fetchone() == (f"{name}@%",)

    # Later passes find everything in place and write nothing.
    await asyncio.sleep(1.5)  # let the creation's own passes settle
    written = write_statements(mysql)
    await asyncio.sleep(2.5)  # two drift checks, and any requeue
    assert write_statements(mysql) == written

    # A DBA's change of the subject is reverted by the drift check; so is a password set by hand.
    other = client_subject("another-namespace", "app")
    admin(mysql, f"ALTER USER '{name}'@'%' REQUIRE ISSUER '{issuer}' AND SUBJECT '{other}'")
    assert bundle_login(mysql, name, bundle) in REFUSED
    await until(lambda: (account_columns(mysql, name) or {}).get("x509_subject") == subject, "subject back")
    assert bundle_login(mysql, name, bundle) == f"{name}@%"
    admin(mysql, f"ALTER USER '{name}'@'%' IDENTIFIED BY 'set-by-hand'")
    await until(
        lambda: (account_columns(mysql, name) or {}).get("authentication_string") == "", "no password"
    )
    event = await wait_for_event(kube_client, namespace, name, "PasswordRemoved")
    assert event["type"] == "Warning"
    assert account_columns(mysql, name) == expected_columns(mysql, issuer, subject)
    assert bundle_login(mysql, name, bundle) == f"{name}@%"
    assert bundle_login(mysql, name, bundle, "set-by-hand") in REFUSED

    await kube_client.delete(DATABASE_USERS, name, namespace)
    await wait_until_gone(kube_client, namespace, name, limit=60)
    assert not account_exists(mysql, name)
    assert not await secret_exists(kube_client, namespace, secret_name)


async def test_without_a_signing_ca_a_bound_user_is_refused_before_any_sql(
    operator: RunningOperator, kube_client: KubeClient, namespace: str, mysql: MySQLServer
) -> None:
    name = unique("wl-noca")
    await kube_client.create(DATABASE_USERS, workload_user(name), namespace)
    found = await wait_for_ready(kube_client, namespace, name, "False", "WorkloadIdentityUnavailable")
    message = ready(found)["message"]  # type: ignore[index]
    assert "the operator has no signing CA (--workload-signing-ca" in message
    assert "workload" not in found["status"]
    assert not account_exists(mysql, name)
    await kube_client.delete(DATABASE_USERS, name, namespace)
    await wait_until_gone(kube_client, namespace, name, limit=60)


async def test_two_resources_may_bind_one_serviceaccount_and_its_pods_log_in_to_both(
    workload_operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    pod_certificates: PodCertificates,
) -> None:
    """Both are of one namespace (the subject names it): the tenant gives its own pods two accounts, as it
    could give one account both sets of privileges. Each has its hosts, each goes alone."""
    reader, writer = unique("wl-r"), unique("wl-w")
    await kube_client.create(DATABASE_USERS, workload_user(reader), namespace)
    await kube_client.create(DATABASE_USERS, workload_user(writer, hosts=["127.0.0.1"]), namespace)
    await wait_for_ready(kube_client, namespace, reader)
    await wait_for_ready(kube_client, namespace, writer)
    issuer, subject = pod_certificates.ca.subject_oneline, client_subject(namespace, "app")
    for user, host in ((reader, "%"), (writer, "%"), (writer, "127.0.0.1")):
        assert account_columns(mysql, user, host) == expected_columns(mysql, issuer, subject), (user, host)
    bundle = pod_certificates.bundle(namespace, "app")
    assert bundle_login(mysql, reader, bundle) == f"{reader}@%"
    assert bundle_login(mysql, writer, bundle) == f"{writer}@127.0.0.1"  # the more specific host

    await kube_client.delete(DATABASE_USERS, writer, namespace)
    await wait_until_gone(kube_client, namespace, writer, limit=60)
    assert not account_exists(mysql, writer, "127.0.0.1")
    assert not account_exists(mysql, writer)
    assert bundle_login(mysql, reader, bundle) == f"{reader}@%"


async def test_an_adopted_account_loses_its_password_after_it_requires_the_certificate(
    workload_operator: RunningOperator,
    kube_client: KubeClient,
    namespace: str,
    mysql: MySQLServer,
    pod_certificates: PodCertificates,
) -> None:
    """An account made by hand, with a password and no TLS requirement, taken over: it requires the
    workload's certificate first, then its password goes; the old password logs in no more."""
    name = unique("wl-adopt")
    admin(mysql, f"CREATE USER '{name}'@'%' IDENTIFIED BY 'old-password'")
    assert plain_login(mysql, name, "old-password") == "logged in"
    obj = workload_user(name)
    obj["metadata"]["annotations"] = {ADOPT_ANNOTATION: "true"}
    await kube_client.create(DATABASE_USERS, obj, namespace)
    await wait_for_ready(kube_client, namespace, name)
    await wait_for_event(kube_client, namespace, name, "AccountAdopted")
    issuer, subject = pod_certificates.ca.subject_oneline, client_subject(namespace, "app")
    assert account_columns(mysql, name) == expected_columns(mysql, issuer, subject)
    bundle = pod_certificates.bundle(namespace, "app")
    assert plain_login(mysql, name, "old-password") in REFUSED
    assert bundle_login(mysql, name, bundle, "old-password") in REFUSED
    assert bundle_login(mysql, name, bundle) == f"{name}@%"
    await kube_client.delete(DATABASE_USERS, name, namespace)
    await wait_until_gone(kube_client, namespace, name, limit=60)
    assert not account_exists(mysql, name)


async def test_the_secret_a_template_renders_has_the_certificate_and_no_password(
    workload_operator: RunningOperator, kube_client: KubeClient, namespace: str, mysql: MySQLServer
) -> None:
    """Templates see sslCert and sslKey; one asking for a password is refused, naming what it may use."""
    name, secret_name = unique("wl-tpl"), unique("wl-tpl-db")
    go_dsn = "{{ username }}@tcp({{ host }}:{{ port }})/?tls=custom&x-cert={{ sslCert }}"
    spec = {"name": secret_name, "templates": {"GO_DSN": go_dsn}}
    await kube_client.create(DATABASE_USERS, workload_user(name, connectionSecret=spec), namespace)
    await wait_for_ready(kube_client, namespace, name)
    data = decoded(await kube_client.get(SECRETS, secret_name, namespace))
    assert data["GO_DSN"] == f"{name}@tcp({mysql.host}:{mysql.port})/?tls=custom&x-cert={CREDENTIAL_BUNDLE}"
    asking = {"name": secret_name, "templates": {"DSN": "{{ username }}:{{ password }}@tcp({{ host }})/"}}
    patch = {"spec": {"connectionSecret": asking}}
    await kube_client.patch(DATABASE_USERS, name, patch, PatchType.MERGE, namespace=namespace)
    found = await wait_for_ready(kube_client, namespace, name, "False", "TemplateInvalid")
    message = ready(found)["message"]  # type: ignore[index]
    assert "uses 'password'" in message
    assert "sslCert" in message
