"""The typed API errors: which class a status gets, what they show, and that old handlers still catch them."""

from __future__ import annotations

import json

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from dbuser_operator.runtime.errors import (
    ApiError,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
    Unavailable,
    api_error,
    describe,
)


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (400, Invalid),
        (401, Forbidden),
        (403, Forbidden),
        (404, NotFound),
        (405, ApiError),
        (409, Conflict),
        (410, Gone),
        (422, Invalid),
        (429, Unavailable),
        (500, Unavailable),
        (503, Unavailable),
        (504, Unavailable),
        (None, Unavailable),
    ],
)
def test_each_status_gets_its_class(status: int | None, cls: type[ApiError]) -> None:
    error = api_error(status, "Reason")
    assert type(error) is cls
    assert isinstance(error, ApiException)  # code that still catches ApiException keeps working
    assert error.status == status
    assert error.reason == "Reason"


def test_str_is_the_status_and_the_servers_message_never_headers_or_body() -> None:
    body = json.dumps(
        {
            "kind": "Status",
            "code": 404,
            "reason": "NotFound",
            "message": 'secrets "db" not found',
            "details": {"name": "db", "kind": "secrets"},
        }
    ).encode()
    error = api_error(404, "Not Found", body, {"Audit-Id": "abc", "Authorization": "Bearer x"})
    assert str(error) == '404 Not Found: secrets "db" not found'
    assert error.body == body
    assert error.message == 'secrets "db" not found'
    assert "Audit-Id" not in str(error)
    assert "Bearer" not in str(error)
    assert str(api_error(500, "Internal Server Error", b"<html>oops</html>")) == "500 Internal Server Error"
    assert str(Unavailable(None, "ServerDisconnectedError")) == "ServerDisconnectedError"


def test_describe() -> None:
    assert describe(api_error(409, "Conflict")) == "Conflict: 409 Conflict"
    assert describe(ApiException(status=404, reason="Not Found")) == "ApiException: 404 Not Found"
    assert describe(KeyError("x")) == "KeyError: 'x'"
    assert describe(KeyError("x"), detail=False) == "KeyError"
    assert describe(RuntimeError()) == "RuntimeError"


def test_describe_names_the_one_exception_of_a_group() -> None:
    group = ExceptionGroup("unhandled errors in a TaskGroup", [KeyError("x")])
    assert describe(group, detail=False) == "KeyError"
    assert describe(ExceptionGroup("two", [KeyError(), ValueError()]), detail=False) == "ExceptionGroup"
