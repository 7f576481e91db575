"""Workload identity on the DatabaseUser side, without a server: the signing CA's subject as the issuer
(read again when the mounted file changes), the subject of the DatabaseUser's own namespace, the options
the account must have, and the refusals when there is no usable CA."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.x509.oid import NameOID

from dbuser_operator.api.v1alpha1 import DatabaseUser
from dbuser_operator.controllers.databaseuser.observe import limit_differences
from dbuser_operator.controllers.databaseuser.steps.limits import desired_limits
from dbuser_operator.controllers.databaseuser.workload import (
    UNAVAILABLE,
    SigningCASource,
    Workload,
    service_account_of,
)
from dbuser_operator.controllers.kit.errors import ConditionError
from dbuser_operator.mysql.accounts.limits import Limits
from dbuser_operator.mysql.accounts.tls_identity import TLSIdentity
from tests.unit.workload.test_ca import write_ca

ISSUER = "/C=SE/O=Example/CN=Workload CA"


def bound(namespace: str = "shop", **spec: Any) -> DatabaseUser:
    body = {"authentication": {"workload": {"serviceAccountName": "app"}}} | spec
    return DatabaseUser.model_validate({"metadata": {"name": "u", "namespace": namespace}, "spec": body})


def test_the_subject_is_always_of_the_resources_own_namespace(tmp_path: Path) -> None:
    write_ca(tmp_path)
    source = SigningCASource(tmp_path)
    assert source.workload_of(bound("shop")) == Workload("app", "/O=dbuser-operator/OU=shop/CN=app", ISSUER)
    assert source.workload_of(bound("other")).subject == "/O=dbuser-operator/OU=other/CN=app"  # type: ignore[union-attr]
    password = DatabaseUser.model_validate(
        {"metadata": {"name": "u", "namespace": "shop"}, "spec": {"password": {"name": "s", "key": "k"}}}
    )
    assert source.workload_of(password) is None
    assert service_account_of(password) is None


def test_without_a_signing_ca_a_workload_is_refused_and_waits(tmp_path: Path) -> None:
    with pytest.raises(ConditionError) as refused:
        SigningCASource(None).workload_of(bound())
    assert (refused.value.reason, refused.value.retry) == (UNAVAILABLE, False)
    assert "--workload-signing-ca" in refused.value.message
    assert (
        SigningCASource(None).workload_of(
            DatabaseUser.model_validate(
                {
                    "metadata": {"name": "u", "namespace": "shop"},
                    "spec": {"password": {"name": "s", "key": "k"}},
                }
            )
        )
        is None
    )  # other accounts never need it
    with pytest.raises(ConditionError) as unreadable:
        SigningCASource(tmp_path).issuer()  # an empty directory: retried, the Secret may be fixed in place
    assert (unreadable.value.reason, unreadable.value.retry) == (UNAVAILABLE, True)
    assert "FileNotFoundError" in unreadable.value.message


def test_a_replaced_ca_is_read_again(tmp_path: Path) -> None:
    write_ca(tmp_path)
    source = SigningCASource(tmp_path)
    assert source.issuer() == ISSUER
    write_ca(tmp_path, subject=x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Next CA")]))
    os.utime(tmp_path / "tls.crt", ns=(1, 1))  # whatever the clock: the file is another one
    assert source.issuer() == "/CN=Next CA"
    (tmp_path / "tls.key").write_text("not a key")
    os.utime(tmp_path / "tls.crt", ns=(2, 2))
    with pytest.raises(ConditionError, match="signing CA cannot be used"):
        source.issuer()


def test_the_account_requires_issuer_subject_and_the_specs_cipher() -> None:
    workload = Workload("app", "/O=dbuser-operator/OU=shop/CN=app", ISSUER)
    user = bound(tls={"cipher": "TLS_AES_256_GCM_SHA384"}, maxUserConnections=3)
    wanted = desired_limits(user.spec, workload)
    assert wanted == Limits(
        max_user_connections=3,
        require_tls=True,
        tls_identity=TLSIdentity(issuer=ISSUER, subject=workload.subject, cipher="TLS_AES_256_GCM_SHA384"),
    )
    # What a DBA's change looks like under Observe: named, with the spec's side.
    changed = Limits(
        max_user_connections=3,
        require_tls=True,
        tls_identity=TLSIdentity(issuer=ISSUER, subject="/O=dbuser-operator/OU=shop/CN=other"),
    )
    [difference] = limit_differences(changed, user.spec, workload)
    assert "CN=other" in difference
    assert f"spec issuer '{ISSUER}'" in difference
    assert workload.status().model_dump(by_alias=True) == {
        "serviceAccountName": "app",
        "subject": workload.subject,
        "issuer": ISSUER,
    }


def test_rotation_and_passwords_are_refused_with_a_workload() -> None:
    with pytest.raises(ValueError, match="no password to rotate"):
        bound(rotation={"strategy": "Immediate"})
    with pytest.raises(ValueError, match="takes no password"):
        bound(password={"name": "s", "key": "k"})
