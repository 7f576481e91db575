"""Install CustomResourceDefinitions from YAML files and wait until they are Established and served."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

_REQUEST_TIMEOUT = 30
_ESTABLISHED_TIMEOUT = 60


def read_crds(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """Every CustomResourceDefinition document in the given files, or in the YAML files of given folders."""
    files: list[Path] = []
    for path in paths:
        files += sorted([*path.glob("*.yaml"), *path.glob("*.yml")]) if path.is_dir() else [path]
    documents = [doc for file in files for doc in yaml.safe_load_all(file.read_text()) if doc]
    return [doc for doc in documents if doc.get("kind") == "CustomResourceDefinition"]


async def install_crds(api: client.ApiClient, *paths: Path) -> list[str]:
    """Create or update the CRDs found in ``paths``; return their names once all are Established and
    their resources can be listed (a fresh CRD's storage answers 429 for a moment: a watch started then
    logs a warning)."""
    extensions = client.ApiextensionsV1Api(api)
    names = []
    for crd in read_crds(paths):
        name = crd["metadata"]["name"]
        body: Any = crd  # the client serialises a plain dict as it is
        names.append(name)
        try:
            await extensions.create_custom_resource_definition(body, _request_timeout=_REQUEST_TIMEOUT)
        except ApiException as error:
            if error.status != 409:
                raise
            current = await extensions.read_custom_resource_definition(
                name, _request_timeout=_REQUEST_TIMEOUT
            )
            crd["metadata"]["resourceVersion"] = current.metadata.resource_version
            await extensions.replace_custom_resource_definition(name, body, _request_timeout=_REQUEST_TIMEOUT)
    objects = client.CustomObjectsApi(api)
    for name, crd in zip(names, read_crds(paths), strict=True):
        try:
            async with asyncio.timeout(_ESTABLISHED_TIMEOUT):
                while not await _established(extensions, name):  # noqa: ASYNC110 - a remote condition
                    await asyncio.sleep(0.1)
                while not await _served(objects, crd):  # noqa: ASYNC110 - a remote condition
                    await asyncio.sleep(0.1)
        except TimeoutError:
            raise TimeoutError(
                f"CustomResourceDefinition {name} not Established within {_ESTABLISHED_TIMEOUT} s"
            ) from None
    return names


async def _established(extensions: client.ApiextensionsV1Api, name: str) -> bool:
    crd = await extensions.read_custom_resource_definition(name, _request_timeout=_REQUEST_TIMEOUT)
    conditions = (crd.status.conditions if crd.status else None) or []
    return any(c.type == "Established" and c.status == "True" for c in conditions)


async def _served(objects: client.CustomObjectsApi, crd: dict[str, Any]) -> bool:
    """Whether the CRD's resources can be listed (its storage initialised) in its first served version."""
    spec = crd["spec"]
    version = next(v["name"] for v in spec["versions"] if v.get("served", True))
    try:
        await objects.list_cluster_custom_object(
            spec["group"], version, spec["names"]["plural"], limit=1, _request_timeout=_REQUEST_TIMEOUT
        )
    except ApiException as error:
        if error.status in {404, 429, 503}:
            return False
        raise
    return True
