"""A small JSON client for any resource: the one place the runtime sends API requests from.

kubernetes-asyncio's generated APIs are one class per group and default to JSON Patch for dict bodies;
this client speaks plain JSON for every resource, always bounds a request by a timeout, names the patch
type explicitly, and counts requests (``rest_client_requests_total``) so API economy can be measured.
It sends on the ``ApiClient``'s aiohttp session itself, with the URL, headers and credentials ``call_api``
would use: ``call_api``'s generic work (walking the body to sanitise it, the header and parameter tuples,
the content-type regex) was about a tenth of the client's CPU per request, and the body is plain JSON here.
Failures are typed (``runtime.errors``): an error status raises ``NotFound``, ``Conflict``, ``Gone``, … and
a timeout or a connection error ``Unavailable``.
A client made with ``before_write`` (a fence's ``check``) calls it before every request that is not a GET,
and again once the request has its connection, right before its headers are serialised (the session's
request class, :class:`_FencedRequest`: connecting may take a while, and the process may pause meanwhile),
so a replica that cannot prove its lease sends no write (see :mod:`.fence`). On Python < 3.12 aiohttp sends
a request's body from a task that runs one loop iteration after that check: a pause landing there sends the
write on resume, where only a precondition (``resourceVersion``) refuses it. (aiohttp's trace hooks did the
second check before; with a trace configured, aiohttp builds a trace context and awaits a signal at each
step of every request and for each chunk: 2 % of the operator's CPU.)
"""

from __future__ import annotations

import contextvars
import enum
import json
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import aiohttp
import orjson
from aiohttp.connector import Connection
from kubernetes_asyncio import client
from prometheus_client import Counter

from dbuser_operator.runtime.errors import ApiError, Forbidden, Gone, Unavailable, api_error
from dbuser_operator.runtime.metrics import REGISTRY
from dbuser_operator.runtime.permissions import WriteDenials
from dbuser_operator.runtime.resources import Resource

DEFAULT_TIMEOUT = 30.0
_READ_BUFFER = 2**21  # as kubernetes-asyncio sets it: one watch event may be a 1.5 MiB object

REQUESTS = Counter(
    "rest_client_requests_total",
    "Number of HTTP requests to the API server, partitioned by method and status code",
    ["method", "code"],
    registry=REGISTRY,
)


def _counted(method: str, code: str) -> Counter:
    """``REQUESTS``'s child for ``method`` and ``code``, looked up once (``labels`` locks and validates)."""
    child = _COUNTERS.get((method, code))
    if child is None:
        child = _COUNTERS[method, code] = REQUESTS.labels(method, code)
    return child


_COUNTERS: dict[tuple[str, str], Counter] = {}

Items = list[dict[str, Any]]  # a list's items (a name, as ``KubeClient.list`` shadows ``list``)

# The check of the write under way in this task, for the request once it has a connection.
_BEFORE_SEND: contextvars.ContextVar[Callable[[], None] | None] = contextvars.ContextVar(
    "before_send", default=None
)


class _FencedRequest(aiohttp.ClientRequest):
    """A request that calls the current write's check once it has its connection (new or reused), right
    before aiohttp serialises its headers and sends it: nothing between the check and the send yields to
    the event loop."""

    async def send(self, conn: Connection) -> aiohttp.ClientResponse:
        check = _BEFORE_SEND.get()
        if check is not None:
            check()
        return await super().send(conn)


def api_client(configuration: client.Configuration) -> client.ApiClient:
    """A kubernetes-asyncio ``ApiClient`` that reads the proxy environment once, not on every request.

    kubernetes-asyncio opens its aiohttp session with ``trust_env=True``: each request then looks up
    ``~/.netrc`` and the proxy variables in a worker thread. Here the proxy for the API server is taken
    from ``HTTPS_PROXY``/``NO_PROXY`` (or ``configuration.proxy``) up front, and the session is replaced by
    one on the same connector that does not look again. Call from a coroutine.
    """
    if configuration.proxy is None:
        configuration.proxy = environment_proxy(str(configuration.host))
    api = client.ApiClient(configuration)
    rest = api.rest_client
    connector = rest.pool_manager.connector
    rest.pool_manager.detach()
    rest.pool_manager = aiohttp.ClientSession(
        connector=connector, trust_env=False, read_bufsize=_READ_BUFFER, request_class=_FencedRequest
    )
    return api


