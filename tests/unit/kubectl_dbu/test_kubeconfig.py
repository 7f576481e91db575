"""The plain path reads the kubeconfig as kubectl does: files merged (the first to name an entry wins),
paths relative to their own file, and a kubeconfig that needs the full client handed over to it."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from dbuser_operator.kubectl_dbu.errors import CommandError
from dbuser_operator.kubectl_dbu.kubeconfig import select


def write(path: Path, contexts: list[tuple[str, str, str]], **config: Any) -> Path:
    """A kubeconfig with ``contexts`` (name, cluster, user) and the sections given."""
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "contexts": [{"name": n, "context": {"cluster": c, "user": u}} for n, c, u in contexts],
        **config,
    }
    path.write_text(yaml.safe_dump(document))
    return path


def cluster(name: str, **settings: Any) -> dict[str, Any]:
    return {"name": name, "cluster": {"server": f"https://{name}.example:6443", **settings}}


def test_files_merge_as_kubectl_merges_them(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "ca.pem").write_bytes(b"CA-A")
    (tmp_path / "token").write_text("secret-token\n")
    first = write(
        tmp_path / "a" / "config",
        [("one", "c1", "u1")],
        clusters=[cluster("c1", **{"certificate-authority": "ca.pem"})],
        users=[{"name": "u1", "user": {"tokenFile": str(tmp_path / "token")}}],
        **{"current-context": "one"},
    )
    second = write(
        tmp_path / "b",
        [("one", "c2", "u2"), ("two", "c2", "u2")],
        clusters=[cluster("c1", server="https://ignored"), cluster("c2")],
        users=[
            {
                "name": "u2",
                "user": {
                    "client-certificate-data": base64.b64encode(b"CERT").decode(),
                    "client-key-data": base64.b64encode(b"KEY").decode(),
                },
            }
        ],
        **{"current-context": "two"},
    )
    paths = os.pathsep.join([str(first), str(tmp_path / "missing"), str(second)])
    chosen = select(paths, None)  # the first file's current context, its cluster and user
    assert chosen.endpoint is not None
    assert chosen.endpoint.server == "https://c1.example:6443"
    assert chosen.endpoint.ca == b"CA-A"  # relative to its own file
    assert chosen.endpoint.token == "secret-token"
    other = select(paths, "two").endpoint
    assert other is not None
    assert (other.cert, other.key, other.token) == (b"CERT", b"KEY", None)
    assert "secret-token" not in repr(chosen.endpoint)


@pytest.mark.parametrize(
    ("user", "settings"),
    [
        ({"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "get-token"}}, {}),
        ({"auth-provider": {"name": "oidc"}}, {}),
        ({"username": "admin", "password": "pw"}, {}),
        ({"token": "t"}, {"proxy-url": "http://proxy:3128"}),
        ({"token": "t"}, {"tls-server-name": "api.internal"}),
    ],
)
def test_what_only_the_full_client_does_goes_to_it(
    tmp_path: Path, user: dict[str, Any], settings: dict[str, Any]
) -> None:
    path = write(
        tmp_path / "config",
        [("one", "c", "u")],
        clusters=[cluster("c", **settings)],
        users=[{"name": "u", "user": user}],
    )
    assert select(str(path), "one").endpoint is None


def test_a_missing_context_is_named(tmp_path: Path) -> None:
    path = write(tmp_path / "config", [("one", "c", "u")], clusters=[cluster("c")], users=[])
    with pytest.raises(CommandError, match='context "nope" does not exist'):
        select(str(path), "nope")
    with pytest.raises(CommandError, match="no current context"):
        select(str(path), None)
    document = yaml.safe_load(path.read_text())
    document["contexts"][0]["context"]["namespace"] = "team"
    path.write_text(yaml.safe_dump({**document, "current-context": "one"}))
    assert select(str(path), None).namespace == "team"
