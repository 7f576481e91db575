"""The probe endpoints: a failing check is named; a check that raises fails instead of breaking the probe."""

from __future__ import annotations

import aiohttp

from dbuser_operator.runtime.server import Endpoints


async def test_probes_name_failing_and_raising_checks() -> None:
    endpoints = Endpoints("127.0.0.1:0", "127.0.0.1:0")
    endpoints.health_checks["ping"] = lambda: None
    endpoints.ready_checks["runnables"] = lambda: "informer secrets (KeyError, restarting)"

    def broken() -> str | None:
        raise KeyError("oops")

    endpoints.ready_checks["broken"] = broken
    await endpoints.start()
    try:
        base = f"http://127.0.0.1:{endpoints.ports['probes']}"
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{base}/healthz") as response:
                assert (response.status, await response.text()) == (200, "ok")
            async with session.get(f"{base}/readyz") as response:
                assert response.status == 503
                text = await response.text()
        assert "[-]runnables failed: informer secrets (KeyError, restarting)" in text
        assert "[-]broken failed: the check raised KeyError" in text
    finally:
        await endpoints.stop()