def environment_proxy(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``HTTPS_PROXY`` … minus ``NO_PROXY``), if any."""
    parts = urllib.parse.urlsplit(url)
    if urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    return urllib.request.getproxies().get(parts.scheme)


class PatchType(enum.StrEnum):
    """The content types of PATCH."""

    JSON = "application/json-patch+json"
    MERGE = "application/merge-patch+json"
    STRATEGIC = "application/strategic-merge-patch+json"
    APPLY = "application/apply-patch+yaml"


class KubeClient:
    """JSON requests to the API server through a kubernetes-asyncio ``ApiClient``."""

    def __init__(
        self,
        api: client.ApiClient,
        timeout: float = DEFAULT_TIMEOUT,
        *,
        before_write: Callable[[], None] | None = None,
        denials: WriteDenials | None = None,
    ) -> None:
        self.api = api
        self.timeout = timeout
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self.before_write = before_write
        self.denials = denials if denials is not None else WriteDenials()  # shared by fenced copies

    def fenced(self, before_write: Callable[[], None]) -> KubeClient:
        """A client on the same connection that calls ``before_write`` before each write."""
        return KubeClient(self.api, self.timeout, before_write=before_write, denials=self.denials)

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        """One object."""
        return await self.request("GET", resource.path(namespace, name))

    async def list(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        resource_version: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        field_selector: str | None = None,
    ) -> dict[str, Any]:
        """One page of a list."""
        query = _query(
            labelSelector=label_selector,
            fieldSelector=field_selector,
            resourceVersion=resource_version,
            limit=limit,
            **{"continue": continue_token},
        )
        return await self.request("GET", resource.path(namespace), query=query)

    async def list_all(
        self,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        page_size: int = 500,
    ) -> tuple[Items, str]:
        """Every page of a list: its items and resourceVersion. An expired continue token starts over."""
        items: Items = []
        continue_token: str | None = None
        while True:
            try:
                page = await self.list(
                    resource,
                    namespace,
                    label_selector=label_selector,
                    limit=page_size,
                    continue_token=continue_token,
                )
            except Gone:
                if not continue_token:
                    raise
                items, continue_token = [], None
                continue
            items += page.get("items") or []
            continue_token = page["metadata"].get("continue") or None
            if not continue_token:
                return items, page["metadata"]["resourceVersion"]

    async def watch(
        self,
        resource: Resource,
        namespace: str | None,
        *,
        resource_version: str | None,
        timeout_seconds: int,
        label_selector: str | None = None,
        field_selector: str | None = None,
        initial_events: bool = False,
    ) -> aiohttp.ClientResponse:
        """Open a watch stream with bookmarks; the caller reads its lines and closes it.

        The request itself has no total timeout (the server ends the watch after ``timeout_seconds``);
        the caller bounds each read instead, which is how a half-open connection is detected. With
        ``initial_events`` (and no ``resource_version``: a consistent read) the stream starts with every
        current object as an ADDED event, then a bookmark annotated ``k8s.io/initial-events-end`` (the
        API server's WatchList; a server without it refuses the request as invalid).
        """
        query = _query(
            watch="true",
            allowWatchBookmarks="true",
            resourceVersion=resource_version,
            timeoutSeconds=timeout_seconds,
            labelSelector=label_selector,
            fieldSelector=field_selector,
            sendInitialEvents="true" if initial_events else None,
            resourceVersionMatch="NotOlderThan" if initial_events else None,
        )
        try:
            response = await self._send(
                "GET",
                resource.path(namespace),
                query=query,
                headers={"Accept": "application/json"},
                data=None,
                bounds=aiohttp.ClientTimeout(total=None, connect=self.timeout, sock_connect=self.timeout),
            )
        except (aiohttp.ClientError, TimeoutError) as error:
            _counted("WATCH", "error").inc()
            raise _unavailable(error) from error
        _counted("WATCH", str(response.status)).inc()
        if response.status != 200:
            async with response:
                raise _api_exception(response, await response.read())
        return response

    async def create(
        self, resource: Resource, body: Mapping[str, Any], namespace: str | None = None
    ) -> dict[str, Any]:
        """Create an object."""
        return await self.request("POST", resource.path(namespace), body=body)

    async def replace(
        self,
        resource: Resource,
        name: str,
        body: Mapping[str, Any],
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """Replace an object (PUT); ``metadata.resourceVersion`` in the body makes it conditional."""
        return await self.request("PUT", resource.path(namespace, name, subresource), body=body)

    async def patch(
        self,
        resource: Resource,
        name: str,
        patch: Any,
        patch_type: PatchType,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
        field_manager: str | None = None,
    ) -> dict[str, Any]:
        """Patch an object (or its ``subresource``, e.g. ``status``) with an explicit patch type."""
        query = _query(fieldManager=field_manager)
        return await self.request(
            "PATCH",
            resource.path(namespace, name, subresource),
            body=patch,
            query=query,
            content_type=patch_type.value,
        )

    async def delete(self, resource: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        """Delete an object."""
        return await self.request("DELETE", resource.path(namespace, name))

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]] = (),
        body: Any = None,
        content_type: str = "application/json",
    ) -> dict[str, Any]:
        """One request; the response's JSON. Raises an ``ApiError`` (``runtime.errors``) on any failure.

        Before a write, ``before_write`` (if set) may raise to refuse it: nothing is sent then.
        """
        check = self.before_write if method != "GET" else None
        if check is not None:
            check()
        before_send = _BEFORE_SEND.set(check)
        code = "error"
        try:
            response = await self._send(
                method,
                path,
                query=query,
                headers={"Accept": "application/json", "Content-Type": content_type},
                data=None if body is None or method == "GET" else _encode(body, self.api),
                bounds=self._timeout,
            )
            code = str(response.status)
            async with response:
                content = await response.read()
                if not 200 <= response.status <= 299:
                    error = _api_exception(response, content)
                    if method != "GET" and isinstance(error, Forbidden):
                        self.denials.refused(method, path, error)
                    raise error
            if method != "GET":
                self.denials.succeeded(method, path)
            data: dict[str, Any] = decode(content)
            return data
        except (aiohttp.ClientError, TimeoutError) as error:
            raise _unavailable(error) from error
        finally:
            _BEFORE_SEND.reset(before_send)
            _counted(method, code).inc()

    async def _send(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]],
        headers: dict[str, str],
        data: bytes | None,
        bounds: aiohttp.ClientTimeout,
    ) -> aiohttp.ClientResponse:
        """Send one request on the ``ApiClient``'s session, as its ``call_api`` would, minus its generic work.

        The same URL, headers (``default_headers``, the cookie, the configuration's credentials, refreshed
        as it refreshes them), proxy and TLS server name; the body already encoded (:func:`_encode`), the
        response not read.
        """
        api = self.api
        rest = api.rest_client
        headers.update(api.default_headers)
        if api.cookie:
            headers["Cookie"] = api.cookie
        setting = (await api.configuration.auth_settings()).get("BearerToken")
        if setting:
            _authorise(headers, setting)
        url = f"{api.configuration.host}{path}"
        if query:
            url += "?" + urllib.parse.urlencode(query)
        options: dict[str, Any] = {}
        if rest.proxy:
            options["proxy"] = rest.proxy
        if rest.proxy_headers:
            options["proxy_headers"] = rest.proxy_headers
        if rest.server_hostname:
            options["server_hostname"] = rest.server_hostname
        response: aiohttp.ClientResponse = await rest.pool_manager.request(
            method, url, headers=headers, data=data, timeout=bounds, **options
        )
        return response


def _api_exception(response: aiohttp.ClientResponse, content: bytes) -> ApiError:
    """The typed error for an error status, with the server's Status as body."""
    return api_error(response.status, response.reason, content, response.headers)


def _unavailable(error: aiohttp.ClientError | TimeoutError) -> Unavailable:
    """No answer: the request timed out or the connection failed."""
    return Unavailable(None, f"{type(error).__name__}: {error}" if str(error) else type(error).__name__)


def _query(**parameters: object) -> list[tuple[str, str]]:
    return [(key, str(value)) for key, value in parameters.items() if value is not None]


def _authorise(headers: dict[str, str], setting: Mapping[str, Any]) -> None:
    """Put one of the configuration's credentials (``auth_settings``) in the request, as ``call_api`` does."""
    if setting["in"] == "header" and setting.get("value"):
        headers[setting["key"]] = setting["value"]
    elif setting["in"] == "cookie" and setting.get("value"):
        headers["Cookie"] = setting["value"]


def decode(content: bytes) -> Any:
    """A response body or watch line (JSON as the API server writes it: UTF-8, integers within 64 bits)."""
    return orjson.loads(content)


def _encode(body: Any, api: client.ApiClient) -> bytes:
    """A request body as compact JSON. Anything but JSON's own types (dates, kubernetes-asyncio models)
    becomes what ``call_api`` makes of it (``sanitize_for_serialization``). A body orjson refuses (a key
    that is no ``str``, an integer beyond 64 bits) goes through ``json.dumps``, as before. (A float NaN,
    which ``json.dumps`` writes as ``NaN``, not JSON, becomes ``null``: the operator writes no floats.)"""
    sanitize = api.sanitize_for_serialization
    try:
        return orjson.dumps(body, default=sanitize, option=orjson.OPT_PASSTHROUGH_DATETIME)
    except orjson.JSONEncodeError:
        return json.dumps(body, separators=(",", ":"), default=sanitize).encode()
