"""The API client reads the proxy environment once (no per-request ``~/.netrc`` or proxy lookups), a
fenced one sends no write its fence refuses, and its requests carry what ``call_api`` would send."""

from __future__ import annotations

import contextlib
import datetime
import enum
import json
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from kubernetes_asyncio import client

from dbuser_operator.runtime.client import (
    DEFAULT_TIMEOUT,
    KubeClient,
    PatchType,
    _encode,
    api_client,
    decode,
    environment_proxy,
)
from dbuser_operator.runtime.fence import Fence, FenceLost
from dbuser_operator.runtime.resources import SECRETS

PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy")


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def configuration(host: str = "https://10.0.0.1:6443") -> client.Configuration:
    result = client.Configuration()
    result.host = host
    return result


async def test_session_does_not_trust_the_environment_per_request() -> None:
    async with api_client(configuration()) as api:
        session = api.rest_client.pool_manager
        assert session.trust_env is False
        assert not session.closed
        assert api.rest_client.proxy is None


async def test_proxy_from_the_environment_is_resolved_up_front(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    async with api_client(configuration()) as api:
        assert api.rest_client.proxy == "http://proxy.example:3128"


async def test_configured_proxy_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    settings = configuration()
    settings.proxy = "http://other.example:8080"
    async with api_client(settings) as api:
        assert api.rest_client.proxy == "http://other.example:8080"


def test_no_proxy_exempts_the_api_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("NO_PROXY", "10.0.0.1,.svc")
    assert environment_proxy("https://10.0.0.1:6443") is None
    assert environment_proxy("https://kubernetes.default.svc") is None
    assert environment_proxy("https://api.example:6443") == "http://proxy.example:3128"


def test_plain_http_uses_the_http_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.example:3128")
    assert environment_proxy("http://127.0.0.1:8080") == "http://proxy.example:3128"
    assert environment_proxy("https://127.0.0.1:6443") is None


class Reached(Exception):
    """The request got as far as the HTTP call."""


class RecordingSession:
    """Stands in for the ApiClient's aiohttp session: records the methods of the requests that reach it."""

    def __init__(self) -> None:
        self.methods: list[str] = []

    async def request(self, method: str, url: str, **_: object) -> None:
        self.methods.append(method)
        raise Reached


async def test_a_fenced_client_sends_no_write_the_fence_refuses() -> None:
    async with api_client(configuration()) as real:
        session, real.rest_client.pool_manager = real.rest_client.pool_manager, RecordingSession()
        try:
            await _writes_refused(real, real.rest_client.pool_manager)
        finally:
            real.rest_client.pool_manager = session


async def _writes_refused(real: client.ApiClient, api: RecordingSession) -> None:
    fence = Fence(4.0, 0.4)  # never acquired: closed
    kube = KubeClient(real, before_write=fence.check)
    for write in (
        kube.create(SECRETS, {}, "ns"),
        kube.delete(SECRETS, "s", "ns"),
        kube.replace(SECRETS, "s", {}, "ns"),
    ):
        with pytest.raises(FenceLost):
            await write
    assert api.methods == []
    with pytest.raises(Reached):  # reads are not fenced
        await kube.get(SECRETS, "s", "ns")
    assert api.methods == ["GET"]


class CapturingSession:
    """Stands in for the ApiClient's aiohttp session: keeps what each request would send."""

    def __init__(self) -> None:
        self.sent: list[dict[str, object]] = []

    async def request(self, method: str, url: str, **options: object) -> None:
        self.sent.append({"method": method, "url": url, **options})
        raise Reached


async def test_requests_are_sent_as_call_api_sends_them() -> None:
    """The client builds its requests itself (``call_api``'s generic work costs CPU per request): the same
    method, URL, headers (the token refreshed through the configuration), proxy, timeout and JSON body."""
    settings = configuration()
    settings.api_key = {"BearerToken": "t0ken"}
    settings.api_key_prefix = {"BearerToken": "Bearer"}
    settings.proxy = "http://proxy.example:3128"
    body = {"metadata": {"resourceVersion": "7"}, "status": {"gone": None, "list": [1, "ü"], "n": 1.5}}
    async with api_client(settings) as api:
        session, api.rest_client.pool_manager = api.rest_client.pool_manager, CapturingSession()
        try:
            sent = api.rest_client.pool_manager.sent
            with pytest.raises(Reached):
                await KubeClient(api).patch(
                    SECRETS,
                    "s",
                    body,
                    PatchType.MERGE,
                    namespace="ns",
                    subresource="status",
                    field_manager="m",
                )
            with pytest.raises(Reached):
                await api.call_api(
                    SECRETS.path("ns", "s", "status"),
                    "PATCH",
                    query_params=[("fieldManager", "m")],
                    header_params={"Accept": "application/json", "Content-Type": PatchType.MERGE.value},
                    body=body,
                    auth_settings=["BearerToken"],
                    _preload_content=False,
                    _return_http_data_only=True,
                    _request_timeout=DEFAULT_TIMEOUT,
                )
        finally:
            api.rest_client.pool_manager = session
    ours, theirs = sent
    assert json.loads(ours.pop("data")) == json.loads(theirs.pop("data")) == body
    assert ours == theirs
    assert ours["headers"] == {
        "Accept": "application/json",
        "Content-Type": "application/merge-patch+json",
        "User-Agent": api.default_headers["User-Agent"],
        "authorization": "Bearer t0ken",
    }


class Key(enum.StrEnum):
    READY = "Ready"


@pytest.mark.parametrize(
    "body",
    [
        {"status": {"conditions": [{"type": "Ready", "status": "True"}], "gone": None, "n": 2}},
        {"message": "compte créé ✓", "list": [1, 2.5, True, False]},
        {Key.READY: "a key orjson refuses: through json.dumps"},
        {"big": 2**70},
        {
            "at": datetime.datetime(2026, 11, 29, 16, 0, 1, 5, tzinfo=datetime.UTC),
            "on": datetime.date(2026, 1, 2),
        },
        {"model": client.V1ObjectMeta(name="n", labels={"a": "b"})},
        [{"op": "test", "path": "/metadata/resourceVersion", "value": "7"}],
    ],
)
async def test_bodies_encode_to_what_call_api_sends(body: object) -> None:
    async with api_client(configuration()) as api:
        assert json.loads(_encode(body, api)) == json.loads(json.dumps(api.sanitize_for_serialization(body)))


def test_responses_decode_as_json_does() -> None:
    text = '{"kind":"Status","code":404,"details":{"name":"ü","causes":[]},"x":null,"f":1.5,"t":true}'
    assert decode(text.encode()) == json.loads(text)


class Server:
    """A plain HTTP server on localhost that answers ``{}`` and counts the requests that reach it."""

    def __init__(self) -> None:
        self.methods: list[str] = []

    async def _answer(self, request: web.Request) -> web.Response:
        self.methods.append(request.method)
        return web.json_response({})

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[str]:
        app = web.Application()
        app.router.add_route("*", "/{path:.*}", self._answer)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        try:
            yield f"http://127.0.0.1:{runner.addresses[0][1]}"
        finally:
            await runner.cleanup()


class ClosesOnCall:
    """A fence check that passes ``passes`` times, then refuses."""

    def __init__(self, passes: int) -> None:
        self.passes = passes
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1
        if self.calls > self.passes:
            raise FenceLost("closed meanwhile")


@pytest.mark.parametrize("reused", [False, True], ids=["new connection", "reused connection"])
async def test_a_write_is_checked_again_once_it_has_its_connection(reused: bool) -> None:
    """The fence closing while a write waits for its connection stops the write before anything is sent,
    on a new connection and on one the session reuses."""
    server = Server()
    async with server.running() as host, api_client(configuration(host)) as api:
        if reused:
            await KubeClient(api).get(SECRETS, "s", "ns")  # opens the connection the write reuses
        check = ClosesOnCall(passes=1)  # the check before the request passes, the one after connecting not
        with pytest.raises(FenceLost):
            await KubeClient(api, before_write=check).create(SECRETS, {}, "ns")
        assert check.calls == 2
        await KubeClient(api, before_write=ClosesOnCall(passes=2)).create(SECRETS, {}, "ns")
    assert server.methods == ["GET", "POST"] if reused else ["POST"]
