"""spec.tls and spec.authentication in the models: defaults, the rules (with the CRD's messages), and the
plugin names agreeing with the MySQL layer."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic import ValidationError

from dbuser_operator.api import v1alpha1
from dbuser_operator.api.v1alpha1 import DatabaseUserSpec
from dbuser_operator.controllers.databaseuser.steps.limits import desired_limits
from dbuser_operator.mysql.accounts import authentication
from dbuser_operator.mysql.accounts.tls_identity import TLSIdentity

PASSWORD = {"password": {"name": "s", "key": "k"}}


def spec(**fields: Any) -> DatabaseUserSpec:
    return DatabaseUserSpec.model_validate(PASSWORD | fields)


def test_plugin_names_agree_with_the_mysql_layer() -> None:
    assert set(v1alpha1.AUTHENTICATION_PLUGINS) == set(authentication.PLUGINS)
    assert set(v1alpha1.PASSWORDLESS_PLUGINS) == set(authentication.PASSWORDLESS)


def test_unset_means_what_it_meant_before() -> None:
    plain = spec()
    assert (plain.tls, plain.authentication) == (None, None)
    assert desired_limits(plain).tls_identity == TLSIdentity()
    assert desired_limits(spec(requireTLS=True)).require_tls is True


def test_an_identity_implies_tls() -> None:
    wanted = desired_limits(spec(tls={"subject": "/CN=app"}))
    assert wanted.require_tls is True
    assert wanted.tls_identity == TLSIdentity(subject="/CN=app")
    assert desired_limits(spec(tls={"x509": True})).tls_identity == TLSIdentity(x509=True)
    assert desired_limits(spec(tls={})).require_tls is False  # an empty tls asks for nothing


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"tls": {"x509": True, "cipher": "TLS_AES_256_GCM_SHA384"}}, v1alpha1.X509_ALONE_MESSAGE),
        ({"tls": {"subject": "/CN=caf\u00e9"}}, "String should match pattern"),
        ({"tls": {"issuer": "/CN=a\x00"}}, "String should match pattern"),
        ({"tls": {"cipher": "A B"}}, "String should match pattern"),
        ({"tls": {"x509": "true"}}, "Input should be a valid boolean"),
        ({"authentication": {"plugin": "unix_socket"}}, "the plugin unix_socket takes no password"),
        ({"authentication": {"plugin": "mysql_clear_password"}}, "Input should be"),
    ],
)
def test_refused_with_the_crds_messages(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        spec(**fields)


def test_the_password_is_required_unless_the_plugin_takes_none() -> None:
    with pytest.raises(
        ValidationError, match=r"spec\.password or spec\.generatedPassword is required unless"
    ):
        DatabaseUserSpec.model_validate({})
    with pytest.raises(
        ValidationError, match=r"spec\.password or spec\.generatedPassword is required unless"
    ):
        DatabaseUserSpec.model_validate({"authentication": {"plugin": "ed25519"}})
    for plugin in v1alpha1.PASSWORDLESS_PLUGINS:
        parsed = DatabaseUserSpec.model_validate({"authentication": {"plugin": plugin}})
        assert parsed.password is None


WORKLOAD = {"authentication": {"workload": {"serviceAccountName": "app"}}}


def test_a_workload_identity_takes_no_password() -> None:
    parsed = DatabaseUserSpec.model_validate(WORKLOAD)
    assert parsed.authentication is not None
    assert parsed.authentication.plugin is None
    assert parsed.authentication.workload == v1alpha1.WorkloadIdentity(serviceAccountName="app")
    assert parsed.password is None
    assert parsed.generated_password is None


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (PASSWORD | WORKLOAD, v1alpha1.WORKLOAD_NO_PASSWORD_MESSAGE),
        ({"generatedPassword": {}} | WORKLOAD, v1alpha1.WORKLOAD_NO_PASSWORD_MESSAGE),
        ({"tls": {"subject": "/CN=app"}} | WORKLOAD, v1alpha1.WORKLOAD_TLS_MESSAGE),
        ({"tls": {"x509": True}} | WORKLOAD, v1alpha1.WORKLOAD_TLS_MESSAGE),
        (
            {"authentication": {"plugin": "ed25519", "workload": {"serviceAccountName": "app"}}},
            v1alpha1.AUTHENTICATION_ONE_OF_MESSAGE,
        ),
        ({"authentication": {}} | PASSWORD, v1alpha1.AUTHENTICATION_ONE_OF_MESSAGE),
        ({"authentication": {"workload": {"serviceAccountName": "Shop/app"}}}, "String should match pattern"),
        ({"authentication": {"workload": {"serviceAccountName": "a" * 65}}}, "at most 64 characters"),
    ],
)
def test_a_workload_identity_refused_with_the_crds_messages(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        DatabaseUserSpec.model_validate(fields)


def test_a_workload_may_still_ask_for_a_cipher() -> None:
    parsed = DatabaseUserSpec.model_validate({"tls": {"cipher": "TLS_AES_256_GCM_SHA384"}} | WORKLOAD)
    assert parsed.tls is not None
    assert parsed.tls.cipher == "TLS_AES_256_GCM_SHA384"
