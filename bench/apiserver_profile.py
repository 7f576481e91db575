"""CPU profiles of the kube-apiserver during a run, for ``--profile``: where its CPU goes, by Go function.

The API server serves ``/debug/pprof/profile?seconds=S`` (profiling is on by default); a run is covered by
consecutive profiles of :data:`SLICE_SECONDS` each, saved as ``<name>-<k>.pb.gz``. Merge and read them with
Go's pprof, e.g. ``go tool pprof -top -cum <name>-*.pb.gz``, or compare two runs with
``go tool pprof -top -cum -diff_base floor.pb.gz operator.pb.gz`` after merging each
(``go tool pprof -proto <name>-*.pb.gz > <name>.pb.gz``). Benchmark code, not a product path.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
from kubernetes_asyncio import client

SLICE_SECONDS = 10


async def _profile(api: client.ApiClient, seconds: int) -> bytes:
    response: aiohttp.ClientResponse = await api.call_api(
        "/debug/pprof/profile",
        "GET",
        query_params=[("seconds", str(seconds))],
        header_params={"Accept": "application/octet-stream"},
        auth_settings=["BearerToken"],
        _preload_content=False,
        _return_http_data_only=True,
        _request_timeout=seconds + 30,
    )
    async with response:
        content = await response.read()
        if response.status != 200:
            raise RuntimeError(f"kube-apiserver profile: HTTP {response.status}")
        return content


async def _record(api: client.ApiClient, directory: Path, name: str) -> None:
    """Profile slices until cancelled; an API server that refuses them (no profiling, no permission) is
    reported once and left alone: the run goes on without its profile."""
    await asyncio.to_thread(directory.mkdir, parents=True, exist_ok=True)
    try:
        for index in itertools.count():
            content = await _profile(api, SLICE_SECONDS)
            await asyncio.to_thread((directory / f"{name}-{index:03d}.pb.gz").write_bytes, content)
    except (RuntimeError, TimeoutError, aiohttp.ClientError, client.ApiException) as error:
        print(f"kube-apiserver profile of {name} stopped: {error!r}", flush=True)


@contextlib.asynccontextmanager
async def recording(api: client.ApiClient, directory: Path | None, name: str) -> AsyncIterator[None]:
    """Profile the API server in slices while the body runs (nothing when ``directory`` is None); the slice
    running at the end is dropped (its profile would cover time after the run)."""
    if directory is None:
        yield
        return
    task = asyncio.create_task(_record(api, directory, name))
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
