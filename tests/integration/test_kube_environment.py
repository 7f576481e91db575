"""The Kubernetes half of the test environment is the real thing."""

from __future__ import annotations

import socket
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from dbuser_operator.envtest import Binaries, KubeCluster, install_crds
from dbuser_operator.envtest.kube import LocalControlPlane, apiserver_binary_version
from tests.conftest import REPO, Runner, read_pins
from tests.integration.operator.support import wait

pytestmark = pytest.mark.integration

GROUP, VERSION, PLURAL = "envtest.dbuser-operator.dev", "v1", "widgets"


async def test_api_server_reports_the_version_of_its_binary(
    kube: KubeCluster, kube_api: client.ApiClient
) -> None:
    info = await client.VersionApi(kube_api).get_code(_request_timeout=10)
    assert info.git_version.startswith("v1.")
    if kube.control_plane is not None:
        assert info.git_version == apiserver_binary_version(kube.control_plane.apiserver_binary)


def test_built_binaries_report_the_pinned_versions(binaries: Binaries) -> None:
    """Whatever resolves to a binary that hack/testbin.sh built must be the pinned version."""
    pins = read_pins()
    built = {
        "kube-apiserver": ["--version"],
        "kubectl": ["version", "--client"],
        "etcd": ["--version"],
        "helm": ["version", "--short"],
    }
    expected = {
        "kube-apiserver": pins["KUBERNETES_VERSION"],
        "kubectl": pins["KUBERNETES_VERSION"],
        "etcd": pins["ETCD_VERSION"].lstrip("v"),
        "helm": pins["HELM_VERSION"],
    }
    checked = []
    for name, args in built.items():
        path = binaries.path(name)
        if path.parent != binaries.directories[-1]:
            continue  # from KUBEBUILDER_ASSETS: the caller's choice of version
        output = subprocess.run([str(path), *args], capture_output=True, text=True, check=True).stdout
        assert expected[name] in output, f"{name}: {output!r}"
        checked.append(name)
    assert "helm" in checked  # helm never comes from KUBEBUILDER_ASSETS


async def test_a_crd_becomes_established_and_a_custom_object_round_trips(
    kube_api: client.ApiClient, namespace: str
) -> None:
    names = await install_crds(kube_api, REPO / "tests" / "data" / "widget-crd.yaml")
    assert names == ["widgets.envtest.dbuser-operator.dev"]
    custom = client.CustomObjectsApi(kube_api)
    body = {"apiVersion": "envtest.dbuser-operator.dev/v1", "kind": "Widget", "metadata": {"name": "w"}}

    with pytest.raises(ApiException) as invalid:  # the schema is enforced: size is required
        await custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)
    assert invalid.value.status == 422

    body["spec"] = {"size": 3}
    created = await custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)
    await custom.patch_namespaced_custom_object_status(
        GROUP,
        VERSION,
        namespace,
        PLURAL,
        "w",
        {"status": {"seen": True}},
        _content_type="application/merge-patch+json",  # type: ignore[call-arg]  # the stubs omit it
    )
    read = await custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "w")
    assert read["spec"] == {"size": 3}
    assert read["status"] == {"seen": True}
    assert read["metadata"]["uid"] == created["metadata"]["uid"]
    await custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "w")
    with pytest.raises(ApiException) as gone:
        await custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "w")
    assert gone.value.status == 404


async def test_a_user_without_rbac_rights_is_refused(
    kube: KubeCluster, kube_api: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    user = f"nobody-{uuid.uuid4().hex[:6]}"
    kubeconfig = await kube.mint_kubeconfig(user, ["envtest:testers"], tmp_path / "user.kubeconfig")
    async with kube.api_client(kubeconfig) as api:
        core = client.CoreV1Api(api)
        with pytest.raises(ApiException) as refused:
            await core.list_namespaced_config_map(namespace, _request_timeout=10)
        assert refused.value.status == 403
        assert user in str(refused.value.body)  # authenticated as that user, then refused by RBAC

        # Granting the right makes the same call pass: the 403 above was RBAC, nothing else.
        rbac = client.RbacAuthorizationV1Api(kube_api)
        await rbac.create_namespaced_role(
            namespace,
            client.V1Role(
                metadata=client.V1ObjectMeta(name="read-config-maps"),
                rules=[client.V1PolicyRule(api_groups=[""], resources=["configmaps"], verbs=["list"])],
            ),
        )
        await rbac.create_namespaced_role_binding(
            namespace,
            client.V1RoleBinding(
                metadata=client.V1ObjectMeta(name="read-config-maps"),
                role_ref=client.V1RoleRef(
                    api_group="rbac.authorization.k8s.io", kind="Role", name="read-config-maps"
                ),
                subjects=[
                    client.RbacV1Subject(
                        api_group="rbac.authorization.k8s.io", kind="Group", name="envtest:testers"
                    )
                ],
            ),
        )
        # The RBAC authorizer learns of new bindings through its informers, a moment after the write.

        async def listed_by_tester() -> Any:
            try:
                return await core.list_namespaced_config_map(namespace, _request_timeout=10)
            except ApiException as error:
                if error.status != 403:
                    raise
                raise AssertionError("403: the binding is not known yet") from error

        listed = await wait.eventually(listed_by_tester, message="the tester may list ConfigMaps")
        assert listed.items is not None


def test_kubectl_talks_to_the_api_server(kubectl: Runner) -> None:
    version = kubectl("version", "-o", "json").stdout
    assert '"serverVersion"' in version
    assert '"clientVersion"' in version
    assert "default" in kubectl("get", "namespaces", "-o", "name").stdout


def test_helm_runs_against_the_api_server(helm: Runner) -> None:
    assert helm("version", "--short").stdout.startswith("v3.")
    listed = helm("list", "--all-namespaces", "-o", "json")
    assert listed.stdout.strip().startswith("[")


def test_ports_taken_before_etcd_and_the_api_server_bind_them_are_traded_for_others(
    binaries: Binaries, tmp_path: Path
) -> None:
    """free_port only probes: etcd's or the API server's port may be taken before they bind it. Each
    picks other ports and starts again; the kubeconfig names the port the API server got."""
    plane = LocalControlPlane(binaries, tmp_path / "squatted")
    taken = [int(plane.etcd_url.rsplit(":", 1)[1]), int(plane.server_url.rsplit(":", 1)[1])]
    squatters = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in taken]
    try:
        for squatter, port in zip(squatters, taken, strict=True):
            squatter.bind(("127.0.0.1", port))
            squatter.listen()
        plane.start()
        assert int(plane.etcd_url.rsplit(":", 1)[1]) != taken[0]
        assert int(plane.server_url.rsplit(":", 1)[1]) != taken[1]
        assert plane.server_url in plane.admin_kubeconfig.read_text()
        logs = [process.log_path.read_text(errors="replace").lower() for process in plane.processes()]
        assert all("address already in use" in log for log in logs)
    finally:
        plane.stop()
        for squatter in squatters:
            squatter.close()
