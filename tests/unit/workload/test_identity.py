"""The subject a workload's certificate carries and its account requires."""

from __future__ import annotations

import pytest

from dbuser_operator.workload.identity import client_subject


def test_the_subject_names_the_namespace_and_the_service_account() -> None:
    assert client_subject("shop", "app") == "/O=dbuser-operator/OU=shop/CN=app"
    assert client_subject("team-a", "web.v2") == "/O=dbuser-operator/OU=team-a/CN=web.v2"


@pytest.mark.parametrize(
    ("namespace", "name"), [("", "app"), ("shop", "a/CN=root"), ("Shop", "app"), ("shop", "a,b")]
)
def test_anything_but_an_object_name_is_refused(namespace: str, name: str) -> None:
    with pytest.raises(ValueError, match="is not a Kubernetes object name"):
        client_subject(namespace, name)
