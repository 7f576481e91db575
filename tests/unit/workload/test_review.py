"""The pod and ServiceAccount a request names, as they are when it is signed: each mismatch a denial."""

from __future__ import annotations

from typing import Any

import pytest

from dbuser_operator.workload.identity import SIGNER_NAME
from dbuser_operator.workload.requests import PodCertificateRequest, Refused
from dbuser_operator.workload.review import check_pod, check_service_account

REQUEST = PodCertificateRequest(
    namespace="shop",
    name="req-abcde",
    pod_name="app-0",
    pod_uid="pod-uid",
    service_account_name="app",
    service_account_uid="sa-uid",
    node_name="node-a",
    max_expiration_seconds=86400,
    stub_pkcs10_request=b"",
    user_annotations={},
)


def pod(**changes: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "metadata": {"name": "app-0", "namespace": "shop", "uid": "pod-uid"},
        "spec": {
            "nodeName": "node-a",
            "serviceAccountName": "app",
            "volumes": [
                {"name": "other", "secret": {"secretName": "x"}},
                {"name": "cert", "projected": {"sources": [{"podCertificate": {"signerName": SIGNER_NAME}}]}},
            ],
        },
    }
    for key, value in changes.items():
        (obj["metadata"] if key in ("uid", "annotations") else obj["spec"])[key] = value
    return obj


def reason(obj: dict[str, Any] | None) -> str:
    with pytest.raises(Refused) as refused:
        check_pod(REQUEST, obj)
    return refused.value.reason


def test_the_requests_pod_passes() -> None:
    check_pod(REQUEST, pod())
    check_service_account(REQUEST, {"metadata": {"uid": "sa-uid"}})


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (None, "PodNotFound"),
        (pod(uid="another"), "PodMismatch"),
        (pod(nodeName="node-b"), "NodeMismatch"),
        (pod(nodeName=None), "NodeMismatch"),
        (pod(annotations={"kubernetes.io/config.mirror": "x"}), "MirrorPod"),
        (pod(serviceAccountName="other"), "ServiceAccountMismatch"),
        (pod(serviceAccountName=None), "ServiceAccountMismatch"),  # "default"
        (pod(volumes=[]), "NoPodCertificateVolume"),
        (
            pod(volumes=[{"projected": {"sources": [{"podCertificate": {"signerName": "x.dev/other"}}]}}]),
            "NoPodCertificateVolume",
        ),
    ],
)
def test_a_pod_that_is_not_the_requests_is_refused(obj: dict[str, Any] | None, expected: str) -> None:
    assert reason(obj) == expected


def test_a_service_account_made_again_or_gone_is_refused() -> None:
    for account, expected in (
        (None, "ServiceAccountNotFound"),
        ({"metadata": {"uid": "new"}}, "ServiceAccountMismatch"),
    ):
        with pytest.raises(Refused) as refused:
            check_service_account(REQUEST, account)
        assert refused.value.reason == expected
